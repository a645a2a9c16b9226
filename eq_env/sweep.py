"""Moved to :mod:`eq_env.core.sweep` (sweeps over any game); this name stays for the code that imports it from
here."""

from eq_env.core.sweep import *  # noqa: F403
from eq_env.core.sweep import __all__ as __all__
