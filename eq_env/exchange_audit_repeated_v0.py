"""The repeated exchange–audit game, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.exchange_audit.repeated.env` (also this module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.core.wrappers import OrderEnforcingWrapper
from eq_env.exchange_audit.repeated.env import RepeatedParallelEnv, raw_env
from eq_env.exchange_audit.repeated.env import __doc__ as __doc__

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env"]


def env(**kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment in PettingZoo's standard order-enforcing wrapper.

    Keyword arguments are those of :class:`raw_env`: ``config``, ``preset``, ``reward_mode``,
    ``render_mode`` and any field of the repeated game or of its stage game (``rounds=5``, ``q=0.3``…).
    """
    return OrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> RepeatedParallelEnv:
    """The parallel-API environment (two steps per round); same arguments as :func:`env`."""
    return RepeatedParallelEnv(**kwargs)
