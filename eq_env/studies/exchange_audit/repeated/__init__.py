"""The repeated game's hooks for the generic ``eq-env`` commands (its experiment, ``eq-env repeated``, is one of the
exchange–audit game's commands: :mod:`eq_env.studies.exchange_audit.repeated.experiment`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eq_env.exchange_audit.repeated.rules import RepeatedConfig

__all__ = ["COMMANDS", "describe_config", "dry_run"]

COMMANDS = ()


def describe_config(config: RepeatedConfig) -> str:
    """The parameters ``eq-env play`` shows beside the preset."""
    horizon = f"T={config.rounds}" if config.continuation >= 1.0 else f"δ={config.continuation:g} (T≤{config.rounds})"
    policy = config.audit_policy
    if policy == "decay":
        policy += f" (γ={config.gamma:g}, q_min={config.q_min:g}{', reset on fail' if config.reset_on_fail else ''})"
    elif policy == "trigger":
        rounds = "for ever" if config.punish_rounds is None else f"for {config.punish_rounds} rounds"
        policy += f" (q_punish={config.q_punish:g} {rounds})"
    stage = config.stage
    return f"{horizon}, {policy}, q={stage.q:g}, B={stage.checks_per_audit}, V={stage.V:g}, L={stage.L:g}"


def dry_run(config: RepeatedConfig, policies: Mapping[str, Sequence[str]]) -> int:
    """``--dry-run``: what the LLM policies would be sent in round 0, the stage game's prompts (every round is
    prompted as a one-shot round, with that round's q_t)."""
    from eq_env.agents.exchange_audit.dry_run import dry_run as stage_dry_run

    return stage_dry_run(config.stage, policies)
