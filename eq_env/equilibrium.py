"""Moved to :mod:`eq_env.exchange_audit.equilibrium`; this name stays for the code and documentation that import it
from here."""

from eq_env.exchange_audit.equilibrium import *  # noqa: F403
from eq_env.exchange_audit.equilibrium import __all__ as __all__
