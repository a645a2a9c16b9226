"""The collaborative Einstein puzzle, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.einstein_puzzle.env` (also this
module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.core.wrappers import OrderEnforcingWrapper
from eq_env.einstein_puzzle.env import EinsteinPuzzleParallelEnv, raw_env
from eq_env.einstein_puzzle.env import __doc__ as __doc__

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env"]


def env(**kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment in PettingZoo's order-enforcing wrapper (see :class:`OrderEnforcingWrapper`).

    Keyword arguments are those of :class:`raw_env`: ``config``, ``preset``, ``render_mode`` and any
    configuration field (``n=6``, ``comm_mode="seek_only"``…). Actions are checked by the environment
    itself: an index outside the action space is a ValueError naming the agent.
    """
    return OrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> EinsteinPuzzleParallelEnv:
    """The parallel-API environment (one step per turn: the acting agent's action is played); same arguments
    as :func:`env`."""
    return EinsteinPuzzleParallelEnv(**kwargs)
