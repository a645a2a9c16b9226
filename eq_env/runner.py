"""Play episodes of the exchange–audit game with any policy per role, and measure them.

:func:`play` runs one seed through the PettingZoo AEC environment and returns
one :class:`EpisodeRecord` per episode; :func:`evaluate` runs several seeds
and aggregates the paper's metrics (mean and sample standard deviation over
seeds). The runner knows policies only through :class:`eq_env.policy.Policy`.

Seeding: the environment's draws come from ``seed`` itself and each policy's
own randomness from a child of it (:func:`policy_seed`), so a run is
reproducible bit for bit and two conditions with the same seed face the same
positions, noise and audit coins.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from eq_env import exchange_audit_v0
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import PROPOSER, VALIDATOR
from eq_env.exchange_audit.game import (
    CHECKABLE_CLAIMS,
    REQUIRED_CLAIMS,
    AuditOutcome,
    EpisodeOutcome,
    Intent,
    ProposerAction,
)
from eq_env.exchange_audit.spaces import NUMBER_BOUNDS
from eq_env.policy import Policy, PolicyError, PolicySetupError, make_policy, new_run

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
    "format_metrics_table",
    "is_async",
    "llm_summary",
    "play",
    "play_concurrent",
    "policy_seed",
    "records_to_columns",
    "summarize",
]

_POLICY_STREAM = {"proposer": 10, "validator": 11}


def policy_seed(seed: int, role: str) -> int:
    """The seed a role's policy is reset with for a run of ``seed``."""
    ss = np.random.SeedSequence(seed, spawn_key=(_POLICY_STREAM[role],))
    return int(ss.generate_state(1, dtype=np.uint64)[0])


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode, flat and JSON-ready."""

    seed: int
    episode: int
    ambiguous: bool
    intent: str
    compliant: bool
    risk_limit: float
    delta_limit: float
    true_risk: float
    true_net_delta: float
    observed_risk: float
    observed_net_delta: float
    observed_hedge_size: float
    proposer_action: str
    reported_intent: str
    reported_risk: float
    reported_net_delta: float
    reported_hedge_size: float
    claim_intent: str | None
    claim_risk_within_limit: bool | None
    claim_net_delta_bounded: bool | None
    claim_risk_metric: float | None
    claim_confidence: float | None
    words: int
    tokens: int
    audit_outcome: str
    audit_checked: tuple[str, ...]
    audit_failed: tuple[str, ...]
    decision: str
    approved: bool
    proposer_payoff: float
    validator_payoff: float
    welfare: float
    proposer_info: dict[str, Any] | None = None  # what an LLM policy reports: tokens, fallbacks, transport
    validator_info: dict[str, Any] | None = None

    @property
    def audited(self) -> bool:
        return self.audit_outcome != AuditOutcome.SKIPPED.name

    @property
    def misreported(self) -> bool:
        """A request whose reported position differs from what the proposer observed (intent: from the truth).

        A NO_TRADE's reported numbers are not acted on, so they do not count."""
        if self.proposer_action != ProposerAction.REQUEST_APPROVAL.name:
            return False
        low, high = NUMBER_BOUNDS
        observed = np.clip([self.observed_risk, self.observed_net_delta, self.observed_hedge_size], low, high)
        reported = (self.reported_risk, self.reported_net_delta, self.reported_hedge_size)
        return self.reported_intent != self.intent or any(
            abs(r - o) > 1e-9 for r, o in zip(reported, observed.tolist(), strict=True)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeRecord:
        """The record ``data`` holds (e.g. a JSON line); a ValueError names a missing or mistyped field."""
        from eq_env.core.records import checked_fields

        return cls(**checked_fields(cls, data))

    @classmethod
    def from_outcome(
        cls,
        outcome: EpisodeOutcome,
        seed: int,
        episode: int,
        proposer_info: dict[str, Any] | None = None,
        validator_info: dict[str, Any] | None = None,
    ) -> EpisodeRecord:
        s, v, sub, audit = outcome.state, outcome.view, outcome.submission, outcome.audit
        c, p = sub.artifact.claims, sub.proposal
        return cls(
            seed=seed,
            episode=episode,
            ambiguous=s.ambiguous,
            intent=s.intent.name,
            compliant=s.compliant,
            risk_limit=s.risk_limit,
            delta_limit=s.delta_limit,
            true_risk=s.true_risk,
            true_net_delta=s.true_net_delta,
            observed_risk=v.observed_risk,
            observed_net_delta=v.observed_net_delta,
            observed_hedge_size=v.observed_hedge_size,
            proposer_action=sub.action.name,
            reported_intent=p.intent.name,
            reported_risk=p.risk,
            reported_net_delta=p.net_delta,
            reported_hedge_size=p.hedge_size,
            claim_intent=None if c.intent is None else c.intent.name,
            claim_risk_within_limit=c.risk_within_limit,
            claim_net_delta_bounded=c.net_delta_bounded,
            claim_risk_metric=c.risk_metric,
            claim_confidence=c.confidence,
            words=sub.artifact.words,
            tokens=sub.artifact.tokens,
            audit_outcome=audit.outcome.name,
            audit_checked=audit.checked,
            audit_failed=audit.failed,
            decision=outcome.decision.name,
            approved=outcome.approved,
            proposer_payoff=outcome.payoffs.proposer,
            validator_payoff=outcome.payoffs.validator,
            welfare=outcome.payoffs.welfare,
            proposer_info=proposer_info,
            validator_info=validator_info,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["audit_checked"] = list(self.audit_checked)
        out["audit_failed"] = list(self.audit_failed)
        return out


def forced_decision(observation: Mapping[str, Any]) -> int | None:
    """The validator's only legal action when there is just one (after a NO_TRADE), else None."""
    mask = observation["action_mask"]
    return int(np.argmax(mask)) if int(mask.sum()) == 1 else None


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
    """Play ``episodes`` episodes of seed ``seed`` through the AEC environment.

    Policies may be given as objects or spec strings (``"honest:words=18"``).
    When the validator has a single legal action (after a NO_TRADE) it is
    taken without calling the policy, so an LLM validator is not billed for
    a decision that does not exist. ``render`` receives each finished
    episode's text rendering. ``progress=None`` shows a bar only on a terminal.
    Policies with ``aact`` (LLM policies) are played by :func:`play_concurrent`
    with ``concurrency`` episodes in flight; a failed episode raises
    :class:`~eq_env.policy.PolicyError` here (the experiments record them instead).
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 0:
        raise ValueError(f"episodes must be a non-negative integer, got {episodes!r}")
    policies: dict[str, Policy] = {
        PROPOSER: make_policy(proposer, "proposer"),
        VALIDATOR: make_policy(validator, "validator"),
    }
    if is_async(policies[PROPOSER]) or is_async(policies[VALIDATOR]):
        # LLM policies: the concurrent runner, which records their info and failures
        out = play_concurrent(config, policies[PROPOSER], policies[VALIDATOR], episodes=episodes, seed=seed,
                              concurrency=concurrency, progress=progress, render=render)  # fmt: skip
        failed = [e for e in out if isinstance(e, FailedEpisode)]
        if failed:
            raise PolicyError(f"{len(failed)} episode(s) failed, e.g. episode {failed[0].episode}: {failed[0].error}")
        return [e for e in out if isinstance(e, EpisodeRecord)]
    policies[PROPOSER].reset(seed=policy_seed(seed, "proposer"))
    policies[VALIDATOR].reset(seed=policy_seed(seed, "validator"))
    env = exchange_audit_v0.env(config=config, render_mode="ansi" if render else None)
    game = env.unwrapped.game
    records: list[EpisodeRecord] = []
    bar = tqdm(total=episodes, desc=f"seed {seed}", unit="ep", disable=(None if progress is None else not progress))
    for i in range(episodes):
        env.reset(seed=seed) if i == 0 else env.reset()
        for agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                if agent == VALIDATOR and render is not None:
                    render(env.render())
                env.step(None)
                continue
            forced = forced_decision(obs) if agent == VALIDATOR else None
            env.step(policies[agent].act(obs) if forced is None else forced)
        assert game.outcome is not None
        records.append(EpisodeRecord.from_outcome(game.outcome, seed, i))
        bar.update(1)
    bar.close()
    env.close()
    return records


# ---------------------------------------------------------------------------
# Concurrent play (LLM policies)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FailedEpisode:
    """An episode no policy action could be obtained for (e.g. the endpoint stayed down).

    ``role`` is the role whose policy failed and ``error`` what happened. ``infos`` holds what each
    role's policy reported for this episode, the failing one's attempt included (requests, retries,
    tokens billed, transport errors): the proposer's answer was paid for even when the validator's
    request then failed, and the run's costs must say so.
    """

    seed: int
    episode: int
    role: str
    error: str
    infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: bool = True

    @property
    def info(self) -> dict[str, Any] | None:
        """What the failing role's policy reported."""
        return self.infos.get(self.role)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Episode = EpisodeRecord | FailedEpisode


def episode_from_dict(data: Mapping[str, Any]) -> Episode:
    """A finished or failed episode from its dict; a ValueError names a missing or mistyped field."""
    from eq_env.core.records import checked_fields

    if isinstance(data, Mapping) and data.get("failed"):
        if "infos" not in data and isinstance(data.get("info"), dict):  # written before infos held every role's
            data = {**data, "infos": {str(data.get("role")): data["info"]}}
        return FailedEpisode(**checked_fields(FailedEpisode, data))
    return EpisodeRecord.from_dict(data)


def is_async(policy: Any) -> bool:
    """The policy offers ``async aact(observation) -> (action, info)`` (LLM policies do)."""
    return callable(getattr(policy, "aact", None))


async def _act(policy: Any, observation: Mapping[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    if is_async(policy):
        action, info = await policy.aact(observation)
        return action, info
    return policy.act(observation), None


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
    """Play the episodes of one seed concurrently (at most ``concurrency`` at once); in episode order.

    Each episode is the same as in :func:`play` (episode ``i`` of the seed's
    stream, through the PettingZoo environment; policies without ``aact`` are
    called with ``act``); episodes in ``skip`` are not
    played (a resumed run). ``on_episode`` receives each episode as it
    finishes — in whatever order they finish — so a caller can save it at
    once; ``render`` receives each finished episode's text rendering.
    An episode whose policy raises — :class:`~eq_env.policy.PolicyError`
    (e.g. the endpoint stayed down) or anything else (a policy bug, an action
    the environment rejects) — becomes a :class:`FailedEpisode` carrying the
    error, and the run goes on: one bad reply never ends a run.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    policies = {PROPOSER: make_policy(proposer, "proposer"), VALIDATOR: make_policy(validator, "validator")}
    policies[PROPOSER].reset(seed=policy_seed(seed, "proposer"))
    policies[VALIDATOR].reset(seed=policy_seed(seed, "validator"))
    skipped = set(skip)  # once: ``skip`` may be a one-pass iterator
    todo = [i for i in range(episodes) if i not in skipped]
    envs: asyncio.Queue[Any] = asyncio.Queue()
    for _ in range(min(concurrency, max(len(todo), 1))):
        envs.put_nowait(exchange_audit_v0.raw_env(config=config, render_mode="ansi" if render else None))
    bar = tqdm(total=len(todo), desc=f"seed {seed}", unit="ep", disable=None if progress is None else not progress)

    async def one(i: int) -> Episode:
        env = await envs.get()  # the pool bounds concurrency; envs are reused in turn
        role = "proposer"
        infos: dict[str, dict[str, Any]] = {}  # kept if a later role fails: its costs are real
        try:
            env.reset(seed=seed, options={"episode": i})
            action, proposer_info = await _act(policies[PROPOSER], env.observe(PROPOSER))
            if proposer_info:
                infos[role] = proposer_info
            env.step(action)
            obs = env.observe(VALIDATOR)
            role = "validator"
            forced = forced_decision(obs)
            if forced is not None:  # nothing to decide: no call
                decision, validator_info = forced, None
            else:
                decision, validator_info = await _act(policies[VALIDATOR], obs)
            env.step(decision)
            assert env.game.outcome is not None
            result: Episode = EpisodeRecord.from_outcome(env.game.outcome, seed, i, proposer_info, validator_info)
            if render is not None:
                render(env.render())
        except PolicySetupError:  # no episode can succeed: stop the run, record nothing
            raise
        except PolicyError as err:
            result = FailedEpisode(seed, i, role, str(err), {**infos, **({role: err.info} if err.info else {})})
        except Exception as err:  # recorded with its type; the run goes on
            result = FailedEpisode(seed, i, role, f"{type(err).__name__}: {err}", infos)
        finally:
            envs.put_nowait(env)
        if on_episode is not None:
            on_episode(result)
        bar.update(1)
        return result

    tasks: list[asyncio.Future[Episode]] = []
    try:
        with new_run():  # (inside a longer run, e.g. run_all's, this is part of it)
            if todo:  # a policy that cannot be served stops the run before any episode is paid for
                for policy in policies.values():
                    check = getattr(policy, "check", None)
                    if callable(check):
                        await check()
            tasks = [asyncio.ensure_future(one(i)) for i in todo]
            results = await asyncio.gather(*tasks)
    except BaseException:  # a setup error or an interrupt: nothing else may be played or recorded
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        bar.close()
        for policy in policies.values():  # close connections while their event loop still runs
            close = getattr(policy, "aclose", None)
            if callable(close):
                await close()
    return sorted(results, key=lambda e: e.episode)


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
    """:func:`aplay` from synchronous code."""
    return asyncio.run(
        aplay(
            config,
            proposer,
            validator,
            episodes=episodes,
            seed=seed,
            concurrency=concurrency,
            skip=skip,
            on_episode=on_episode,
            progress=progress,
            render=render,
        )
    )


def llm_summary(
    records: Sequence[EpisodeRecord], failed: Sequence[FailedEpisode] = (), superseded: Sequence[Episode] = ()
) -> dict[str, Any]:
    """Totals of what LLM policies reported over a run: tokens, requests, fallbacks, re-asks, latency.

    ``prompt_tokens``/``completion_tokens`` are attributed to the run's episodes, failed ones
    included (what their samples cost when drawn, replay or not); ``calls`` counts the answers
    policies gave. Under ``transport``, what was done and paid for to play the run: every request
    of every episode, those of failed episodes and of ``superseded`` attempts (failed episodes an
    earlier, resumed run played before these) included.
    """
    out: dict[str, Any] = {"failed_episodes": len(failed)}
    for role in ("proposer", "validator"):
        answered = [i for i in (getattr(r, f"{role}_info") for r in records) if i]
        answered += [f.infos[role] for f in failed if f.role != role and f.infos.get(role)]
        lost = [f.infos[role] for f in failed if f.role == role and f.infos.get(role)]
        earlier = [i for e in superseded for i in _infos(e, role)]
        if not answered and not lost and not earlier:
            continue
        drawn = [*answered, *lost]
        transport = [i.get("transport", {}) for i in (*drawn, *earlier)]
        out[role] = {
            "calls": len(answered),
            "prompt_tokens": sum(i.get("prompt_tokens", 0) for i in drawn),
            "completion_tokens": sum(i.get("completion_tokens", 0) for i in drawn),
            "usage_estimated": sum(bool(i.get("usage_estimated")) for i in drawn),
            "fallbacks": sum(bool(i.get("fallback")) for i in answered),
            "reasks": sum(len(i.get("invalid_replies", [])) for i in drawn),
            "gated": sum(bool(i.get("gated")) for i in answered),
            "transport": {  # varies from run to run (a replay has no latency, requests, retries or bill)
                "requests": sum(t.get("requests", 0) for t in transport),
                "retries": sum(t.get("retries", 0) for t in transport),
                "cache_hits": sum(t.get("cached", 0) for t in transport),
                "billed_prompt_tokens": sum(t.get("billed_prompt_tokens", 0) for t in transport),
                "billed_completion_tokens": sum(t.get("billed_completion_tokens", 0) for t in transport),
                "errors": sum(len(t.get("errors", [])) for t in transport),
                "latency_mean": sum(t.get("latency", 0.0) for t in transport) / len(transport),
            },
        }
    return out


def _infos(episode: Episode, role: str) -> list[dict[str, Any]]:
    info = episode.infos.get(role) if isinstance(episode, FailedEpisode) else getattr(episode, f"{role}_info")
    return [info] if info else []


# ---------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------
METRICS: dict[str, str] = {
    "approval_rate": "approved / episodes",
    "bad_approval_rate": "approved and non-compliant / episodes",
    "welfare": "mean welfare per episode",
    "words": "mean words of free text",
    "ambiguous_approval_rate": "approved / ambiguous episodes",
    "ambiguous_welfare": "mean welfare over ambiguous episodes",
    "audit_rate": "audited / episodes",
    "audit_fail_rate": "failed / audited episodes (undefined without audits)",
    "request_rate": "REQUEST_APPROVAL / episodes",
    "claim_truthfulness": "stated intent/limit claims that are true / all stated",
    "misreport_rate": "requests whose reported position differs from the observed one / episodes",
    "proposer_payoff": "mean proposer payoff",
    "validator_payoff": "mean validator payoff",
}


def _code(value: str | bool | None, kind: type[Intent] | None = None) -> int:
    """A claim or intent as the batch engine codes it: -1 absent, else the value."""
    if value is None:
        return -1
    if kind is not None:
        return int(kind[value])  # type: ignore[index]
    return int(bool(value))


def records_to_columns(records: Sequence[EpisodeRecord]) -> dict[str, np.ndarray]:
    """Per-episode column arrays, the same keys and codes as the batch engine produces.

    Codes: intents as :class:`Intent` values; claims -1 absent, else the value
    (intent code, or 0/1); audit outcomes as :class:`AuditOutcome` values.
    """
    n = len(records)
    stated = np.zeros(n)
    true = np.zeros(n)
    for i, r in enumerate(records):
        truth = {
            "intent": r.intent,
            "risk_within_limit": r.true_risk <= r.risk_limit,
            "net_delta_bounded": abs(r.true_net_delta) <= r.delta_limit,
        }
        for name in REQUIRED_CLAIMS:
            claim = getattr(r, f"claim_{name}")
            if claim is not None:
                stated[i] += 1
                true[i] += claim == truth[name]

    def col(name: str, dtype: Any) -> np.ndarray:
        return np.array([getattr(r, name) for r in records], dtype=dtype)

    def checks(name: str) -> np.ndarray:
        return np.array([[c in getattr(r, name) for c in CHECKABLE_CLAIMS] for r in records], dtype=bool).reshape(n, 4)

    outcome = np.array([AuditOutcome[r.audit_outcome] for r in records], dtype=np.int8)
    return {
        "ambiguous": col("ambiguous", bool),
        "intent": np.array([_code(r.intent, Intent) for r in records], dtype=np.int8),
        "compliant": col("compliant", bool),
        "risk_limit": col("risk_limit", np.float64),
        "true_risk": col("true_risk", np.float64),
        "true_net_delta": col("true_net_delta", np.float64),
        "observed_risk": col("observed_risk", np.float64),
        "observed_net_delta": col("observed_net_delta", np.float64),
        "requested": np.array([r.proposer_action == ProposerAction.REQUEST_APPROVAL.name for r in records], dtype=bool),
        "reported_intent": np.array([_code(r.reported_intent, Intent) for r in records], dtype=np.int8),
        "reported_risk": col("reported_risk", np.float64),
        "reported_net_delta": col("reported_net_delta", np.float64),
        "reported_hedge_size": col("reported_hedge_size", np.float64),
        "claim_intent": np.array([_code(r.claim_intent, Intent) for r in records], dtype=np.int8),
        "claim_risk_within_limit": np.array([_code(r.claim_risk_within_limit) for r in records], dtype=np.int8),
        "claim_net_delta_bounded": np.array([_code(r.claim_net_delta_bounded) for r in records], dtype=np.int8),
        "words": col("words", np.float64),
        "tokens": col("tokens", np.float64),
        "audited": outcome != AuditOutcome.SKIPPED,
        "audit_outcome": outcome,
        "audit_checked": checks("audit_checked"),
        "audit_failed_checks": checks("audit_failed"),
        "audit_failed": outcome == AuditOutcome.FAIL,
        "approved": col("approved", bool),
        "claims_stated": stated,
        "claims_true": true,
        "misreported": np.array([r.misreported for r in records], dtype=bool),
        "proposer_payoff": col("proposer_payoff", np.float64),
        "validator_payoff": col("validator_payoff", np.float64),
        "welfare": col("welfare", np.float64),
    }


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


def compute_metrics(columns: Mapping[str, np.ndarray] | Sequence[EpisodeRecord]) -> dict[str, float]:
    """The metrics of :data:`METRICS` for one run (NaN where undefined)."""
    cols = records_to_columns(columns) if not isinstance(columns, Mapping) else columns
    amb, audited = cols["ambiguous"], cols["audited"]
    stated = float(cols["claims_stated"].sum())
    return {
        "approval_rate": _mean(cols["approved"]),
        "bad_approval_rate": _mean(cols["approved"] & ~cols["compliant"]),
        "welfare": _mean(cols["welfare"]),
        "words": _mean(cols["words"]),
        "ambiguous_approval_rate": _mean(cols["approved"][amb]),
        "ambiguous_welfare": _mean(cols["welfare"][amb]),
        "audit_rate": _mean(audited),
        "audit_fail_rate": _mean(cols["audit_failed"][audited]),
        "request_rate": _mean(cols["requested"]),
        "claim_truthfulness": float(cols["claims_true"].sum()) / stated if stated else math.nan,
        "misreport_rate": _mean(cols["misreported"]),
        "proposer_payoff": _mean(cols["proposer_payoff"]),
        "validator_payoff": _mean(cols["validator_payoff"]),
    }


def summarize(per_seed: Iterable[Mapping[str, float]]) -> dict[str, tuple[float, float]]:
    """Mean and sample standard deviation (ddof = 1) of each metric over seeds.

    Seeds where a metric is undefined (NaN) are left out of its mean; with
    fewer than two defined values the standard deviation is NaN.
    """
    rows = list(per_seed)
    out: dict[str, tuple[float, float]] = {}
    for name in METRICS:
        values = np.array([r[name] for r in rows], dtype=np.float64)
        values = values[~np.isnan(values)]
        mean = float(values.mean()) if values.size else math.nan
        std = float(values.std(ddof=1)) if values.size > 1 else math.nan
        out[name] = (mean, std)
    return out


@dataclass
class Evaluation:
    """Several seeds of one condition: records, per-seed metrics and their summary."""

    config: ExchangeAuditConfig
    proposer: str
    validator: str
    seeds: list[int]
    episodes: int
    records: list[EpisodeRecord]
    per_seed: list[dict[str, float]]
    failed: list[FailedEpisode] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, tuple[float, float]]:
        return summarize(self.per_seed)


@new_run()
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
    """:func:`play` for each seed, with per-seed metrics.

    Episodes that LLM policies fail (see :class:`FailedEpisode`) are kept in ``failed`` and left out
    of the metrics, instead of ending the evaluation.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")  # 0 would give NaN metrics
    wanted = "seeds must be a non-empty sequence of distinct non-negative integers"
    if isinstance(seeds, (str, bytes, Mapping)) or not isinstance(seeds, Iterable):  # ("01" would be seeds 0, 1)
        raise ValueError(f"{wanted}, got {seeds!r}")
    seeds = list(seeds)
    if not seeds:
        raise ValueError(f"{wanted}, got none")
    for seed in seeds:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"{wanted}, got {seed!r}")
    if len(set(seeds)) != len(seeds):  # a seed twice is the same episodes twice, counted as two seeds
        repeated = next(s for i, s in enumerate(seeds) if s in seeds[:i])
        raise ValueError(f"{wanted}, got {repeated!r} more than once")
    proposer_policy = make_policy(proposer, "proposer")
    validator_policy = make_policy(validator, "validator")
    records: list[EpisodeRecord] = []
    failed: list[FailedEpisode] = []
    per_seed = []
    concurrent = is_async(proposer_policy) or is_async(validator_policy)
    for seed in seeds:
        if concurrent:
            out = play_concurrent(config, proposer_policy, validator_policy, episodes=episodes, seed=seed,
                                  concurrency=concurrency, progress=progress, render=render)  # fmt: skip
            run = [e for e in out if isinstance(e, EpisodeRecord)]
            failed.extend(e for e in out if isinstance(e, FailedEpisode))
        else:
            run = play(config, proposer_policy, validator_policy, episodes=episodes, seed=seed, progress=progress,
                       render=render)  # fmt: skip
        records.extend(run)
        per_seed.append(compute_metrics(run))
    return Evaluation(config, repr(proposer_policy), repr(validator_policy), list(seeds), episodes, records, per_seed,
                      failed)  # fmt: skip


def format_metrics_table(summary: Mapping[str, tuple[float, float]], digits: int = 3) -> str:
    """A plain-text table of ``metric  mean  std``."""
    width = max(len(k) for k in summary)
    lines = [f"{'metric':<{width}}  {'mean':>8}  {'std':>8}", f"{'-' * width}  {'-' * 8}  {'-' * 8}"]
    for name, (mean, std) in summary.items():
        m = "—" if math.isnan(mean) else f"{mean:.{digits}f}"
        s = "—" if math.isnan(std) else f"{std:.{digits}f}"
        lines.append(f"{name:<{width}}  {m:>8}  {s:>8}")
    return "\n".join(lines)
