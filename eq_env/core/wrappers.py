"""The standard wrapper of every game's versioned ``env()``: PettingZoo's order enforcing, with clear errors
for calls out of order and unknown agents, and without its forwarding cost on the hot path."""

from __future__ import annotations

from typing import Any

from pettingzoo.utils import wrappers
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

from eq_env.core.api import before_reset, checked_agent

__all__ = ["OrderEnforcingWrapper"]


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper, with clear errors for calls out of order and unknown agents.

    PettingZoo's wrapper answers a call before ``reset()`` with an AttributeError about ``agent_selection``
    (``last()``) or a bare AssertionError (``observe()``, ``step()``, ``state()``, ``render()``), and
    ``last()`` once the episode is over with a KeyError; an unknown agent reaches the environment's own
    lookups. Here, whatever the game: ``observe()``, ``last()``, ``state()`` and ``step()`` before the
    first successful ``reset()`` raise a RuntimeError saying to call it (a ``reset()`` the game refuses
    counts as none); ``last()`` after every agent is done says the episode is over; an agent that is not
    one of ``possible_agents`` in ``observation_space``, ``action_space`` or ``observe`` is an
    :class:`~eq_env.core.api.UnknownAgentError` naming it; ``render()`` is the game's (each renders "no
    game yet" before a reset). ``agents`` and ``agent_selection``, read by ``agent_iter`` every step, and a
    step in a running episode go straight to the environment, with the wrapper's checks (PettingZoo's
    ``__getattr__`` forwarding costs more than a short turn should). Everything else (a step after the
    end warns, as in PettingZoo) is PettingZoo's wrapper as is.
    """

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(checked_agent(agent, self.env.possible_agents))

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(checked_agent(agent, self.env.possible_agents))

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
        if not self._has_reset:
            raise before_reset("last()")
        if not self.env.agents:  # (every agent has stepped out: AECEnv.last would fail on a KeyError)
            raise RuntimeError("the episode is over (every agent is done); call reset() to start the next one")
        return self.env.last(observe)  # type: ignore[no-any-return]

    def observe(self, agent: str) -> Any:
        agent = checked_agent(agent, self.env.possible_agents)
        if not self._has_reset:
            raise before_reset("observe()")
        return self.env.observe(agent)

    def step(self, action: Any) -> None:
        env = self.env
        if not self._has_reset:
            raise before_reset("step()")
        if env.agents:  # (what PettingZoo's wrapper does here, without its layers)
            self._has_updated = True
            env.step(action)
        else:
            super().step(action)  # (after the last agent's step: PettingZoo's warning, as usual)

    def state(self) -> Any:
        if not self._has_reset:
            raise before_reset("state()")
        return self.env.state()

    def render(self) -> Any:
        return self.env.render()

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        # (PettingZoo's reset, without its two layers of super(); a reset the game refuses is no reset)
        self.env.reset(seed=seed, options=options)
        self._has_reset = True
        self._has_updated = True

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        if not self._has_reset:
            raise before_reset("agent_iter()")
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
