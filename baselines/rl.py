"""The exchange–audit game's RL baselines (:mod:`eq_env.baselines.exchange_audit.rl`: ``train``, ``selfplay``,
``SB3Policy``); the generic SB3 plumbing is :mod:`eq_env.baselines.sb3`. This name stays for the code and
documentation that import it from here."""

from eq_env.baselines.exchange_audit.rl import *  # noqa: F403
from eq_env.baselines.exchange_audit.rl import __all__ as __all__
from eq_env.baselines.exchange_audit.rl import _hyperparameters as _hyperparameters  # (benchmarks/rl_training.py)
