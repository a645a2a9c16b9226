"""The checks of the PettingZoo API's arguments that every game's adapters share.

A game refuses what it does not take, with one clear line naming the agent, the seed, the option or the
expected form — never a raw ``KeyError``/``TypeError`` from a lookup, never a silent acceptance. These
functions give the games one wording for it::

    agent = checked_agent(agent, self.possible_agents)           # observation_space, action_space, observe
    seed = checked_seed(seed)                                     # reset
    episode = checked_episode(checked_options(options, config=MyConfig))
    actions = checked_actions(actions, self.agents, acting)       # the parallel step

Every refusal is a ``ValueError`` (an unknown agent is an :class:`UnknownAgentError`, also a ``KeyError``
for dict-like lookups); :func:`before_reset` is the ``RuntimeError`` of a call made before ``reset()``.
:func:`eq_env.core.conformance.fuzz_api` checks every registered game against these promises.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "PETTINGZOO_PROBE",
    "UnknownAgentError",
    "before_reset",
    "checked_actions",
    "checked_agent",
    "checked_episode",
    "checked_options",
    "checked_seed",
]

# PettingZoo's api tests call reset(options={"options": 1}) to check that reset takes options: accepted, ignored
PETTINGZOO_PROBE = "options"


class UnknownAgentError(KeyError, ValueError):
    """An agent name the environment does not have (a KeyError for dict-like lookups, a ValueError for bad
    input); its message is plain text, not a repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def checked_agent(agent: Any, agents: Collection[str]) -> str:
    """``agent`` if it is one of ``agents``, else an :class:`UnknownAgentError` naming it and them (an
    unhashable or non-string name too)."""
    try:
        known = isinstance(agent, str) and agent in agents
    except TypeError:  # (an unhashable name, against a set)
        known = False
    if not known:
        raise UnknownAgentError(f"unknown agent {agent!r}; agents: {', '.join(agents)}")
    return str(agent)


def _non_negative_int(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        return None
    return int(value)


def checked_seed(seed: Any) -> int | None:
    """``seed`` as a plain int (None stays None), else a ValueError: a seed is a non-negative integer (not a
    bool, a float, a string or an array)."""
    if seed is None:
        return None
    value = _non_negative_int(seed)
    if value is None:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return value


def checked_options(options: Any, allowed: Sequence[str] = ("episode",), *, config: Any = None) -> dict[str, Any]:
    """``reset``'s ``options`` as a dict (``{}`` for None), else a ValueError: not a dict, or a key that is
    not one of ``allowed`` (PettingZoo's probe ``"options"`` aside) — with a hint when the key is a field of
    the game's configuration class ``config`` (a game parameter is set when the environment is made)."""
    taken = ", ".join(map(repr, allowed))
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(
            f"options must be a dict (or None), got {type(options).__name__} {options!r}; reset takes {taken}"
        )
    for key in options:
        if key not in allowed and key != PETTINGZOO_PROBE:
            hint = ""
            if config is not None and key in config.field_names():
                hint = f" ({key} is a game parameter: make an environment with {key}=...)"
            raise ValueError(f"unknown reset option {key!r}; reset takes {taken}{hint}")
    return dict(options)


def checked_episode(options: Mapping[str, Any], limit: int | None = None) -> int | None:
    """The ``"episode"`` of checked ``options`` (None if absent), else a ValueError: a non-negative integer,
    below ``limit`` when the game has one."""
    if "episode" not in options:
        return None
    index = options["episode"]
    value = _non_negative_int(index)
    if value is None or (limit is not None and value >= limit):
        bound = f" below {limit:,}" if limit is not None else ""
        raise ValueError(f"options['episode'] must be a non-negative integer{bound}, got {index!r}")
    return value


def checked_actions(actions: Any, agents: Collection[str], acting: Sequence[str]) -> Mapping[str, Any]:
    """A parallel ``step``'s ``actions``: a dict agent → action, keyed only by ``agents`` (those in play) and
    holding an action (not None) for each of ``acting``; else a ValueError naming what is wrong. (Each
    action's own check is the game's.)"""
    if not isinstance(actions, Mapping):
        raise ValueError(
            f"actions must be a dict agent -> action (agents: {', '.join(agents)}), got {type(actions).__name__}"
        )
    unknown = []
    for key in actions:
        try:
            known = isinstance(key, str) and key in agents
        except TypeError:
            known = False
        if not known:
            unknown.append(repr(key))
    if unknown:
        raise ValueError(f"actions for agents not in this game: {', '.join(unknown)}; agents: {', '.join(agents)}")
    missing = [a for a in acting if actions.get(a) is None]
    if missing:
        raise ValueError(f"no action for {', '.join(missing)} (acting this step)")
    return actions


def before_reset(call: str) -> RuntimeError:
    """The error of ``call`` (``"observe()"``...) made before the first ``reset()``."""
    return RuntimeError(f"call reset() before {call}: env.reset(seed=...) starts an episode")
