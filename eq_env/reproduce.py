"""Moved to :mod:`eq_env.exchange_audit.reproduce`; this name stays for the code and documentation that import it
from here."""

from eq_env.exchange_audit.reproduce import *  # noqa: F403
from eq_env.exchange_audit.reproduce import __all__ as __all__
