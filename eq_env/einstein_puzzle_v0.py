"""The collaborative Einstein puzzle, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.einstein_puzzle.env` (also this
module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.core.numeric import with_observation_mode
from eq_env.core.wrappers import OrderEnforcingWrapper
from eq_env.einstein_puzzle.env import EinsteinPuzzleParallelEnv
from eq_env.einstein_puzzle.env import __doc__ as __doc__
from eq_env.einstein_puzzle.env import raw_env as text_raw_env

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env", "text_raw_env"]

ID = "eq_env/einstein-puzzle-v0"


def env(*args: Any, **kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment in PettingZoo's order-enforcing wrapper (see :class:`OrderEnforcingWrapper`).

    Keyword arguments are those of :class:`raw_env`: ``config``, ``preset``, ``render_mode`` and any
    configuration field (``n=6``, ``comm_mode="seek_only"``…). Actions are checked by the environment
    itself: an index outside the action space is a ValueError naming the agent.
    """
    return OrderEnforcingWrapper(raw_env(*args, **kwargs))


def parallel_env(*args: Any, **kwargs: Any) -> Any:
    """The parallel-API environment (one step per turn: the acting agent's action is played); same arguments
    as :func:`env`."""
    return with_observation_mode(ID, EinsteinPuzzleParallelEnv, True, args, kwargs)


def raw_env(*args: Any, **kwargs: Any) -> Any:
    """The AEC environment without the order-enforcing wrapper: ``text_raw_env`` (the class) itself, or, with
    ``observation_mode="numeric"``, :class:`~eq_env.core.numeric.NumericModeEnv` around it.

    Every maker of this module takes ``observation_mode`` (``"text"`` or ``"numeric"``):
    :func:`eq_env.core.numeric.with_observation_mode`."""
    return with_observation_mode(ID, text_raw_env, False, args, kwargs)
