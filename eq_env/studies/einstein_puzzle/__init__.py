"""The Einstein puzzle's commands and experiments (the game itself is :mod:`eq_env.einstein_puzzle`).

:mod:`.train` (``eq-env train --env einstein-puzzle``), :mod:`.tools` (``eq-env einstein plan|demos|play``:
:mod:`.plan`, :mod:`.demos`, :mod:`.human`) and :mod:`.reproduce` (the paper's verifier and communication
experiments); :mod:`.bench` holds the game's tasks of ``eq-env bench``. :data:`COMMANDS` is what the CLI lists;
:func:`describe_config` and :func:`dry_run` are the game's hooks for the generic ``play``.
"""

from __future__ import annotations

from eq_env.agents.einstein_puzzle.dry_run import dry_run
from eq_env.studies.einstein_puzzle import reproduce, tools, train

__all__ = ["COMMANDS", "describe_config", "dry_run"]

COMMANDS = [train.COMMAND, tools.COMMAND, reproduce.COMMAND]


def describe_config(config: object) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    c = config
    return f"n={c.n}, comm_mode={c.comm_mode}, puzzles={c.puzzles}, step limit {c.step_limit}"  # type: ignore[attr-defined]
