"""The proposer's best response in the repeated game, by dynamic programming over the reputation state.

**Stage strategies.** In each round the proposer plays one of a few *stage strategies* (:func:`stage_strategies`),
scripted proposers of the one-shot game that differ only in what they do with a position they know (or believe)
non-compliant:

* ``honest`` — NO_TRADE, with its true claims (the honest proposer, no text);
* ``shade`` — request approval with the reported risk and net delta shaded just inside the limits and the
  claims true: never fined (no claim is false) and approved unless audited; an audit reveals the trade
  non-compliant, so the request is blocked and the audit *fails*
  (:class:`~eq_env.exchange_audit.repeated.rules.Verdict`). In the one-shot game it is the cheapest lie (the
  deterrence frontier of ``eq-env frontier``): it pays while (1 − q)·V > no_trade_payoff;
* ``false_claims`` — the same request with claims asserting compliance: fined L when a false claim is checked.

(Shading with the claims withheld needs no entry: its audit is inconclusive, the request blocked and the audit
failed, as ``shade``'s.)

**What a round is worth.** For a stage strategy σ the batch engine (:mod:`eq_env.exchange_audit.batch`) plays
the same sampled positions (common random numbers) twice: not audited, and audited (exact over the C(4, B)
claim subsets an audit may check). A round at intensity q is then worth, exactly in q,

    r_σ(q) = (1 − q)·r_σ⁰ + q·r_σ¹,

and its verdict is clean with probability q·κᶜ_σ, failed with q·κᶠ_σ, none otherwise (κ: given an audit).
Welfare, bad approvals and the validator's payoff are linear in q the same way. (A stage strategy must not read
q — the honest and strategic proposers with ``trigger="probability"`` do not; :func:`estimate_stage` checks.)

**The reputation state** (:class:`ReputationStates`) is what the audit policy reads: nothing (``fixed``), the
clean-audit count capped where q reaches q_min (``decay``), or the punishment rounds left (``trigger``). Its
transitions follow the round's verdict (:func:`~eq_env.exchange_audit.repeated.rules.next_reputation`).

**The dynamic programme.** With T rounds at most and continuation δ (δ = 1: exactly T),

    V_T(s) = 0,   V_t(s) = max_σ [ r_σ(q_s) + δ·Σ_v P_σ(v | q_s)·V_{t+1}(s'(s, v)) ],

solved backwards (:func:`solve`); the argmax per (round, state) is the best response (ties go to honesty). The
proposer sees the record, so a Markov policy in (t, s) is optimal among all its history-dependent strategies
over the menu — the tests check it against brute-force enumeration. :func:`evaluate` runs a policy forward
(the distribution over states round by round, weighted by the chance δ^t that round t is played) for its value
and its per-round averages: welfare, audit cost c·q_t, bad approvals, q_t, and its *misreport rate on the
path* (misreported requests in non-compliant rounds over non-compliant rounds, as the one-shot best response
counts them). :func:`repeated_best_response` chooses the policy on one half of the sampled positions and
measures it on the other, against honesty for ever.

**The repeated-game deterrence condition.** Honesty for ever is a best response iff no single deviation from it
pays at any state honest play reaches, the deviator's future valued at its best (the one-shot deviation
principle). With R_σ(s) = r_σ(q_s), V* the values of the best response and P_σ the verdict transitions, the
condition at state s is

    R_ℓ(s) − R_h(s) ≤ δ·[P_h(s) − P_ℓ(s)]·V*        for every lie ℓ,        (*)

the one-shot gain against the future it costs. Both halves matter. A state honest play never reaches (a
punishment an honest proposer never earns) is not checked: honesty may stay a best response although a lie
pays there, when getting there costs more than it brings. But the future there is the deviator's best, not
honesty's: where a lenient "punishment" (q_punish below q) makes lying pay, a lie that gets caught leads to
it, and valuing it as honest play would call a profitable detour deterred. Where honesty is a best response
in every state, V* = W, the values of honesty for ever. :func:`deterrence_holds` checks (*) exactly (V* by
policy iteration from honesty, each step a linear system; for δ = 1 backwards over the T rounds). In closed
form:

* ``fixed`` q: the state never changes, the right side is 0: a lie is deterred iff it does not pay in one
  round, q ≥ q*₁ (for the shading lie q*₁ = 1 − no_trade_payoff/V: 0.5 at V = 2). Repetition changes nothing.
* ``trigger`` with a grim punishment q_p (a failed audit: q = q_p for ever): with φ_σ = κᶠ_σ,

      R_ℓ(q) − R_h(q) ≤ δ·q·(φ_ℓ − φ_h)·[R_h(q) − R*(q_p)] / (1 − δ + δ·q·φ_h),

  R*(q_p) = max_σ R_σ(q_p) the best a punished proposer can do each round (R_h(q_p) when honesty is best at
  q_p, as under q_p ≥ q*₁); the brief's "one-shot gain ≤ δ·q·π·(loss of future rents)/(1 − δ)" when an
  honest proposer never fails (φ_h = 0). The future rent lost is R_h(q) − R_h(q_p): what *more audits cost an
  honest proposer*. In the
  paper's game with known compliance (preset ``paper_scripted``) an audit never fails an honest proposer and
  even gets it approved where its noisy numbers sit beyond a limit, so R_h rises with q: the punishment is no
  punishment, the right side is ≤ 0, and the trigger deters no lie the one-shot game does not (slightly fewer:
  a caught liar is better off audited). It bites when audits cost honest proposers something: sincere errors
  (preset ``paper``), false fails (noisy audits).
* ``decay`` to q_min: once q sits at the floor, a liar caught there stays there (without ``reset_on_fail``),
  so (*) at the floor is the one-shot condition at q_min: a patient liar exploits any floor q_min < q*₁. It
  builds the reputation honestly (clean audits come only from honest rounds), then lies for ever — the best
  response says from which clean-audit count. With ``reset_on_fail`` a caught liar must rebuild, which costs
  it R_h(q_min) − R_h(q_c) per rebuilding round: again nothing when R_h does not fall with q.

So the repeated game holds honesty at a lower average q than the one-shot frontier only where audits cost the
honest proposer; ``eq-env repeated`` (:mod:`.experiment`) measures it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eq_env.core.policy import BasePolicy, make_policy
from eq_env.exchange_audit.batch import (
    ValidatorBatch,
    draw_nature,
    payoffs_batch,
    proposer_batch,
    validator_audit,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import _audit, _bulk, _misreports, _split
from eq_env.exchange_audit.repeated.rules import FOREVER, RepeatedConfig, Reputation, Verdict, audit_intensity
from eq_env.exchange_audit.rules import AuditOutcome, DrawStream

__all__ = [
    "STRATEGY_NAMES",
    "BestResponse",
    "DPProposer",
    "PathStats",
    "ReputationStates",
    "StageStrategy",
    "deterrence_holds",
    "estimate_stage",
    "evaluate",
    "repeated_best_response",
    "reputation_states",
    "solve",
    "stage_strategies",
]

STRATEGY_NAMES = ("honest", "shade", "false_claims")
_TIE = 1e-12  # a lie must beat honesty by more than this (float dust) to be chosen


def stage_strategies(stage: ExchangeAuditConfig) -> dict[str, str]:
    """The menu of stage strategies (module docstring) as policy specs, judging compliance from what the
    proposer knows: the truth when ``reveal_compliance`` (preset ``paper_scripted``), else its observation."""
    claims = "truth" if stage.reveal_compliance else "observation"
    return {
        "honest": f"honest:claims_from={claims},words=0",
        "shade": f"strategic:p=1.0,truthful_claims=true,claims_from={claims},words=0",
        "false_claims": f"strategic:p=1.0,claims_from={claims},words=0",
    }


# ---------------------------------------------------------------------------
# What a round is worth
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StageStrategy:
    """What a stage strategy does in a round, per round on average: (not audited, audited) pairs, linear in q."""

    name: str
    spec: str
    proposer: tuple[float, float]
    validator: tuple[float, float]
    approved: tuple[float, float]
    bad_approved: tuple[float, float]  # approved and non-compliant
    clean: float  # P(clean verdict | audited)
    failed: float  # P(failed verdict | audited)
    misreport: float  # share of rounds with a misreported request in a non-compliant position
    noncompliant: float  # share of rounds whose position is non-compliant

    def at(self, name: str, q: Any) -> Any:
        """The per-round mean of ``name`` at intensity ``q`` (a number or an array)."""
        low, high = getattr(self, name)
        return (1.0 - q) * low + q * high

    @property
    def welfare(self) -> tuple[float, float]:
        return (self.proposer[0] + self.validator[0], self.proposer[1] + self.validator[1])


def _verdicts(sub: Any, audit: Any, checks_per_audit: int) -> tuple[np.ndarray, np.ndarray]:
    """(clean, failed) per episode (:func:`~eq_env.exchange_audit.repeated.rules.audit_verdict` for arrays)."""
    passed = audit.outcome == AuditOutcome.PASS
    shaded = passed & sub.request & (audit.revealed_compliant == 0)
    withheld = (audit.outcome == AuditOutcome.INCONCLUSIVE) & sub.request & (checks_per_audit > 0)
    return passed & ~shaded, (audit.outcome == AuditOutcome.FAIL) | shaded | withheld


def _stage_strategy(
    name: str, spec: str, config: ExchangeAuditConfig, nature: Any, policy: Any, validator: Any
) -> StageStrategy:
    views = proposer_batch(nature, config)
    policy.reset(seed=0)
    sub = policy.act_batch(proposer_batch(nature, config.replace(q=0.0)))
    policy.reset(seed=0)
    other = policy.act_batch(proposer_batch(nature, config.replace(q=1.0)))
    if not all(np.array_equal(getattr(sub, k), getattr(other, k)) for k in sub.__dataclass_fields__):
        raise ValueError(
            f"stage strategy {name!r} ({spec}) acts differently at another q: the dynamic programme "
            "needs stage strategies that do not read q"
        )
    k = config.checks_per_audit
    subsets: list[tuple[int, ...]] = list(itertools.combinations(range(4), k)) if k > 0 else [()]
    sums: dict[str, list[np.ndarray]] = {}
    for path in [None, *subsets]:  # (not audited, then every subset an audit may check)
        audit = _audit(sub, nature, config, path)
        seen = validator_audit(audit, config)
        approve = np.asarray(
            validator.act_batch(ValidatorBatch(config, sub, seen, nature.ambiguous, nature.risk_limit)), dtype=bool
        )
        approved = sub.request & approve
        p, v = payoffs_batch(sub, approved, audit, nature.compliant, config)
        clean, failed = _verdicts(sub, audit, k)
        values = {
            "proposer": p,
            "validator": v,
            "approved": approved,
            "bad": approved & ~nature.compliant,
            "clean": clean,
            "failed": failed,
        }
        for key, x in values.items():
            sums.setdefault(key, []).append(np.asarray(x, dtype=np.float64))

    def pair(key: str) -> tuple[float, float]:
        unaudited, audited = sums[key][0], np.mean(sums[key][1:], axis=0)
        return float(unaudited.mean()), float(audited.mean())

    noncompliant = ~nature.compliant
    return StageStrategy(
        name=name,
        spec=spec,
        proposer=pair("proposer"),
        validator=pair("validator"),
        approved=pair("approved"),
        bad_approved=pair("bad"),
        clean=pair("clean")[1],
        failed=pair("failed")[1],
        misreport=float((_misreports(sub, nature, views) & noncompliant).mean()),
        noncompliant=float(noncompliant.mean()),
    )


Estimates = Mapping[str, StageStrategy]


def estimate_stage(
    stage: ExchangeAuditConfig,
    strategies: Mapping[str, str] | None = None,
    validator: Any = "rule",
    *,
    episodes: int = 20_000,
    seed: int = 0,
) -> tuple[dict[str, StageStrategy], dict[str, StageStrategy]]:
    """Each stage strategy's round, on two halves of ``episodes`` positions of ``seed`` (the same positions for
    every strategy): (fit, test). ``strategies``: name → policy spec (default :func:`stage_strategies`), the
    honest one first (ties go to it). The stage game's q does not matter (the audit enters exactly)."""
    if stage.claim_schema != "paper":  # (the audit is enumerated over the paper's pool of four claims)
        raise ValueError(
            f"the dynamic programme plays the paper's claim schema, got claim_schema={stage.claim_schema!r}"
        )
    strategies = dict(stage_strategies(stage) if strategies is None else strategies)
    if not strategies:
        raise ValueError("the dynamic programme needs at least one stage strategy")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 4:
        raise ValueError(f"episodes must be an integer of at least 4 (two halves), got {episodes!r}")
    half = episodes // 2
    fit, test = _split(draw_nature(stage, DrawStream(seed), 2 * half), half)
    out: tuple[dict[str, StageStrategy], dict[str, StageStrategy]] = ({}, {})
    for name, spec in strategies.items():
        policy, validator_policy = _bulk(spec, validator)
        for part, nature in zip(out, (fit, test), strict=True):
            part[name] = _stage_strategy(name, spec, stage, nature, policy, validator_policy)
    return out


# ---------------------------------------------------------------------------
# The reputation state
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ReputationStates:
    """The states of the record an audit policy reads, their q and where each verdict leads."""

    policy: str
    labels: tuple[str, ...]
    q: np.ndarray  # (S,)
    next: np.ndarray  # (S, 3): the next state after a NONE, CLEAN, FAILED verdict
    forever: bool = False  # trigger: the punishment lasts to the end

    @property
    def n(self) -> int:
        return len(self.labels)

    def index(self, reputation: Reputation) -> int:
        """The state of a record."""
        if self.policy == "decay":
            return min(reputation.clean, self.n - 1)
        if self.policy == "trigger":
            if reputation.punish_left == FOREVER:
                return 1
            return min(reputation.punish_left, self.n - 1)
        return 0

    def index_of_history(self, history: Mapping[str, Any]) -> int:
        """The state of an observation's decoded history (:func:`~.env.decode_history`)."""
        if self.policy == "decay":
            return min(int(history["clean_audits"]), self.n - 1)
        if self.policy == "trigger":
            punish = int(history["punish_left"])
            return (1 if punish > 0 else 0) if self.forever else min(punish, self.n - 1)
        return 0

    def transitions(self, strategy: StageStrategy) -> np.ndarray:
        """(S, S): P(next state | state) when ``strategy`` is played."""
        matrix = np.zeros((self.n, self.n))
        rows = np.arange(self.n)
        p_clean, p_failed = self.q * strategy.clean, self.q * strategy.failed
        np.add.at(matrix, (rows, self.next[:, Verdict.NONE]), 1.0 - p_clean - p_failed)
        np.add.at(matrix, (rows, self.next[:, Verdict.CLEAN]), p_clean)
        np.add.at(matrix, (rows, self.next[:, Verdict.FAILED]), p_failed)
        return matrix


def reputation_states(config: RepeatedConfig) -> ReputationStates:
    """The reputation states of ``config``'s audit policy (module docstring); a decay's clean-audit count is
    capped where q reaches q_min, or at T − 1 (no episode counts more)."""
    policy = config.audit_policy
    if policy == "decay":
        cap = 0
        while cap < config.rounds - 1 and audit_intensity(config, Reputation(clean=cap)) > config.q_min:
            cap += 1
        counts = range(cap + 1)
        after_fail = [0 if config.reset_on_fail else c for c in counts]
        nxt = np.array([[c, min(c + 1, cap), f] for c, f in zip(counts, after_fail, strict=True)], dtype=np.int64)
        labels = tuple(f"clean {c}" + ("+" if c == cap else "") for c in counts)
        return ReputationStates(
            policy, labels, np.array([audit_intensity(config, Reputation(clean=c)) for c in counts]), nxt
        )
    if policy == "trigger":
        if config.punish_rounds is None:
            q = np.array([config.q, config.q_punish])
            return ReputationStates(policy, ("normal", "punished"), q, np.array([[0, 0, 1], [1, 1, 1]]), forever=True)
        k = config.punish_rounds
        nxt = np.array([[max(j - 1, 0), max(j - 1, 0), k] for j in range(k + 1)], dtype=np.int64)
        labels = ("normal", *(f"punished, {j} left" for j in range(1, k + 1)))
        q = np.array([audit_intensity(config, Reputation(punish_left=j)) for j in range(k + 1)])
        return ReputationStates(policy, labels, q, nxt)
    return ReputationStates(policy, ("any",), np.array([config.q]), np.zeros((1, 3), dtype=np.int64))


# ---------------------------------------------------------------------------
# The dynamic programme and the forward pass
# ---------------------------------------------------------------------------
# A state has at most three successors (one per verdict), so the transitions are kept as (K, S, 3) probabilities
# beside ReputationStates.next (S, 3), never as (K, S, S) matrices: a decay's states number up to T, and a
# patient horizon (δ = 0.999: T ≈ 9200) would otherwise need gigabytes and hours.
def _arrays(states: ReputationStates, strategies: Sequence[StageStrategy]) -> tuple[np.ndarray, np.ndarray]:
    """Rewards (K, S) and verdict probabilities (K, S, 3: NONE, CLEAN, FAILED) of every strategy in every
    state; a verdict leads to ``states.next[:, verdict]``."""
    rewards = np.array([s.at("proposer", states.q) for s in strategies])
    clean = np.array([states.q * s.clean for s in strategies])
    failed = np.array([states.q * s.failed for s in strategies])
    return rewards, np.stack([1.0 - clean - failed, clean, failed], axis=-1)


def _expected(states: ReputationStates, probs: np.ndarray, value: np.ndarray) -> np.ndarray:
    """E[value(next state)] per strategy and state: (K, S) from verdict probabilities (K, S, 3)."""
    return np.einsum("ksv,sv->ks", probs, value[states.next])


def _forward(states: ReputationStates, probs: np.ndarray, share: np.ndarray) -> np.ndarray:
    """The distribution over states after a round in which state s plays with verdict probabilities probs[s]."""
    return np.bincount(states.next.ravel(), weights=(share[:, None] * probs).ravel(), minlength=states.n)


def solve(
    states: ReputationStates, strategies: Sequence[StageStrategy], rounds: int, continuation: float
) -> tuple[np.ndarray, np.ndarray]:
    """The best response by backward induction: (policy (T, S) of strategy indices, values V_0 (S,))."""
    rewards, probs = _arrays(states, strategies)
    value = np.zeros(states.n)
    policy = np.zeros((rounds, states.n), dtype=np.int64)
    columns = np.arange(states.n)
    for t in reversed(range(rounds)):
        go_on = continuation if t + 1 < rounds else 0.0
        q_values = rewards + go_on * _expected(states, probs, value)  # (K, S)
        best = np.argmax(q_values, axis=0)
        # honesty (strategy 0) unless a lie beats it by more than float dust
        best = np.where(q_values[best, columns] > q_values[0] + _TIE, best, 0)
        policy[t] = best
        value = q_values[best, columns]
    return policy, value


@dataclass(frozen=True)
class PathStats:
    """A policy run forward: its value per episode and per-round averages along its path."""

    value: float  # expected proposer payoff per episode
    rounds: float  # expected rounds per episode
    welfare: float  # per round
    proposer: float
    validator: float
    approved: float
    bad_approved: float
    mean_q: float
    audit_cost: float  # c·q_t per round
    misreport_rate: float  # misreported requests in non-compliant rounds / non-compliant rounds
    lie_rounds: float  # share of rounds played with a lie (any strategy but the first)


def evaluate(
    states: ReputationStates,
    strategies: Sequence[StageStrategy],
    policy: np.ndarray,
    rounds: int,
    continuation: float,
    audit_cost: float,
) -> PathStats:
    """Run ``policy`` (T, S) forward from the blank record: expected totals, per round along its path."""
    _, probs = _arrays(states, strategies)
    columns = np.arange(states.n)
    share = np.zeros(states.n)
    share[0] = 1.0  # (state 0: the blank record, for every policy)
    weight = 1.0
    totals = dict.fromkeys(
        ("proposer", "validator", "approved", "bad_approved", "q", "misreport", "noncompliant", "rounds", "lie"), 0.0
    )
    for t in range(rounds):
        choice = policy[t]
        for k, strategy in enumerate(strategies):
            mass = share * (choice == k)
            if not mass.any():
                continue
            w = weight * mass
            totals["proposer"] += float(w @ strategy.at("proposer", states.q))
            totals["validator"] += float(w @ strategy.at("validator", states.q))
            totals["approved"] += float(w @ strategy.at("approved", states.q))
            totals["bad_approved"] += float(w @ strategy.at("bad_approved", states.q))
            totals["misreport"] += float(w.sum()) * strategy.misreport
            totals["noncompliant"] += float(w.sum()) * strategy.noncompliant
            totals["lie"] += float(w.sum()) * (k != 0)
        totals["q"] += weight * float(share @ states.q)
        totals["rounds"] += weight
        share = _forward(states, probs[choice, columns], share)
        weight *= continuation
    n = totals["rounds"]
    return PathStats(
        value=totals["proposer"],
        rounds=n,
        welfare=(totals["proposer"] + totals["validator"]) / n,
        proposer=totals["proposer"] / n,
        validator=totals["validator"] / n,
        approved=totals["approved"] / n,
        bad_approved=totals["bad_approved"] / n,
        mean_q=totals["q"] / n,
        audit_cost=audit_cost * totals["q"] / n,
        misreport_rate=totals["misreport"] / totals["noncompliant"] if totals["noncompliant"] else math.nan,
        lie_rounds=totals["lie"] / n,
    )


@dataclass(frozen=True)
class BestResponse:
    """The proposer's best response to an audit policy, chosen on one half of the positions, measured on the
    other against honesty for ever."""

    config: RepeatedConfig
    states: ReputationStates
    strategies: tuple[StageStrategy, ...]  # (the measured half's)
    policy: np.ndarray  # (T, S): index into strategies
    best: PathStats
    honest: PathStats

    @property
    def gain(self) -> float:
        """Per episode, what the best response earns beyond honesty for ever."""
        return self.best.value - self.honest.value

    def strategy(self, t: int, reputation: Reputation) -> str:
        """The stage strategy it plays in round ``t`` with this record."""
        return self.strategies[int(self.policy[t, self.states.index(reputation)])].name

    def describe(self) -> str:
        """Where it lies, in words: its choice per state in round 0 (and, with exactly T rounds, from which round
        it differs: the last rounds have less future to lose; a geometric horizon's cap is not shown, it is only
        there to end the computation)."""
        names = [s.name for s in self.strategies]

        def runs(row: np.ndarray) -> str:
            parts, start = [], 0
            for i in range(1, len(row) + 1):
                if i == len(row) or row[i] != row[start]:
                    labels = self.states.labels
                    where = labels[start] if i - 1 == start else f"{labels[start]} to {labels[i - 1]}"
                    parts.append(f"{where}: {names[row[start]]}")
                    start = i
            return "; ".join(parts)

        text = runs(self.policy[0])
        differs = [t for t in range(len(self.policy)) if not np.array_equal(self.policy[t], self.policy[0])]
        if differs and self.config.continuation >= 1.0:
            text += f" (from round {differs[0]}: {runs(self.policy[differs[0]])})"
        return text


def repeated_best_response(
    config: RepeatedConfig,
    validator: Any = "rule",
    *,
    episodes: int = 20_000,
    seed: int = 0,
    strategies: Mapping[str, str] | None = None,
    estimates: tuple[Estimates, Estimates] | None = None,
) -> BestResponse:
    """The proposer's best response to ``config``'s audit policy over the menu of stage strategies (module
    docstring). ``estimates``: :func:`estimate_stage`'s (fit, test) for ``config.stage``, if already made (they
    do not depend on q, so one estimate serves a whole grid of audit policies)."""
    fit, test = (
        estimates
        if estimates is not None
        else estimate_stage(config.stage, strategies, validator, episodes=episodes, seed=seed)
    )
    names = list(fit)
    states = reputation_states(config)
    policy, _ = solve(states, [fit[n] for n in names], config.rounds, config.continuation)
    measured = tuple(test[n] for n in names)
    cost = config.stage.audit_cost
    best = evaluate(states, measured, policy, config.rounds, config.continuation, cost)
    honest = evaluate(states, measured, np.zeros_like(policy), config.rounds, config.continuation, cost)
    return BestResponse(config, states, measured, policy, best, honest)


# ---------------------------------------------------------------------------
# The repeated-game condition
# ---------------------------------------------------------------------------
def _reachable(states: ReputationStates, probs: np.ndarray, start: int = 0) -> np.ndarray:
    """The states reached with positive probability from ``start`` under verdict probabilities (S, 3)."""
    seen = np.zeros(states.n, dtype=bool)
    frontier = [start]
    seen[start] = True
    while frontier:
        s = frontier.pop()
        for nxt in states.next[s][probs[s] > 0]:
            if not seen[nxt]:
                seen[nxt] = True
                frontier.append(int(nxt))
    return seen


_DENSE_SOLVE = 500  # up to this many states W comes from a dense linear solve; beyond, by value iteration


def _stationary_values(
    states: ReputationStates, reward: np.ndarray, probs: np.ndarray, continuation: float
) -> np.ndarray:
    """W = reward + δ·P·W, the values of one stage strategy per state played for ever (honesty, or any choice
    per state) on an unbounded horizon δ < 1 (P: (S, 3) verdict probabilities): a dense solve for a few states,
    else iterated to float precision (the error shrinks by δ per sweep, and each sweep costs O(S), not O(S²))."""
    if states.n <= _DENSE_SOLVE:
        moves = np.zeros((states.n, states.n))
        np.add.at(moves, (np.repeat(np.arange(states.n), 3), states.next.ravel()), probs.ravel())
        return np.linalg.solve(np.eye(states.n) - continuation * moves, reward)
    value = np.zeros(states.n)
    sweeps = 1 if continuation == 0.0 else math.ceil(math.log(1e-15) / math.log(continuation))
    for _ in range(sweeps):  # (error after k sweeps ≤ δ^k·max|reward|/(1 − δ))
        value = reward + continuation * np.einsum("sv,sv->s", probs, value[states.next])
    return value


def _best_values(states: ReputationStates, rewards: np.ndarray, probs: np.ndarray, continuation: float) -> np.ndarray:
    """V* = max_σ [R_σ + δ·P_σ·V*] on the unbounded horizon δ < 1, by policy iteration from honesty: evaluate a
    choice per state exactly, switch a state to a strategy that beats its choice by more than float dust,
    until none does (each switch raises every value, so it ends, in a few steps)."""
    columns = np.arange(states.n)
    choice = np.zeros(states.n, dtype=np.int64)
    while True:
        value = _stationary_values(states, rewards[choice, columns], probs[choice, columns], continuation)
        q_values = rewards + continuation * _expected(states, probs, value)
        best = np.argmax(q_values, axis=0)
        better = q_values[best, columns] > q_values[choice, columns] + _TIE
        if not better.any():
            return value
        choice = np.where(better, best, choice)


def deterrence_holds(
    states: ReputationStates, strategies: Sequence[StageStrategy], rounds: int, continuation: float
) -> bool:
    """Condition (*) of the module docstring: no single deviation from honesty for ever (strategy 0) pays at any
    state honest play reaches, the future valued at the best response's values V*. δ < 1 is taken as the
    unbounded geometric horizon (the cap T does not bind); δ = 1 as exactly T rounds, checked round by round."""
    rewards, probs = _arrays(states, strategies)
    if continuation < 1.0:
        value = _best_values(states, rewards, probs, continuation)
        q_values = rewards + continuation * _expected(states, probs, value)
        where = _reachable(states, probs[0])
        return bool(((q_values[1:] - q_values[0])[:, where] <= _TIE).all())
    reached = np.zeros(states.n)
    reached[0] = 1.0
    policy, _ = solve(states, strategies, rounds, continuation)  # backwards: honesty wherever no lie beats it
    for t in range(rounds):  # the states honest play reaches in round t must all choose honesty
        if (policy[t][reached > 0] != 0).any():
            return False
        reached = _forward(states, probs[0], reached)
    return True


# ---------------------------------------------------------------------------
# The best response as a policy of the environment
# ---------------------------------------------------------------------------
class DPProposer(BasePolicy):
    """Plays a :class:`BestResponse` in the repeated environment: each round, the stage strategy its table names
    for the round and the record the observation's ``"history"`` shows."""

    role = "proposer"

    def __init__(self, best: BestResponse) -> None:
        super().__init__()
        self.best = best
        self.players = [make_policy(s.spec, "proposer") for s in best.strategies]

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        for player in self.players:
            player.reset(seed=seed)

    def act(self, observation: Mapping[str, Any]) -> Any:
        from eq_env.exchange_audit.repeated.env import decode_history

        history = decode_history(observation)
        t = min(history["round"], len(self.best.policy) - 1)
        choice = int(self.best.policy[t, self.best.states.index_of_history(history)])
        return self.players[choice].act(observation)

    def __repr__(self) -> str:
        return f"DPProposer({self.best.describe()})"
