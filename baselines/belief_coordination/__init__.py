"""Scripted baselines of belief coordination, registered as its named policies.

=============  ============  ===================================================================
name           role          policy
=============  ============  ===================================================================
``fixed``      executor      :class:`FixedExecutor`: the same (T, p) always (``fixed:temperature=0.7,penalty=1.1``)
``random``     executor      :class:`RandomExecutor`: (T, p) uniformly at random per question
``schedule``   executor      :class:`ScheduleExecutors` (joint): executor i at the i-th of N temperatures
``econ``       executor      :class:`~eq_env.baselines.belief_coordination.econ.ECON` (joint): the learned beliefs
``majority``   coordinator   :class:`MajorityCoordinator`: the most common number
``first``      coordinator   :class:`FirstCoordinator`: executor 0's answer (single-agent baseline)
``random``     coordinator   :class:`RandomCoordinator`: a random executor's number
``rllib``      both          an RLlib training's module (``rllib:path=DIR``; eq-env train --backend rllib)
``torchrl``    both          a TorchRL MAPPO training's actor (``torchrl:path=DIR``; the ``compat`` extra,
                             :class:`~eq_env.baselines.torchrl.TorchRLPolicy`)
``sb3``        executor      an executor trained on the single-agent view (``sb3:path=DIR``; eq-env train --backend
                             sb3, :mod:`~eq_env.baselines.belief_coordination.rl`)
=============  ============  ===================================================================
"""

from typing import Any

from eq_env.baselines.belief_coordination.scripted import (
    FirstCoordinator,
    FixedExecutor,
    MajorityCoordinator,
    RandomCoordinator,
    RandomExecutor,
    ScheduleExecutors,
)
from eq_env.baselines.rllib import rllib_policy_for
from eq_env.baselines.torchrl import torchrl_policy_for
from eq_env.belief_coordination.spec import ID
from eq_env.core.policy import REQUIRED, register_policy

__all__ = [
    "FirstCoordinator",
    "FixedExecutor",
    "MajorityCoordinator",
    "RandomCoordinator",
    "RandomExecutor",
    "ScheduleExecutors",
]


def sb3(path: str, deterministic: bool = True) -> Any:  # (torch loads only when used)
    """An executor trained with eq-env train --env belief-coordination --backend sb3, loaded from its directory."""
    from eq_env.baselines.belief_coordination.rl import sb3_policy

    return sb3_policy(path, deterministic)


def econ(path: str = REQUIRED) -> ScheduleExecutors:  # (an ECON: typed loosely so that torch loads only when used)
    """ECON's learned executors (a joint policy), loaded from the directory ``eq-env train`` wrote."""
    from eq_env.baselines.belief_coordination.econ import econ as load

    return load(path)  # type: ignore[return-value]


register_policy("econ", "executor", econ, env=ID)
register_policy("sb3", "executor", sb3, env=ID)
for _name, _cls in (
    ("fixed", FixedExecutor),
    ("random", RandomExecutor),
    ("schedule", ScheduleExecutors),
    ("majority", MajorityCoordinator),
    ("first", FirstCoordinator),
    ("random", RandomCoordinator),
):
    register_policy(_name, _cls.role, _cls, env=ID)
for _role in ("executor", "coordinator"):
    register_policy("rllib", _role, rllib_policy_for(_role), env=ID)
    register_policy("torchrl", _role, torchrl_policy_for(_role), env=ID)
