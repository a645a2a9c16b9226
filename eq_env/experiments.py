"""Moved to :mod:`eq_env.core.experiments` (conditions, resumable runs and results, for any game); this name
stays for the code that imports it from here."""

from eq_env.core.experiments import *  # noqa: F403
from eq_env.core.experiments import __all__ as __all__
