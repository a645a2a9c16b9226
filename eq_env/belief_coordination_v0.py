"""Belief coordination, version 0: ``env()``, ``parallel_env()``, ``raw_env``.

The manual is the docstring of :mod:`eq_env.belief_coordination.env` (also this module's ``__doc__``).
"""

from __future__ import annotations

from typing import Any

from eq_env.belief_coordination.env import BeliefCoordinationParallelEnv
from eq_env.belief_coordination.env import __doc__ as __doc__
from eq_env.belief_coordination.env import raw_env as text_raw_env
from eq_env.core.numeric import with_observation_mode
from eq_env.core.wrappers import OrderEnforcingWrapper

__all__ = ["OrderEnforcingWrapper", "env", "parallel_env", "raw_env", "text_raw_env"]

ID = "eq_env/belief-coordination-v0"


def env(*args: Any, **kwargs: Any) -> OrderEnforcingWrapper:
    """The AEC environment (PettingZoo's standard conversion of the parallel one) in the order-enforcing wrapper.

    Keyword arguments are those of :func:`parallel_env`. An action outside the acting agent's space is a
    ValueError naming the agent, when it is given.
    """
    return OrderEnforcingWrapper(raw_env(*args, **kwargs))


def parallel_env(*args: Any, **kwargs: Any) -> Any:
    """The parallel environment: ``config``, ``preset``, ``render_mode``, ``answerer``, ``questions`` and any
    configuration field (``n_executors=5``, ``action_space="grid"``...)."""
    return with_observation_mode(ID, BeliefCoordinationParallelEnv, True, args, kwargs)


def raw_env(*args: Any, **kwargs: Any) -> Any:
    """The AEC environment without the order-enforcing wrapper: ``text_raw_env`` (the class) itself, or, with
    ``observation_mode="numeric"``, :class:`~eq_env.core.numeric.NumericModeEnv` around it.

    Every maker of this module takes ``observation_mode`` (``"text"`` or ``"numeric"``):
    :func:`eq_env.core.numeric.with_observation_mode`."""
    return with_observation_mode(ID, text_raw_env, False, args, kwargs)
