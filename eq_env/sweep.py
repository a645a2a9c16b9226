"""Moved to :mod:`eq_env.core.sweep` (sweeps over any game); this name stays for the code that imports it from
here."""

from eq_env.core.spec import env_spec
from eq_env.core.sweep import *  # noqa: F403
from eq_env.core.sweep import __all__ as _core_all

DEFAULT_PLOT_METRICS = env_spec("exchange-audit").plot_metrics  # the exchange–audit game's
__all__ = [*_core_all, "DEFAULT_PLOT_METRICS"]
