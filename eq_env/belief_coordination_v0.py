"""Belief coordination, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.belief_coordination.env` (also this module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.belief_coordination.env import BeliefCoordinationParallelEnv, raw_env
from eq_env.belief_coordination.env import __doc__ as __doc__
from eq_env.core.wrappers import OrderEnforcingWrapper

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env"]


def env(**kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment (PettingZoo's standard conversion of the parallel one) in the order-enforcing wrapper.

    Keyword arguments are those of :func:`parallel_env`. An action outside the acting agent's space is a
    ValueError naming the agent, when it is given.
    """
    return OrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> BeliefCoordinationParallelEnv:
    """The parallel environment: ``config``, ``preset``, ``render_mode``, ``answerer``, ``questions`` and any
    configuration field (``n_executors=5``, ``action_space="grid"``...)."""
    return BeliefCoordinationParallelEnv(**kwargs)
