"""Moved to :mod:`eq_env.baselines.exchange_audit.scripted`; this name stays for the code that imports it from here."""

from eq_env.baselines.exchange_audit.scripted import *  # noqa: F403
from eq_env.baselines.exchange_audit.scripted import __all__ as __all__
