"""The exchange–audit game, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.exchange_audit.env` (also this
module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils import wrappers

from eq_env.exchange_audit.env import ExchangeAuditParallelEnv, raw_env
from eq_env.exchange_audit.env import __doc__ as __doc__

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env"]


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper, with the environment's own errors for calls out of order.

    Before ``reset()`` the wrapper's checks would fire first, with an AttributeError about
    ``agent_selection`` from ``last()`` and AssertionErrors from ``observe()``, ``step()`` and
    ``state()``; once the episode is over its ``last()`` would fail on a KeyError. The raw environment
    checks all of these itself and says to call ``reset()``, so these calls go straight to it (the
    wrapper changes no observation). Everything else is PettingZoo's wrapper as is.
    """

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.env.last(observe)

    def observe(self, agent: str) -> Any:
        return self.env.observe(agent) if not self._has_reset else super().observe(agent)

    def step(self, action: Any) -> None:
        if not self._has_reset:
            self.env.step(action)  # (refuses: call reset() first)
        else:
            super().step(action)  # (after the last agent's step: PettingZoo's warning, as usual)

    def state(self) -> Any:
        return self.env.state() if not self._has_reset else super().state()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        if not self._has_reset:
            raise RuntimeError("call reset() before agent_iter()")
        return super().agent_iter(max_iter)


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
