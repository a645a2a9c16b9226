"""The ``eq-env`` command: the core's commands, every game's own, and the LLM flags.

``eq-env reproduce`` runs the exchange–audit paper's experiments (the main job);
``eq-env play`` plays episodes of any game with a policy per role and prints
its metrics; ``eq-env sweep`` runs any grid; ``eq-env policies`` and
``eq-env envs`` list what there is. Every game parameter is a flag of ``play``
(``--q 0.3 --B 2``) and a grid key of ``sweep``; ``--env`` chooses the game.
The plumbing is :mod:`eq_env.core.cli`; each game's commands are its own
(``EnvSpec.cli``); the LLM flags are :mod:`eq_env.agents.cli`'s.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from eq_env.core import cli as core

__all__ = ["build_parser", "config_from_args", "main"]

INCOMPLETE = core.INCOMPLETE


def _setup() -> None:
    import eq_env  # noqa: F401 - registers the games
    from eq_env.agents.cli import LLM_FLAGS
    from eq_env.finetune.cli import COMMAND as FINETUNE
    from eq_env.studies.baselines import COMMAND as BASELINES
    from eq_env.studies.bench import COMMAND as BENCH

    core.register_flag_group(LLM_FLAGS)
    core.register_command(BENCH)
    core.register_command(BASELINES)
    core.register_command(FINETUNE)


def build_parser(env: Any = None) -> argparse.ArgumentParser:
    """The ``eq-env`` parser (with the flags of the game ``env``, default the default game)."""
    _setup()
    return core.build_parser(env)


def config_from_args(args: argparse.Namespace) -> Any:
    """The validated configuration of the default game the flags describe."""
    from eq_env.exchange_audit.config import ExchangeAuditConfig

    return core.config_from_args(args, ExchangeAuditConfig)


def main(argv: Sequence[str] | None = None) -> int:
    _setup()
    return core.main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
