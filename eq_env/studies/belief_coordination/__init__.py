"""Belief coordination's commands and experiments (the game itself is :mod:`eq_env.belief_coordination`).

:mod:`.reproduce` (``eq-env reproduce --env belief-coordination``: ECON's claims against the three falsifiers,
with :mod:`.verdicts`) and :mod:`.train` (``eq-env train --env belief-coordination``); :mod:`.bench` holds the
game's task of ``eq-env bench``. :data:`COMMANDS` is what the CLI lists; :func:`describe_config` and
:func:`dry_run` are the game's hooks for the generic ``play``.
"""

from __future__ import annotations

from eq_env.agents.belief_coordination.dry_run import dry_run
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.studies.belief_coordination import reproduce, train

__all__ = ["COMMANDS", "describe_config", "dry_run"]

COMMANDS = [reproduce.COMMAND, train.COMMAND]


def describe_config(config: BeliefCoordinationConfig) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    c = config
    return (
        f"{c.n_executors} executors, {c.rounds} round(s), {c.action_space} actions, "
        f"difficulty {'mixed' if c.difficulty is None else c.difficulty}, "
        f"{'sensitive' if c.sensitive else 'insensitive (null)'} answerer"
    )
