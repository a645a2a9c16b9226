"""Play the exchange–audit game with a proposer and a validator: the core runner, roles named.

These are :mod:`eq_env.core.runner`'s functions with the game's two roles as
arguments (``play(config, "honest", "rule", ...)``), returning
:class:`~eq_env.exchange_audit.records.EpisodeRecord` s; :mod:`eq_env.exchange_audit.runner`
re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from eq_env.core import runner as core
from eq_env.core.policy import Policy
from eq_env.core.runner import Episode, FailedEpisode, format_metrics_table, is_async, merge_infos
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import SEED_STREAMS
from eq_env.exchange_audit.records import METRICS, EpisodeRecord, compute_metrics, records_to_columns
from eq_env.exchange_audit.spec import SPEC

__all__ = [
    "METRICS",
    "Episode",
    "EpisodeRecord",
    "Evaluation",
    "FailedEpisode",
    "aplay",
    "compute_metrics",
    "episode_from_dict",
    "evaluate",
    "forced_decision",
    "format_metrics_table",
    "is_async",
    "llm_summary",
    "merge_infos",
    "play",
    "play_concurrent",
    "policy_seed",
    "records_to_columns",
    "summarize",
]

forced_decision = core.forced_action


def policy_seed(seed: int, role: str) -> int:
    """The seed a role's policy is reset with for a run of ``seed``."""
    return core.policy_seed(seed, SEED_STREAMS[role])


def _roles(proposer: Policy | str, validator: Policy | str) -> dict[str, Any]:
    return {"proposer": proposer, "validator": validator}


def play(
    config: ExchangeAuditConfig,
    proposer: Policy | str,
    validator: Policy | str,
    *,
    episodes: int,
    seed: int,
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
    concurrency: int = 1,
) -> list[EpisodeRecord]:
    """:func:`eq_env.core.runner.play` with a proposer and a validator (objects or spec strings)."""
    return core.play(
        SPEC,
        config,
        _roles(proposer, validator),
        episodes=episodes,
        seed=seed,
        progress=progress,
        render=render,
        concurrency=concurrency,
    )


async def aplay(
    config: ExchangeAuditConfig,
    proposer: Policy | str,
    validator: Policy | str,
    *,
    episodes: int,
    seed: int,
    concurrency: int = 8,
    skip: Iterable[int] = (),
    on_episode: Callable[[Episode], None] | None = None,
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
) -> list[Episode]:
    """:func:`eq_env.core.runner.aplay` with a proposer and a validator."""
    return await core.aplay(
        SPEC,
        config,
        _roles(proposer, validator),
        episodes=episodes,
        seed=seed,
        concurrency=concurrency,
        skip=skip,
        on_episode=on_episode,
        progress=progress,
        render=render,
    )


def play_concurrent(
    config: ExchangeAuditConfig,
    proposer: Policy | str,
    validator: Policy | str,
    *,
    episodes: int,
    seed: int,
    concurrency: int = 8,
    skip: Iterable[int] = (),
    on_episode: Callable[[Episode], None] | None = None,
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
) -> list[Episode]:
    """:func:`eq_env.core.runner.play_concurrent` with a proposer and a validator."""
    return core.play_concurrent(
        SPEC,
        config,
        _roles(proposer, validator),
        episodes=episodes,
        seed=seed,
        concurrency=concurrency,
        skip=skip,
        on_episode=on_episode,
        progress=progress,
        render=render,
    )


class Evaluation(core.Evaluation):
    """:class:`eq_env.core.runner.Evaluation`, with the two policies by their roles' names."""

    @property
    def proposer(self) -> str:
        return self.policies["proposer"]

    @property
    def validator(self) -> str:
        return self.policies["validator"]


def evaluate(
    config: ExchangeAuditConfig,
    proposer: Policy | str,
    validator: Policy | str,
    *,
    episodes: int,
    seeds: Sequence[int],
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
    concurrency: int = 1,
) -> Evaluation:
    """:func:`eq_env.core.runner.evaluate` with a proposer and a validator (objects or spec strings):
    per-seed metrics of :data:`METRICS`, their summary, the records and the failed episodes."""
    ev = core.evaluate(
        SPEC,
        config,
        _roles(proposer, validator),
        episodes=episodes,
        seeds=seeds,
        progress=progress,
        render=render,
        concurrency=concurrency,
    )
    return Evaluation(**vars(ev))


def llm_summary(
    records: Sequence[EpisodeRecord], failed: Sequence[FailedEpisode] = (), superseded: Sequence[Episode] = ()
) -> dict[str, Any]:
    """:func:`eq_env.core.runner.llm_summary` for this game (whose agents do not depend on the config)."""
    return core.llm_summary(SPEC, ExchangeAuditConfig(), records, failed, superseded)


def episode_from_dict(data: Mapping[str, Any]) -> Episode:
    """An episode record or failed episode of this game from its dict."""
    return core.episode_from_dict(SPEC, data)


def summarize(per_seed: Iterable[Mapping[str, float]]) -> dict[str, tuple[float, float]]:
    """Mean and sample standard deviation of each of :data:`METRICS` over seeds."""
    return core.summarize(per_seed, METRICS)
