"""The exchange–audit game, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.exchange_audit.env` (also this
module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.core.wrappers import OrderEnforcingWrapper
from eq_env.exchange_audit.env import ExchangeAuditParallelEnv, raw_env
from eq_env.exchange_audit.env import __doc__ as __doc__

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env"]


def env(**kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment in PettingZoo's standard order-enforcing wrapper (see :class:`OrderEnforcingWrapper`).

    Keyword arguments are those of :class:`raw_env`: ``config``, ``preset``,
    ``reward_mode``, ``render_mode`` and any configuration field (``q=0.3``…).
    Actions are validated by the environment itself, which names the field
    that is out of its space.
    """
    return OrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> ExchangeAuditParallelEnv:
    """The parallel-API environment (two steps per episode); same arguments as :func:`env`."""
    return ExchangeAuditParallelEnv(**kwargs)
