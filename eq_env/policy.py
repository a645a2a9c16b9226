"""Moved to :mod:`eq_env.core.policy` (the policy interface and registry of every game); this name stays
for the code and documentation that import it from here."""

from eq_env.core.policy import *  # noqa: F403
from eq_env.core.policy import __all__ as _core_all

ROLES = ("proposer", "validator")  # the exchange–audit game's roles, as this module named them before
__all__ = [*_core_all, "ROLES"]
