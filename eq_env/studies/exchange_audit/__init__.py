"""The exchange–audit game's commands and experiments (the game itself is :mod:`eq_env.exchange_audit`).

Each command's module holds its manual (the docstring), its flags, its run and its ``COMMAND``:
:mod:`.reproduce` (the paper's tables and figure: the main job), :mod:`.train` and :mod:`.selfplay`
(Stable-Baselines3, RLlib), :mod:`.equilibrium` (best responses), :mod:`.frontier` (the deterrence frontier),
:mod:`.noisy` (noisy audits), :mod:`.free_text` (the free-text regime), :mod:`.inspection` (the validator as a
strategic auditor), :mod:`.sensitivity` (the LLM proposer across prompt variants and models),
:mod:`.claim_schemas` (richer claim schemas) and :mod:`.repeated.experiment` (repeated play and reputation).
:mod:`.bench` holds the game's tasks of ``eq-env bench``. :data:`COMMANDS` is what the CLI lists;
:func:`describe_config` and :func:`dry_run` are the game's hooks for the generic ``play``.
"""

from __future__ import annotations

from eq_env.agents.exchange_audit.dry_run import dry_run
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.studies.exchange_audit import (
    claim_schemas,
    equilibrium,
    free_text,
    frontier,
    inspection,
    noisy,
    reproduce,
    selfplay,
    sensitivity,
    train,
)
from eq_env.studies.exchange_audit.repeated import experiment as repeated_experiment  # (not `repeated`: the package)

__all__ = ["COMMANDS", "describe_config", "dry_run"]

COMMANDS = [
    reproduce.COMMAND,
    train.COMMAND,
    selfplay.COMMAND,
    equilibrium.COMMAND,
    frontier.COMMAND,
    noisy.COMMAND,
    free_text.COMMAND,
    inspection.COMMAND,
    sensitivity.COMMAND,
    claim_schemas.COMMAND,
    repeated_experiment.COMMAND,
]


def describe_config(config: ExchangeAuditConfig) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    schema = "" if config.claim_schema == "paper" else f", claim_schema={config.claim_schema}"
    return f"q={config.q:g}, B={config.checks_per_audit}, V={config.V:g}, L={config.L:g}{schema}"
