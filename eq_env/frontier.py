"""Moved to :mod:`eq_env.exchange_audit.frontier`; this name stays for the code and documentation that import it
from here."""

from eq_env.exchange_audit.frontier import *  # noqa: F403
from eq_env.exchange_audit.frontier import __all__ as __all__
