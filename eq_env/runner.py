"""The exchange–audit game's runner (:mod:`eq_env.exchange_audit.runner`: ``play``, ``evaluate``... with
a proposer and a validator); the generic one, for any game, is :mod:`eq_env.core.runner`. This name stays
for the code and documentation that import it from here."""

from eq_env.exchange_audit.runner import *  # noqa: F403
from eq_env.exchange_audit.runner import __all__ as __all__
