"""The standard wrapper of every game's versioned ``env()``: PettingZoo's order enforcing, with the games' own
errors for calls out of order and without its forwarding cost on the hot path."""

from __future__ import annotations

from typing import Any

from pettingzoo.utils import wrappers
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

__all__ = ["OrderEnforcingWrapper"]


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper, with the environment's own errors for calls out of order.

    Before ``reset()`` the wrapper's checks would fire first, with an AttributeError about
    ``agent_selection`` from ``last()`` and AssertionErrors from ``observe()``, ``step()`` and
    ``state()``; once the episode is over its ``last()`` would fail on a KeyError. The raw environment
    checks all of these itself and says to call ``reset()``, so these calls go straight to it (the
    wrapper changes no observation). ``agents`` and ``agent_selection``, read by ``agent_iter`` every
    step, and a step in a running episode also go straight to the environment, with the wrapper's checks
    (PettingZoo's ``__getattr__`` forwarding costs more than a short turn should). Everything
    else is PettingZoo's wrapper as is.
    """

    @property
    def agents(self) -> list[str]:
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents  # type: ignore[no-any-return]

    @property
    def agent_selection(self) -> str:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection  # type: ignore[no-any-return]

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self.env.last(observe)

    def observe(self, agent: str) -> Any:
        return self.env.observe(agent) if not self._has_reset else super().observe(agent)

    def step(self, action: Any) -> None:
        env = self.env
        if not self._has_reset:
            env.step(action)  # (refuses: call reset() first)
        elif env.agents:  # (what PettingZoo's wrapper does here, without its layers)
            self._has_updated = True
            env.step(action)
        else:
            super().step(action)  # (after the last agent's step: PettingZoo's warning, as usual)

    def state(self) -> Any:
        return self.env.state() if not self._has_reset else super().state()

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        # (PettingZoo's reset, without its two layers of super())
        self._has_reset = True
        self._has_updated = True
        self.env.reset(seed=seed, options=options)

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        if not self._has_reset:
            raise RuntimeError("call reset() before agent_iter()")
        return _Iterable(self, max_iter)


class _Iterable(AECOrderEnforcingIterable):  # type: ignore[type-arg]
    """PettingZoo's order-enforcing ``agent_iter``, with the iterator below."""

    def __iter__(self) -> _Iterator:
        return _Iterator(self.env, self.max_iter)


class _Iterator(AECOrderEnforcingIterator):  # type: ignore[type-arg]
    """PettingZoo's order-enforcing iterator in one call per agent (the same checks, in the same order).

    It is made only after ``reset()``, when the wrapper's ``agents`` and ``agent_selection`` are the
    environment's, so it reads them there.
    """

    def __init__(self, env: OrderEnforcingWrapper, max_iter: int) -> None:
        # (AECOrderEnforcingIterator's, without its isinstance assertion: only OrderEnforcingWrapper makes one)
        self.env = env
        self.iters_til_term = max_iter

    def __next__(self) -> Any:
        wrapper = self.env
        env = wrapper.env
        if not env.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        agent = env.agent_selection
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return agent
