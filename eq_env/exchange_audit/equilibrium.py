"""Best responses, the incentive to deviate, and the paper's incentive condition.

**Expected payoffs.** For a batch of episodes and a submission per episode,
:func:`expected_payoffs` takes the expectation over the audit *exactly*:
not audited with probability 1 − q; audited with probability q, checking each
of the C(4, B) claim subsets with equal probability. The validator's decision
is computed for every audit scenario. The state (position and observation
noise) is Monte Carlo: the average over sampled episodes; so are the verdicts
of noisy audits (each episode's check uniforms decide its flips), which makes
a best response under noise noisier than one without: where a lie barely
loses, a search on few episodes still finds cells in which it seemed to pay
(their held-out gap says so; more episodes shrink them).

**The proposer's best response** to a fixed validator is searched over the
discrete artifact space of :mod:`eq_env.exchange_audit.features` (648
artifacts: act or not, report honestly or shade, each claim asserted, omitted
or negated, 0/6/18 words; a claim schema adds three choices per claim it
adds — omit, sincere, favourable — and its audit pool sets the C(pool, B)
subsets), as a function of the proposer's observation
summarised in cells (intent, what it knows of its compliance, and bins of its
observed margins to the limits). On one half of the sampled episodes the best
artifact of each cell is chosen; on the other half its payoff is measured,
against the honest proposer's on the same episodes (paired). Their gap is the
incentive to deviate; the best response's misreport rate says how it deviates.

**The validator's best response** to a fixed proposer approves in a cell of
its observation (ambiguous or not, audit outcome, what the audit revealed,
whether the claims assert compliance, whether the reported numbers are
comfortable or within the limits) iff approving pays there on average.

**The incentive condition** (the paper's eq. 3): misreporting is unprofitable
when p_detect · (V + L) ≥ V + C(r_lie) − C(r_honest), with p_detect = q · P(a
sampled claim is a lie). :func:`analytic_threshold` gives the smallest such q.
It compares the lie with an honest request that is blocked (payoff 0); in this
game an honest proposer can also decline (NO_TRADE pays 1), and the audit
checks claims, not reported numbers, so the best response can differ — see
:func:`frontier`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from eq_env.core.policy import make_policy
from eq_env.exchange_audit.batch import (
    ABSENT,
    AuditBatch,
    Nature,
    SubmissionBatch,
    ValidatorBatch,
    claim_columns,
    detection_miss_table,
    draw_nature,
    is_batchable,
    payoffs_batch,
    proposer_batch,
    rule_signals,
    run_audit_batch,
    skipped_audits,
    validator_audit,
    withhold_batch,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.features import (
    all_artifacts,
    artifact_submissions,
    describe_artifact,
)
from eq_env.exchange_audit.rules import N_AUDIT_UNIFORMS, AuditOutcome, DrawStream
from eq_env.exchange_audit.schema import get_schema

__all__ = [
    "ProposerBestResponse",
    "ValidatorBestResponse",
    "analytic_threshold",
    "expected_payoffs",
    "game_threshold",
    "proposer_best_response",
    "proposer_best_responses",
    "proposer_payoff",
    "validator_best_response",
]


# ---------------------------------------------------------------------------
# Payoffs, exact over the audit
# ---------------------------------------------------------------------------
def _scenarios(config: ExchangeAuditConfig) -> list[tuple[float, tuple[int, ...] | None]]:
    """(probability, checked claim indices or None for 'not audited') of every audit outcome path."""
    out: list[tuple[float, tuple[int, ...] | None]] = []
    if config.q < 1.0:
        out.append((1.0 - config.q, None))
    if config.q > 0.0:
        k = config.checks_per_audit
        pool = len(get_schema(config.claim_schema).checkable)
        subsets = list(itertools.combinations(range(pool), k)) if k > 0 else [()]
        out += [(config.q / len(subsets), s) for s in subsets]
    return out


def _audit(
    sub: SubmissionBatch, nature: Nature, config: ExchangeAuditConfig, subset: tuple[int, ...] | None
) -> AuditBatch:
    """The audit's result when it checks exactly ``subset`` (None: not audited)."""
    n = nature.n
    pool = len(get_schema(config.claim_schema).checkable)
    if subset is None:
        return skipped_audits(n, pool)
    if config.claim_schema != "paper":  # (every coin "audited", the subset given: no keys to sort)
        fixed = Nature(**{**nature.__dict__, "audit_u": np.zeros((n, N_AUDIT_UNIFORMS))})
        checks = np.zeros(pool, dtype=bool)
        checks[list(subset)] = True
        return run_audit_batch(sub, fixed, config.replace(q=1.0), checks)
    # run_audit_batch with every coin showing "audited" and keys that pick this subset
    keys = np.ones((n, max(pool, N_AUDIT_UNIFORMS - 1)))
    keys[:, list(subset)] = 0.0
    first = N_AUDIT_UNIFORMS - 1  # (the audit's own keys; a larger pool's further keys are its claim keys)
    fixed = Nature(
        **{
            **nature.__dict__,
            "audit_u": np.concatenate([np.zeros((n, 1)), keys[:, :first]], axis=1),
            "claim_u": keys[:, first:] if pool > first else None,
        }
    )
    return run_audit_batch(sub, fixed, config.replace(q=1.0))


def expected_payoffs(
    config: ExchangeAuditConfig, nature: Nature, sub: SubmissionBatch, validator: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Per episode, the proposer's and the validator's payoff, in expectation over the audit."""
    sub = withhold_batch(sub, config)  # (a free-text regime: what is withheld reaches neither audit nor validator)
    proposer = np.zeros(nature.n)
    validator_payoff = np.zeros(nature.n)
    for prob, subset in _scenarios(config):
        audit = _audit(sub, nature, config, subset)
        seen = validator_audit(audit, config)  # (delayed audits: not known when deciding)
        approve = np.asarray(
            validator.act_batch(ValidatorBatch(config, sub, seen, nature.ambiguous, nature.risk_limit)), dtype=bool
        )
        p, v = payoffs_batch(sub, sub.request & approve, audit, nature.compliant, config)
        proposer += prob * p
        validator_payoff += prob * v
    return proposer, validator_payoff


def _misreports(sub: SubmissionBatch, nature: Nature, observed: Any) -> np.ndarray:
    """Episodes whose submission reports other numbers or intent than observed, or states a false claim (among the
    paper's three, and the checkable claims a claim schema adds)."""
    false_claim = (
        ((sub.claim_intent != ABSENT) & (sub.claim_intent != nature.intent))
        | ((sub.claim_risk_within_limit != ABSENT) & (sub.claim_risk_within_limit != nature.risk_within_limit))
        | ((sub.claim_net_delta_bounded != ABSENT) & (sub.claim_net_delta_bounded != nature.net_delta_bounded))
    )
    config = getattr(observed, "config", None)
    if config is not None and config.claim_schema != "paper":
        schema = get_schema(config.claim_schema)
        cols = claim_columns(sub, schema)
        for claim in schema.extra:
            if claim.checkable:
                made, values = cols[claim.name]
                false_claim = false_claim | (made & ~np.asarray(claim.check(values, nature), dtype=bool))
    shaded = (np.abs(sub.reported_risk - observed.observed_risk) > 1e-12) | (
        np.abs(sub.reported_net_delta - observed.observed_net_delta) > 1e-12
    )
    return sub.request & (false_claim | shaded | (sub.reported_intent != nature.intent))


# ---------------------------------------------------------------------------
# The proposer's best response
# ---------------------------------------------------------------------------
MARGIN_EDGES = np.array([-0.15, -0.08, -0.04, -0.02, 0.0, 0.02, 0.04, 0.06, 0.08, 0.15])


def _proposer_cells(views: Any) -> np.ndarray:
    """A cell per episode from what the proposer sees: intent, known compliance, binned margins."""
    n = views.n
    known_r = (
        np.zeros(n, dtype=np.int64) if views.known_risk_within_limit is None else 1 + views.known_risk_within_limit
    )
    known_d = (
        np.zeros(n, dtype=np.int64) if views.known_net_delta_bounded is None else 1 + views.known_net_delta_bounded
    )
    rm = np.digitize(views.risk_limit - views.observed_risk, MARGIN_EDGES)
    dm = np.digitize(views.delta_limit - np.abs(views.observed_net_delta), MARGIN_EDGES)
    bins = len(MARGIN_EDGES) + 1
    return (((views.intent.astype(np.int64) * 3 + known_r) * 3 + known_d) * bins + rm) * bins + dm


@dataclass
class ProposerBestResponse:
    """A proposer's best response to one validator, measured on held-out episodes."""

    config: ExchangeAuditConfig
    validator: str
    episodes: int
    best_payoff: float
    honest_payoff: float
    gap: float
    gap_ci: tuple[float, float]
    misreport_rate: float  # of the best response, over non-compliant episodes
    honest_misreport_rate: float
    table: np.ndarray  # best artifact per cell (index into all_artifacts()), -1 where unseen
    deviations: list[tuple[float, str]]  # (share of episodes, artifact) of the best response where it lies

    def summary(self) -> str:
        lines = [
            f"proposer: best response {self.best_payoff:.4f}, honest {self.honest_payoff:.4f}, gap "
            f"{self.gap:+.4f} ({_ci_text(self.gap_ci)}) per episode; the best "
            f"response misreports in {self.misreport_rate:.1%} of non-compliant episodes "
            f"(honest: {self.honest_misreport_rate:.1%})",
        ]
        if self.deviations:
            significant = self.gap_ci[0] > 0  # (False for a NaN interval too)
            lines.append(
                "  deviating strategy found (share of all episodes)"
                + (":" if significant else "; its gain is not significant on the measured half:")
            )
            lines += [f"    {share:6.1%}  {text}" for share, text in self.deviations[:5]]
        else:
            lines.append("  no profitable misreport found")
        return "\n".join(lines)


def proposer_best_response(
    config: ExchangeAuditConfig,
    validator: Any = "rule",
    *,
    episodes: int = 100_000,
    seed: int = 0,
    honest: Any = None,
    progress: bool | None = False,
) -> ProposerBestResponse:
    """Search the proposer's best response to ``validator`` (see the module docstring).

    ``episodes`` are drawn from ``seed``; half choose the response, half measure it.
    ``honest`` (default: the honest proposer that judges compliance from what it knows)
    is the reference the gap is measured against. ``progress`` shows a bar over the 648
    artifacts tried (``None``: only on a terminal).
    """
    if honest is None:
        honest = "honest:claims_from=truth,words=0" if config.reveal_compliance else "honest:words=0"
    honest_policy, validator_policy = _bulk(honest, validator)
    half = episodes // 2
    nature = draw_nature(config, DrawStream(seed), 2 * half)
    fit, test = _split(nature, half)
    fit_views, test_views = proposer_batch(fit, config), proposer_batch(test, config)
    fit_cells, test_cells = _proposer_cells(fit_views), _proposer_cells(test_views)
    n_cells = int(max(fit_cells.max(initial=0), test_cells.max(initial=0))) + 1

    artifacts = all_artifacts(config.claim_schema)
    sums = np.zeros((n_cells, len(artifacts)))
    counts = np.bincount(fit_cells, minlength=n_cells)
    bar = tqdm(
        total=len(artifacts),
        desc="proposer best response",
        unit="artifact",
        disable=None if progress is None else not progress,
    )
    for a, choices in enumerate(artifacts):
        payoff, _ = expected_payoffs(config, fit, artifact_submissions(fit_views, choices), validator_policy)
        sums[:, a] = np.bincount(fit_cells, weights=payoff, minlength=n_cells)
        bar.update(1)
    bar.close()
    best = np.argmax(sums, axis=1)
    return _best_response(
        config,
        validator,
        honest_policy,
        validator_policy,
        (fit, fit_views, fit_cells),
        (test, test_views, test_cells),
        counts,
        best,
        sums[np.arange(n_cells), best],
        artifacts,
    )


def _best_response(
    config: ExchangeAuditConfig,
    validator: Any,
    honest_policy: Any,
    validator_policy: Any,
    fit_half: tuple[Nature, Any, np.ndarray],
    test_half: tuple[Nature, Any, np.ndarray],
    counts: np.ndarray,
    best: np.ndarray,
    best_sums: np.ndarray,
    artifacts: np.ndarray,
) -> ProposerBestResponse:
    """The best response whose best artifact per cell (and its payoff summed over the cell's fit episodes) is
    ``best`` (``best_sums``), against honesty: chosen on the fit half, measured on the test half."""
    fit, fit_views, fit_cells = fit_half
    test, test_views, test_cells = test_half
    n_cells = len(counts)
    half = fit.n
    honest_policy.reset(seed=0)
    honest_fit = honest_policy.act_batch(fit_views)
    honest_fit_payoff, _ = expected_payoffs(config, fit, honest_fit, validator_policy)
    honest_sums = np.bincount(fit_cells, weights=honest_fit_payoff, minlength=n_cells)
    # where the best artifact does no better than honesty on the fit half, or the cell is unseen, be honest
    better = best_sums > honest_sums + 1e-9
    table = np.where((counts > 0) & better, best, -1)

    honest_policy.reset(seed=1)
    honest_test = honest_policy.act_batch(test_views)
    choice = table[test_cells]
    deviating = choice >= 0
    br_sub = artifact_submissions(test_views, artifacts[np.maximum(choice, 0)])
    br_sub = _merge(deviating, br_sub, honest_test)
    br_payoff, _ = expected_payoffs(config, test, br_sub, validator_policy)
    honest_payoff, _ = expected_payoffs(config, test, honest_test, validator_policy)
    diff = br_payoff - honest_payoff
    se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.nan
    noncompliant = ~test.compliant
    lies = _misreports(br_sub, test, test_views) & noncompliant
    deviations: dict[int, int] = {}
    for a in choice[lies & deviating]:  # honest cells (choice -1) lie only by sincere mistake: not a deviation
        deviations[int(a)] = deviations.get(int(a), 0) + 1
    dev_list = sorted(
        (count / len(choice), describe_artifact(artifacts[a], config.claim_schema))
        for a, count in deviations.items()
        if count / len(choice) >= 0.001  # cells too rare to matter are left out of the description
    )[::-1]
    return ProposerBestResponse(
        config=config,
        validator=str(validator),
        episodes=2 * half,
        best_payoff=float(br_payoff.mean()),
        honest_payoff=float(honest_payoff.mean()),
        gap=float(diff.mean()),
        gap_ci=(float(diff.mean() - 1.96 * se), float(diff.mean() + 1.96 * se)),
        misreport_rate=float(lies.sum() / max(int(noncompliant.sum()), 1)),
        honest_misreport_rate=float(
            (_misreports(honest_test, test, test_views) & noncompliant).sum() / max(int(noncompliant.sum()), 1)
        ),
        table=table,
        deviations=dev_list,
    )


# validators whose decisions never read q: each artifact's audit scenarios serve every q of a grid
_Q_FREE_VALIDATORS = ("RuleValidator", "AlwaysApprove", "AlwaysBlock")
_BLOCK_ROWS = 1 << 17  # episodes x artifacts worked out in one batch


def _tile(nature: Nature, m: int) -> Nature:
    """``nature``'s episodes ``m`` times over, one copy after another."""
    values: dict[str, Any] = {
        k: (np.tile(v, (m,) + (1,) * (v.ndim - 1)) if isinstance(v, np.ndarray) else v)
        for k, v in nature.__dict__.items()
    }
    return Nature(**values)


def proposer_best_responses(
    config: ExchangeAuditConfig,
    qs: Any,
    validator: Any = "rule",
    *,
    episodes: int = 100_000,
    seed: int = 0,
    honest: Any = None,
    progress: bool | None = False,
    bar: Any = None,
) -> list[ProposerBestResponse]:
    """:func:`proposer_best_response` of ``config`` at every audit intensity of ``qs``, the same results, faster.

    The proposer's payoff under each audit scenario (not audited; audited, checking one subset of the pool)
    does not depend on q when the validator does not read it (the scripted validators), so each artifact's
    scenarios are computed once and weighed by every q's probabilities, in the order
    :func:`expected_payoffs` adds them. Any other validator is searched q by q. ``bar``: a tqdm bar to advance
    by one per artifact (instead of ``progress``'s own).
    """
    qs = [float(q) for q in qs]
    configs = [config.replace(q=q) for q in qs]
    if honest is None:
        honest = "honest:claims_from=truth,words=0" if config.reveal_compliance else "honest:words=0"
    honest_policy, validator_policy = _bulk(honest, validator)
    if type(validator_policy).__name__ not in _Q_FREE_VALIDATORS:
        return [
            proposer_best_response(c, validator, episodes=episodes, seed=seed, honest=honest, progress=progress)
            for c in configs
        ]
    half = episodes // 2
    nature = draw_nature(config, DrawStream(seed), 2 * half)
    fit, test = _split(nature, half)
    fit_views, test_views = proposer_batch(fit, config), proposer_batch(test, config)
    fit_cells, test_cells = _proposer_cells(fit_views), _proposer_cells(test_views)
    n_cells = int(max(fit_cells.max(initial=0), test_cells.max(initial=0))) + 1
    artifacts = all_artifacts(config.claim_schema)
    counts = np.bincount(fit_cells, minlength=n_cells)
    plans = [_scenarios(c) for c in configs]
    subsets = list(dict.fromkeys(s for plan in plans for _, s in plan))
    best = [np.zeros(n_cells, dtype=np.int64) for _ in qs]
    best_sums = [np.full(n_cells, -np.inf) for _ in qs]
    own_bar = bar is None
    if own_bar:
        bar = tqdm(
            total=len(artifacts),
            desc="proposer best responses",
            unit="artifact",
            disable=None if progress is None else not progress,
        )
    # artifacts in blocks, each block's episodes side by side in one batch (the same rows, fewer calls)
    per_block = max(1, _BLOCK_ROWS // max(fit.n, 1))
    tiled: dict[int, tuple[Nature, Any, np.ndarray]] = {}
    for start in range(0, len(artifacts), per_block):
        block = artifacts[start : start + per_block]
        m = len(block)
        if m not in tiled:
            nature_m = _tile(fit, m)
            cells_m = np.tile(fit_cells, m) + np.repeat(np.arange(m), fit.n) * n_cells
            tiled[m] = (nature_m, proposer_batch(nature_m, config), cells_m)
        nature_m, views_m, cells_m = tiled[m]
        sub = artifact_submissions(views_m, np.repeat(block, fit.n, axis=0))
        scenario_payoff = {}
        for subset in subsets:
            audit = _audit(sub, nature_m, config, subset)
            seen = validator_audit(audit, config)
            approve = np.asarray(
                validator_policy.act_batch(ValidatorBatch(config, sub, seen, nature_m.ambiguous, nature_m.risk_limit)),
                dtype=bool,
            )
            scenario_payoff[subset], _ = payoffs_batch(sub, sub.request & approve, audit, nature_m.compliant, config)
        for i, plan in enumerate(plans):
            payoff = np.zeros(nature_m.n)
            for prob, subset in plan:
                payoff += prob * scenario_payoff[subset]
            sums = np.bincount(cells_m, weights=payoff, minlength=m * n_cells).reshape(m, n_cells)
            first = np.argmax(sums, axis=0)  # the block's first best artifact per cell, as argmax over all picks
            value = sums[first, np.arange(n_cells)]
            better = value > best_sums[i]  # (strictly: an earlier block's equal artifact stays)
            best[i] = np.where(better, start + first, best[i])
            best_sums[i] = np.where(better, value, best_sums[i])
        bar.update(m)
    if own_bar:
        bar.close()
    return [
        _best_response(
            c,
            validator,
            honest_policy,
            validator_policy,
            (fit, fit_views, fit_cells),
            (test, test_views, test_cells),
            counts,
            best[i],
            best_sums[i],
            artifacts,
        )
        for i, c in enumerate(configs)
    ]


def proposer_payoff(
    config: ExchangeAuditConfig, proposer: Any, validator: Any = "rule", *, episodes: int = 100_000, seed: int = 0
) -> float:
    """A proposer's mean payoff on the very episodes :func:`proposer_best_response` measures its best
    response on (same ``episodes`` and ``seed``): the two compare pairwise."""
    policy, validator_policy = _bulk(proposer, validator)
    half = episodes // 2
    _, test = _split(draw_nature(config, DrawStream(seed), 2 * half), half)
    policy.reset(seed=1)
    payoff, _ = expected_payoffs(config, test, policy.act_batch(proposer_batch(test, config)), validator_policy)
    return float(payoff.mean())


def _bulk(proposer: Any, validator: Any) -> tuple[Any, Any]:
    """Both policies, made from specs if need be; each must act in bulk (exact expectations need it)."""
    policies = make_policy(proposer, "proposer"), make_policy(validator, "validator")
    for p in policies:
        if not is_batchable(p):
            raise ValueError(f"the best-response search needs policies that act in bulk; {p!r} does not")
    return policies


def _split(nature: Nature, half: int) -> tuple[Nature, Nature]:
    def part(sl: slice) -> Nature:
        values: dict[str, Any] = {k: (v[sl] if isinstance(v, np.ndarray) else v) for k, v in nature.__dict__.items()}
        return Nature(**values)

    return part(slice(0, half)), part(slice(half, 2 * half))


def _merge(take_first: np.ndarray, first: SubmissionBatch, second: SubmissionBatch) -> SubmissionBatch:
    """Row-wise: ``first`` where ``take_first``, else ``second``."""
    texts = None
    if first.texts is not None and second.texts is not None:  # (texts: only when a validator reads them)
        texts = [a if t else b for t, a, b in zip(take_first.tolist(), first.texts, second.texts, strict=True)]
    nothing = np.full(len(take_first), np.nan)
    return SubmissionBatch(
        **{
            k: np.where(take_first, getattr(first, k), getattr(second, k)).astype(getattr(first, k).dtype)
            for k in first.__dataclass_fields__
            if k not in ("texts", "extra_claims")
        },
        texts=texts,
        extra_claims={
            name: np.where(take_first, first.extra_claims.get(name, nothing), second.extra_claims.get(name, nothing))
            for name in {**first.extra_claims, **second.extra_claims}
        },
    )


# ---------------------------------------------------------------------------
# The validator's best response
# ---------------------------------------------------------------------------
def _validator_cells(v: ValidatorBatch) -> np.ndarray:
    """The cell of a validator's observation: what the rule engine reads, the audit, ambiguity."""
    a, r = v.audit, rule_signals(v)
    revealed = (a.revealed_compliant + 1).astype(np.int64)  # 0 none, 1 non-compliant, 2 compliant
    cell = v.ambiguous.astype(np.int64)
    for part, size in (
        (a.outcome.astype(np.int64), 4),
        (revealed, 3),
        (r.asserts, 2),
        (r.comfortable, 2),
        (r.within, 2),
        (r.explained, 2),
    ):
        cell = cell * size + np.asarray(part, dtype=np.int64)
    return cell


@dataclass
class ValidatorBestResponse:
    """A validator's best response to one proposer, against a reference validator."""

    config: ExchangeAuditConfig
    proposer: str
    reference: str
    episodes: int
    best_payoff: float
    reference_payoff: float
    gap: float
    gap_ci: tuple[float, float]
    changes: list[tuple[float, str]]  # (share of decisions, description) where the best response differs

    def summary(self) -> str:
        lines = [
            f"validator: best response {self.best_payoff:.4f}, {self.reference} {self.reference_payoff:.4f}, gap "
            f"{self.gap:+.4f} ({_ci_text(self.gap_ci)}) per episode"
        ]
        if self.changes:
            lines.append("  where the best response decides otherwise (share of decisions):")
            lines += [f"    {share:6.1%}  {text}" for share, text in self.changes[:5]]
        else:
            lines.append("  it decides as the reference everywhere it matters")
        return "\n".join(lines)


def _describe_validator_cell(cell: int) -> str:
    parts = []
    for name, size in reversed(
        (("outcome", 4), ("revealed", 3), ("asserts", 2), ("comfortable", 2), ("within", 2), ("explained", 2))
    ):
        parts.append((name, cell % size))
        cell //= size
    d = dict(parts)
    outcome = AuditOutcome(d["outcome"]).name.lower()
    revealed = {0: "", 1: ", revealed non-compliant", 2: ", revealed compliant"}[d["revealed"]]
    return (
        f"{'ambiguous' if cell else 'normal'}, audit {outcome}{revealed}, claims "
        f"{'assert' if d['asserts'] else 'do not assert'} compliance, numbers "
        f"{'comfortable' if d['comfortable'] else 'within limits' if d['within'] else 'beyond a limit'}"
    )


def validator_best_response(
    config: ExchangeAuditConfig,
    proposer: Any = "honest",
    *,
    reference: Any = "rule",
    episodes: int = 100_000,
    seed: int = 0,
    progress: bool | None = False,
) -> ValidatorBestResponse:
    """Search the validator's best response to ``proposer``, measured against ``reference``.

    ``progress`` shows a bar over its steps: each half's proposals and audits, then the decisions
    (``None``: only on a terminal).
    """
    proposer_policy, reference_policy = _bulk(proposer, reference)
    half = episodes // 2
    nature = draw_nature(config, DrawStream(seed), 2 * half)
    halves = _split(nature, half)
    batches = []
    bar = tqdm(total=3, desc="validator best response", unit="step", disable=None if progress is None else not progress)
    for part, s in zip(halves, (0, 1), strict=True):
        proposer_policy.reset(seed=s)
        sub = withhold_batch(proposer_policy.act_batch(proposer_batch(part, config)), config)
        audit = run_audit_batch(sub, part, config)
        batches.append((part, sub, audit, ValidatorBatch(config, sub, audit, part.ambiguous, part.risk_limit)))
        bar.update(1)
    (fit, fsub, _, fview), (test, tsub, taudit, tview) = batches
    gain = np.where(fit.compliant, config.V, -config.bad_approval_loss) * fsub.request  # what approving adds
    cells, test_cells = _validator_cells(fview), _validator_cells(tview)
    n_cells = int(max(cells.max(initial=0), test_cells.max(initial=0))) + 1
    approve_cell = np.bincount(cells, weights=gain, minlength=n_cells) > 0
    reference_policy.reset(seed=0)
    ref_decision = np.asarray(reference_policy.act_batch(tview)).astype(bool) & tsub.request
    br_decision = approve_cell[test_cells] & tsub.request
    _, br_payoff = payoffs_batch(tsub, br_decision, taudit, test.compliant, config)
    _, ref_payoff = payoffs_batch(tsub, ref_decision, taudit, test.compliant, config)
    diff = br_payoff - ref_payoff
    se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.nan
    changed = br_decision != ref_decision
    counts: dict[tuple[int, bool], int] = {}
    for c, b in zip(test_cells[changed].tolist(), br_decision[changed].tolist(), strict=True):
        counts[(c, b)] = counts.get((c, b), 0) + 1
    decisions = max(int(tsub.request.sum()), 1)
    changes = sorted(
        (
            (k / decisions, f"{'APPROVE' if b else 'BLOCK'} where: {_describe_validator_cell(c)}")
            for (c, b), k in counts.items()
        ),
        reverse=True,
    )
    bar.update(1)
    bar.close()
    return ValidatorBestResponse(
        config=config,
        proposer=str(proposer),
        reference=str(reference),
        episodes=2 * half,
        best_payoff=float(br_payoff.mean()),
        reference_payoff=float(ref_payoff.mean()),
        gap=float(diff.mean()),
        gap_ci=(float(diff.mean() - 1.96 * se), float(diff.mean() + 1.96 * se)),
        changes=changes,
    )


def _ci_text(ci: tuple[float, float]) -> str:
    """A gap's 95% interval, or why there is none (fewer than two measured episodes)."""
    if math.isnan(ci[0]) or math.isnan(ci[1]):
        return "no 95% CI: fewer than two measured episodes"
    return f"95% CI {ci[0]:+.4f} to {ci[1]:+.4f}"


# ---------------------------------------------------------------------------
# The paper's incentive condition
# ---------------------------------------------------------------------------
def detection_given_audit(lies: int, checks: int, pool: int = 4) -> float:
    """P(at least one of ``lies`` false claims is among ``checks`` sampled of the ``pool`` checkable ones (the
    paper's four, or a claim schema's pool))."""
    if lies <= 0 or checks <= 0:
        return 0.0
    return 1.0 - detection_miss_table(min(checks, pool), pool)[min(lies, pool)]


def game_threshold(config: ExchangeAuditConfig) -> float:
    """This game's smallest q deterring the cheapest lie (numbers shaded inside the limits, no false
    claim): it is never fined, only blocked when audited, so it pays (1 − q)·V against NO_TRADE's
    sure ``no_trade_payoff`` while q < 1 − no_trade_payoff / V; whatever L and B."""
    return max(0.0, 1.0 - config.no_trade_payoff / config.V) if config.V > 0 else 0.0


def analytic_threshold(V: float, L: float, checks: int, lies: int = 1, extra_cost: float = 0.0, pool: int = 4) -> float:
    """Eq. 3's smallest q deterring a misreport with ``lies`` false claims: (V + ΔC) / ((V + L)·π).

    π is the chance an audit checking ``checks`` of the ``pool`` checkable claims (the paper's four, or a claim
    schema's pool) checks at least one of the false claims. Returns inf when no q ≤ 1 deters it (π too small),
    and 0 when misreporting never pays.
    """
    pi = detection_given_audit(lies, checks, pool)
    need = V + extra_cost
    if need <= 0:
        return 0.0
    if pi <= 0:
        return math.inf
    q = need / ((V + L) * pi)
    return q if q <= 1.0 else math.inf
