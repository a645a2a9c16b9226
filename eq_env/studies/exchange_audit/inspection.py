"""``eq-env inspection``: the validator as a strategic auditor.

The paper fixes the audit intensity q and the budget B. Here the validator chooses them itself, pays for
its audits, and faces a proposer that best-responds: the exchange–audit game read as an *inspection game*.
The validator keeps the paper's rule for deciding; what it chooses is how much to audit.

**The model.** Take the information of the paper's scripted trader (preset ``paper_scripted``: the
proposer knows whether its trade is compliant). A share ρ of episodes is non-compliant (normal episodes
whose risk or net delta breaches a limit; ambiguous episodes are always compliant). There an honest
proposer sends NO_TRADE, worth n₀ = ``no_trade_payoff`` to each agent; it may instead *misreport*, with
probability m. The cheapest misreport this game allows (the one the best-response search finds) shades
the reported numbers inside the limits and states no claim: the rule approves it unless an audit runs;
an audit is then inconclusive, so the rule blocks it (0), and no claim failed, so it is never fined L.
A lie that states a false claim is also fined L when an audit catches it (probability d), so in general

    proposer, per non-compliant episode:   honest n₀;   lie (1 − q)·V − q·d·L      (cheapest lie: d = 0)

The validator audits every episode with probability q (the game draws the audit in every episode, NO_TRADE
included) at a cost c_B per audit. ``claim_cost`` κ prices the budget, so that choosing B has a price:
c_B = c + κ·min(B, 4), paid on every audit, conclusive or not (the experiment plays each (q, B) with
``audit_cost`` = c_B; it adds no field to the game). Against a lie an audit turns a bad approval
(−Λ, Λ = ``bad_approval_loss``) into a block (0); otherwise it changes no decision: a NO_TRADE is not
decided, and a compliant request is approved either way (the best-responding proposer also shades the
numbers of a compliant trade it observes beyond a limit, which an unaudited rule would block: harmless, as
the trade is compliant). So, per episode,

    U_V(q, m) = K + ρ·[(1 − m)·n₀ − m·(1 − q)·Λ] − q·c_B,

K being what the compliant episodes pay, whatever q and m. (With another preset, where the proposer
judges its compliance from its noisy numbers, the measured columns below still hold; the analytic ones are
this model's.)

**(a) Simultaneous moves: the Nash equilibrium.** The proposer is indifferent where its lie pays n₀:

    q* = (V − n₀) / (V + d·L)          (= 1 − n₀/V for the cheapest lie: this game's frontier, any L, B)

and the validator is indifferent where one more unit of q saves exactly what it costs, ∂U_V/∂q =
ρ·m·Λ − c_B = 0:

    m* = c_B / (ρ·Λ).

When V > n₀ ≥ 0 and c_B < ρ·Λ this mixed pair is the only equilibrium: there is no pure one (against
m = 0 the validator's best q is 0, where the lie pays; against m = 1 its best q is 1, where it does not).
As in every inspection game each side's mix is set by the *other's* payoffs: q* does not depend on the
audit's cost, m* not on V or L. Otherwise the equilibrium is pure: V ≤ n₀, no temptation, (q, m) = (0, 0);
c_B ≥ ρ·Λ (Λ = 0 among them), audits never pay even against sure lies, (0, 1); n₀ < 0, the lie pays at
every q, (1, 1) (or (0, 1) when c_B ≥ ρ·Λ); ρ = 0, no lie can be sent, (0, 0).
At the mixed equilibrium the validator earns what it earns at q = 0 against m*:
U_N = K + ρ·n₀ − c_B·(n₀ + Λ)/Λ.

**(b) The validator as leader: commitment (Stackelberg).** The validator announces (q, B) first; the
proposer best-responds, honest when indifferent (:func:`~eq_env.exchange_audit.equilibrium.proposer_best_response`
breaks ties so). Then m = 1 below q* and 0 from q* on, and U_V is linear on each side, so the leader's
choice is q = 0 (accept every lie) or the smallest q that deters (the fixed-q frontier q_F):

    deter   iff   q_F·c_B ≤ ρ·(n₀ + Λ),        worth  U_S = K + ρ·n₀ − q_F·c_B,

else q = 0, worth K − ρ·Λ: the leader stops auditing once c_B exceeds ρ·(n₀ + Λ)/q_F
(:func:`break_even_cost`). Since q* does not move with B for the cheapest lie, the leader takes the
cheapest budget. Commitment beats the Nash equilibrium by c_B·[(n₀ + Λ)/Λ − q_F] > 0. A welfare-maximising
planner (welfare = both payoffs) compares ρ·2n₀ − q_F·c_B with ρ·(V − Λ): it deters iff
q_F·c_B ≤ ρ·(2n₀ + Λ − V).

**What the command measures.** For each (q, B) of a grid it searches the proposer's best response to the
rule validator (648 artifacts per cell of the proposer's observation; half of the episodes choose it, the
other half measure it) and evaluates both payoffs on the measuring half, exact over the audit and Monte
Carlo over states, with 95% intervals over those states. The states are the same in every cell (common
random numbers: one seed), so cells compare pairwise. From these:

* the *fixed-q frontier* per B (the smallest q of the grid from which the best response stops misreporting
  in more than ``tolerance`` of non-compliant episodes, as :mod:`eq_env.studies.exchange_audit.frontier` measures it);
* the *leader's* (q, B), maximising the validator's payoff, and separately welfare, with its margin over the
  runner-up (a paired 95% interval);
* the *Nash equilibrium* per B, analytic (q*, m*, with ρ measured on the same states) and measured: the
  proposer's gain from lying (its best response just below the frontier) against honesty at q* ± h
  changes sign (its root is the measured q*); the validator's payoff against a proposer that lies at the
  rate m* is flat in q (its payoff at q* − h, q*, q* + h and its slope with a 95% interval), and the rate
  at which that slope is 0 is the measured m*. Payoffs are linear in q for fixed strategies, so q = 0 and
  q = 1 give them at every q exactly;
* the leader's choice as the audit cost c grows (``costs``). The proposer's payoff has no audit cost in it,
  so its best response is the same at every c, and the validator's payoff in a cell moves by exactly
  −q·Δc_B: one grid of best responses serves every c.

Writes ``inspection.csv`` (every (q, B): misreport rate, both payoffs, welfare, intervals),
``inspection_equilibria.csv`` (per B), ``inspection_costs.csv`` (per c), ``inspection.md``,
``inspection.png`` (validator payoff and misreport rate against q, a line per B, the frontier and the Nash
q* marked), ``inspection_costs.png`` and ``summary.md``. The default run takes under two minutes, so it is not
resumable: run it again.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.cli import (
    MAX_EPISODES,
    Command,
    int_in,
    list_of,
    non_negative_float,
    out_dir,
    seed_arg,
)
from eq_env.core.policy import make_policy
from eq_env.core.report import markdown_table, plot_lines, write_csv
from eq_env.exchange_audit.batch import (
    Nature,
    ProposerBatch,
    SubmissionBatch,
    draw_nature,
    is_batchable,
    proposer_batch,
)
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import (
    ProposerBestResponse,
    _merge,
    _proposer_cells,
    _split,
    expected_payoffs,
    game_threshold,
    proposer_best_response,
)
from eq_env.exchange_audit.features import all_artifacts, artifact_submissions
from eq_env.exchange_audit.rules import DrawStream
from eq_env.studies.exchange_audit.flags import audit_intensities
from eq_env.studies.exchange_audit.frontier import DEFAULT_QS, _frontier_q

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_COSTS",
    "SCENARIOS",
    "BestResponseProposer",
    "Equilibrium",
    "Inspection",
    "break_even_cost",
    "budget_cost",
    "commitment",
    "inspection",
    "nash_equilibrium",
]

SCENARIOS: dict[str, tuple[float, float]] = {  # name: (V, L), the paper's Table 2 scenarios and the frontier's
    "baseline": (1.0, 2.0),
    "temptation": (2.0, 1.0),
    "punishment": (1.0, 4.0),
    "high_value": (3.0, 2.0),
}
DEFAULT_BUDGETS = (1, 2, 3, 4)
DEFAULT_COSTS = (0.0, 0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 5.5, 6.0, 8.0, 12.0, 20.0)
STEP = 0.05  # h: the indifference checks look at q* − h, q*, q* + h


# ---------------------------------------------------------------------------
# The analytic model (module docstring)
# ---------------------------------------------------------------------------
def budget_cost(audit_cost: float, claim_cost: float, B: int) -> float:
    """c_B = c + κ·min(B, 4): what one audit with budget B costs the validator."""
    return audit_cost + claim_cost * min(B, 4)


@dataclass(frozen=True)
class Equilibrium:
    """A Nash equilibrium of the inspection game: audit intensity q, misreport rate m, and which case."""

    q: float
    m: float
    kind: str  # "mixed", "no temptation", "audits do not pay", "lying always pays", "nothing to inspect"


def nash_equilibrium(
    *,
    V: float,
    audit_cost: float,
    bad_approval_loss: float,
    noncompliant_share: float,
    no_trade_payoff: float = 1.0,
    L: float = 0.0,
    detect: float = 0.0,
) -> Equilibrium:
    """The simultaneous-move equilibrium (q*, m*) of the module docstring.

    ``audit_cost`` is c_B (per audit, the budget's price included); ``detect`` is d, the chance an audit
    fines the lie L (0 for the cheapest lie, which states no claim).
    """
    rho, n0, loss = noncompliant_share, no_trade_payoff, bad_approval_loss
    if rho <= 0:
        return Equilibrium(0.0, 0.0, "nothing to inspect")  # no state where a lie could be sent
    if V <= n0:
        return Equilibrium(0.0, 0.0, "no temptation")
    if n0 < 0:  # even blocked (0) the lie beats NO_TRADE: it is sent at every q
        return Equilibrium(1.0 if audit_cost < rho * loss else 0.0, 1.0, "lying always pays")
    if audit_cost >= rho * loss:
        return Equilibrium(0.0, 1.0, "audits do not pay")
    return Equilibrium((V - n0) / (V + detect * L), audit_cost / (rho * loss), "mixed")


def _stakes(objective: str, V: float, loss: float, rho: float, n0: float) -> tuple[float, float]:
    """Per episode, beyond what compliant episodes pay: (the honest proposer's, an unaudited lie's) worth to
    ``objective``. An audited lie is blocked: worth 0 to both."""
    if objective not in ("validator", "welfare"):
        raise ValueError(f"objective must be 'validator' or 'welfare', got {objective!r}")
    if objective == "welfare":
        return 2 * n0 * rho, (V - loss) * rho
    return n0 * rho, -loss * rho


def break_even_cost(
    *,
    q_deter: float,
    V: float,
    bad_approval_loss: float,
    noncompliant_share: float,
    no_trade_payoff: float = 1.0,
    objective: str = "validator",
) -> float:
    """The largest cost per audit c_B at which deterring (auditing at ``q_deter``) beats not auditing:
    ρ·(n₀ + Λ)/q_deter for the validator, ρ·(2n₀ + Λ − V)/q_deter for welfare (module docstring)."""
    honest, lie_unaudited = _stakes(objective, V, bad_approval_loss, noncompliant_share, no_trade_payoff)
    if q_deter <= 0:
        return math.inf
    return (honest - lie_unaudited) / q_deter


def commitment(
    *,
    q_deter: float,
    V: float,
    audit_cost: float,
    bad_approval_loss: float,
    noncompliant_share: float,
    no_trade_payoff: float = 1.0,
    objective: str = "validator",
) -> float:
    """The q a leader commits to (module docstring): ``q_deter`` (the smallest q that deters) if deterring
    is worth its audits (``audit_cost`` = c_B at most :func:`break_even_cost`), else 0; where no q deters
    (``q_deter`` inf), 1 if auditing every lie pays, else 0.

    ``objective``: ``"validator"`` (its own payoff) or ``"welfare"`` (both payoffs).
    """
    _, lie_unaudited = _stakes(objective, V, bad_approval_loss, noncompliant_share, no_trade_payoff)
    if q_deter <= 0:
        return 0.0
    if math.isinf(q_deter) or q_deter > 1:  # lies at every q: audit all of them or none
        return 1.0 if -lie_unaudited > audit_cost else 0.0
    worth = break_even_cost(
        q_deter=q_deter,
        V=V,
        bad_approval_loss=bad_approval_loss,
        noncompliant_share=noncompliant_share,
        no_trade_payoff=no_trade_payoff,
        objective=objective,
    )
    return q_deter if audit_cost <= worth else 0.0


# ---------------------------------------------------------------------------
# The best response as a policy
# ---------------------------------------------------------------------------
class BestResponseProposer:
    """A proposer that plays a :class:`~eq_env.exchange_audit.equilibrium.ProposerBestResponse` in bulk.

    In each cell of its observation it sends the artifact the search chose there; where it chose none (honesty
    did as well) or never saw the cell, it is the honest reference proposer. It acts in bulk only (the batch
    engine, :func:`~eq_env.exchange_audit.batch.simulate`); reset with seed 1 it sends, on the search's
    measuring half, exactly what the search measured.
    """

    role = "proposer"

    def __init__(self, best_response: ProposerBestResponse, honest: Any = None) -> None:
        if honest is None:  # proposer_best_response's reference
            reveal = best_response.config.reveal_compliance
            honest = "honest:claims_from=truth,words=0" if reveal else "honest:words=0"
        self.table = best_response.table
        self.honest: Any = make_policy(honest, "proposer")
        if not is_batchable(self.honest):
            raise ValueError(f"the honest reference must act in bulk; {self.honest!r} does not")
        self._artifacts = all_artifacts()

    def __repr__(self) -> str:
        return f"BestResponseProposer({int((self.table >= 0).sum())} deviating cells, honest={self.honest!r})"

    def reset(self, seed: int | None = None) -> None:
        self.honest.reset(seed=seed)

    def act_batch(self, views: ProposerBatch) -> SubmissionBatch:
        cells = _proposer_cells(views)
        seen = cells < len(self.table)
        choice = np.where(seen, self.table[np.minimum(cells, len(self.table) - 1)], -1)
        honest = self.honest.act_batch(views)
        chosen = artifact_submissions(views, self._artifacts[np.maximum(choice, 0)])
        return _merge(choice >= 0, chosen, honest)


# ---------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------
def _mean_ci(x: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% interval over the entries (NaN half-width for fewer than two)."""
    half = 1.96 * float(x.std(ddof=1)) / math.sqrt(len(x)) if len(x) > 1 else math.nan
    return float(x.mean()), half


@dataclass
class _Cell:
    """One (q, B) of the grid: the best response there and the payoffs it earns, per measured episode."""

    q: float
    B: int
    cost: float  # c_B
    br: ProposerBestResponse
    proposer: np.ndarray
    validator: np.ndarray

    @property
    def welfare(self) -> np.ndarray:
        return self.proposer + self.validator

    def validator_at(self, cost: float) -> float:
        """Mean validator payoff were an audit to cost ``cost``: it moves by exactly −q·Δc_B."""
        return float(self.validator.mean()) - self.q * (cost - self.cost)

    def welfare_at(self, cost: float) -> float:
        return float(self.welfare.mean()) - self.q * (cost - self.cost)


@dataclass
class Inspection:
    """What :func:`inspection` found; every list is also a CSV file."""

    rows: list[dict[str, Any]]  # per (q, B)
    equilibria: list[dict[str, Any]]  # per B
    costs: list[dict[str, Any]]  # per audit cost c
    leader: dict[str, Any]
    welfare_leader: dict[str, Any]
    noncompliant_share: float
    parameters: dict[str, Any] = field(default_factory=dict)


def _measured_half(config: ExchangeAuditConfig, episodes: int, seed: int) -> Nature:
    """The episodes :func:`proposer_best_response` measures its best response on (same ``episodes``, ``seed``)."""
    half = episodes // 2
    return _split(draw_nature(config, DrawStream(seed), 2 * half), half)[1]


def _play(policy: Any, config: ExchangeAuditConfig, nature: Nature) -> SubmissionBatch:
    policy.reset(seed=1)  # the seed proposer_best_response measures with
    return policy.act_batch(proposer_batch(nature, config))  # type: ignore[no-any-return]


def _best(cells: Sequence[_Cell], cost_of: Any, value: Any) -> _Cell:
    """The cell with the highest ``value(cell)``; ties to the least audit spending, then smaller q, then B."""
    return max(cells, key=lambda x: (round(value(x), 10), -x.q * cost_of(x.B), -x.q, -x.B))


def inspection(
    out: str | Path,
    *,
    scenario: str = "temptation",
    V: float | None = None,
    L: float | None = None,
    audit_cost: float = 0.1,
    claim_cost: float = 0.025,
    bad_approval_loss: float = 10.0,
    qs: Sequence[float] = DEFAULT_QS,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    costs: Sequence[float] = DEFAULT_COSTS,
    preset: str = "paper_scripted",
    episodes: int = 10_000,
    seed: int = 0,
    tolerance: float = 0.02,
    progress: bool | None = None,
) -> Inspection:
    """Run the experiment of the module docstring; write its files into ``out``; return what it found.

    ``scenario`` names (V, L) in :data:`SCENARIOS`; ``V`` and ``L`` override it. ``audit_cost`` is c,
    ``claim_cost`` κ (c_B = c + κ·min(B, 4)), ``costs`` the audit costs c of the leader-vs-cost table.
    ``progress``: a progress bar (None: when the output is a terminal).
    """
    from tqdm.auto import tqdm

    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {', '.join(SCENARIOS)}, got {scenario!r}")
    qs, budgets, costs = sorted(qs), sorted(budgets), sorted(costs)
    if not qs or not budgets or not costs:
        raise ValueError(
            f"the inspection game needs at least one q, one budget B and one audit cost, got qs={qs}, "
            f"budgets={budgets}, costs={costs}"
        )
    if any(isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 4 for b in budgets):
        raise ValueError(f"budgets B must be integers in [1, 4], got {budgets}")
    for name, value in (("claim_cost", claim_cost), *(("costs", c) for c in costs)):
        if not 0 <= value < math.inf:
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 4:
        raise ValueError(f"episodes must be an integer of at least 4 (half choose, half measure), got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be a misreport rate in [0, 1), got {tolerance!r}")
    V0, L0 = SCENARIOS[scenario]
    V, L = V0 if V is None else V, L0 if L is None else L
    base = ExchangeAuditConfig.from_preset(preset).replace(
        V=V, L=L, bad_approval_loss=bad_approval_loss, audit_cost=audit_cost
    )
    for q in qs:
        base.replace(q=q)  # a q outside [0, 1] is refused before anything runs
    for c in costs:
        base.replace(audit_cost=budget_cost(c, claim_cost, max(budgets)))  # (a cost beyond the field's range too)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    bar = tqdm(
        total=len(budgets) * (len(qs) + 1),
        desc="inspection",
        unit="cell",
        disable=None if progress is None else not progress,
    )
    rule = make_policy("rule", "validator")
    nature = _measured_half(base, episodes, seed)  # (the same states in every cell: q, B and costs draw nothing)
    rho = float((~nature.compliant).mean())
    cells: dict[int, list[_Cell]] = {}
    for B in budgets:
        cells[B] = []
        for q in qs:
            config = base.replace(q=q, B=B, audit_cost=budget_cost(audit_cost, claim_cost, B))
            br = proposer_best_response(config, rule, episodes=episodes, seed=seed)
            p, v = expected_payoffs(config, nature, _play(BestResponseProposer(br), config, nature), rule)
            cells[B].append(_Cell(q, B, config.audit_cost, br, p, v))
            bar.update()
    n0 = base.no_trade_payoff
    frontier = {B: _frontier_q(qs, [c.br.misreport_rate > tolerance for c in cells[B]]) for B in budgets}
    equilibria = []
    for B in budgets:
        equilibria.append(
            _nash_row(
                base.replace(B=B, audit_cost=budget_cost(audit_cost, claim_cost, B)),
                cells[B],
                frontier[B],
                nature,
                rho,
                rule,
            )
        )
        bar.update()
    bar.close()

    everything = [c for B in budgets for c in cells[B]]
    rows = [_row(c, frontier[c.B], V, L, audit_cost, claim_cost, bad_approval_loss) for c in everything]

    def cost_of(c: float) -> Any:
        return lambda B: budget_cost(c, claim_cost, B)

    leader = _leader_row(everything, cost_of(audit_cost), "validator")
    welfare_leader = _leader_row(everything, cost_of(audit_cost), "welfare")
    sweep = _cost_rows(everything, costs, claim_cost, frontier, base, rho, min(budgets))
    result = Inspection(
        rows=rows,
        equilibria=equilibria,
        costs=sweep,
        leader=leader,
        welfare_leader=welfare_leader,
        noncompliant_share=rho,
        parameters={
            "scenario": scenario,
            "V": V,
            "L": L,
            "audit_cost": audit_cost,
            "claim_cost": claim_cost,
            "bad_approval_loss": bad_approval_loss,
            "no_trade_payoff": n0,
            "preset": preset,
            "episodes": episodes,
            "seed": seed,
            "tolerance": tolerance,
            "qs": list(qs),
            "budgets": list(budgets),
            "measured": nature.n,
            "reveal_compliance": base.reveal_compliance,
        },
    )
    _write(out, result, frontier)
    return result


def _row(
    c: _Cell, frontier_q: float, V: float, L: float, audit_cost: float, claim_cost: float, loss: float
) -> dict[str, Any]:
    v, v_ci = _mean_ci(c.validator)
    w, w_ci = _mean_ci(c.welfare)
    return {
        "V": V,
        "L": L,
        "audit_cost": audit_cost,
        "claim_cost": claim_cost,
        "bad_approval_loss": loss,
        "B": c.B,
        "cost_per_audit": c.cost,
        "q": c.q,
        "misreport_rate": c.br.misreport_rate,
        "deterred": c.q >= frontier_q,
        "proposer_payoff": float(c.proposer.mean()),
        "honest_payoff": c.br.honest_payoff,
        "validator_payoff": v,
        "validator_ci": v_ci,
        "welfare": w,
        "welfare_ci": w_ci,
    }


def _nash_row(
    config: ExchangeAuditConfig, cells: Sequence[_Cell], frontier_q: float, nature: Nature, rho: float, rule: Any
) -> dict[str, Any]:
    """The equilibrium of one budget: analytic, and measured from the lie the best response found."""
    n0, loss, cost = config.no_trade_payoff, config.bad_approval_loss, config.audit_cost
    eq = nash_equilibrium(
        V=config.V, audit_cost=cost, bad_approval_loss=loss, noncompliant_share=rho, no_trade_payoff=n0
    )
    row: dict[str, Any] = {
        "B": config.checks_per_audit,
        "cost_per_audit": cost,
        "noncompliant_share": rho,
        "frontier_q": frontier_q,
        "game_threshold": game_threshold(config),
        "nash_kind": eq.kind,
        "nash_q": eq.q,
        "nash_m": eq.m,
    }
    keys = (
        "lie_from_q",
        "lie_misreport_rate",
        "honest_from_q",
        "measured_q",
        "gain_below",
        "gain_below_ci",
        "gain_above",
        "gain_above_ci",
        "measured_m",
        "validator_below",
        "validator_at",
        "validator_above",
        "validator_slope",
        "validator_slope_ci",
        "nash_validator_payoff",
        "nash_welfare",
    )
    row.update(dict.fromkeys(keys, math.nan))
    liars = [c for c in cells if c.q < frontier_q and c.br.misreport_rate > 0]
    if not liars:
        return row  # no grid q at which a lie pays: nothing to measure
    # The proposer's two pure strategies of the inspection game: its best responses on either side of the
    # frontier. Both also shade a compliant trade observed beyond a limit (harmless); they differ where it lies.
    lie_cell = liars[-1]
    deterred = [c for c in cells if c.q >= frontier_q]
    lie = _play(BestResponseProposer(lie_cell.br), config, nature)
    honest_policy = BestResponseProposer(deterred[0].br) if deterred else BestResponseProposer(lie_cell.br).honest
    honest = _play(honest_policy, config, nature)
    ends = {}
    for q in (0.0, 1.0):  # payoffs are linear in q for fixed strategies: the two ends give every q
        end = config.replace(q=q)
        ends[q] = (expected_payoffs(end, nature, lie, rule), expected_payoffs(end, nature, honest, rule))
    (p_l0, v_l0), (p_h0, v_h0) = ends[0.0]
    (p_l1, v_l1), (p_h1, v_h1) = ends[1.0]
    noncompliant = ~nature.compliant  # the proposer's gain from lying at q = 0 and q = 1, where it lies
    a, b = (p_l0 - p_h0)[noncompliant], (p_l1 - p_h1)[noncompliant]
    r = lie_cell.br.misreport_rate
    row.update(lie_from_q=lie_cell.q, lie_misreport_rate=r, honest_from_q=deterred[0].q if deterred else math.nan)
    if a.mean() > 0 > b.mean():
        row["measured_q"] = float(a.mean() / (a.mean() - b.mean()))
    q_star = eq.q if eq.kind == "mixed" else row["game_threshold"]
    below, above = max(0.0, q_star - STEP), min(1.0, q_star + STEP)
    row["gain_below"], row["gain_below_ci"] = _mean_ci((1 - below) * a + below * b)
    row["gain_above"], row["gain_above_ci"] = _mean_ci((1 - above) * a + above * b)
    s_h, s_l = v_h1 - v_h0, v_l1 - v_l0  # the validator's payoff slope in q against honesty, against the lie
    if s_l.mean() > s_h.mean():  # the rate of lying at which the slope is 0, as a misreport rate
        row["measured_m"] = float(r * -s_h.mean() / (s_l.mean() - s_h.mean()))
    if eq.kind == "mixed" and r > 0:
        mix = min(1.0, eq.m / r)  # the lie misreports in a share r of non-compliant episodes: mix it to m*

        def at(q: float, lie0: np.ndarray, lie1: np.ndarray, honest0: np.ndarray, honest1: np.ndarray) -> np.ndarray:
            """Per episode, the payoff at q against the proposer lying with probability ``mix``."""
            return mix * ((1 - q) * lie0 + q * lie1) + (1 - mix) * ((1 - q) * honest0 + q * honest1)

        for name, q in (("validator_below", below), ("validator_at", q_star), ("validator_above", above)):
            row[name] = float(at(q, v_l0, v_l1, v_h0, v_h1).mean())
        row["validator_slope"], row["validator_slope_ci"] = _mean_ci(mix * s_l + (1 - mix) * s_h)
        row["nash_validator_payoff"] = row["validator_at"]
        row["nash_welfare"] = float(at(q_star, p_l0 + v_l0, p_l1 + v_l1, p_h0 + v_h0, p_h1 + v_h1).mean())
    return row


def _leader_row(cells: Sequence[_Cell], cost_of: Any, objective: str) -> dict[str, Any]:
    """The leader's (q, B) for ``objective`` at the run's costs, its value and margin over the runner-up."""
    value = (lambda x: float(x.validator.mean())) if objective == "validator" else (lambda x: float(x.welfare.mean()))
    per_episode = (lambda x: x.validator) if objective == "validator" else (lambda x: x.welfare)
    best = _best(cells, cost_of, value)
    mean, ci = _mean_ci(per_episode(best))
    row: dict[str, Any] = {
        "objective": objective,
        "q": best.q,
        "B": best.B,
        "value": mean,
        "value_ci": ci,
        "misreport_rate": best.br.misreport_rate,
        "runner_up_q": math.nan,
        "runner_up_B": math.nan,
        "margin": math.nan,
        "margin_ci": math.nan,
    }
    others = [c for c in cells if c is not best]
    if others:
        second = _best(others, cost_of, value)
        margin, margin_ci = _mean_ci(per_episode(best) - per_episode(second))  # paired: the same states
        row.update(runner_up_q=second.q, runner_up_B=second.B, margin=margin, margin_ci=margin_ci)
    return row


def _cost_rows(
    cells: Sequence[_Cell],
    costs: Sequence[float],
    claim_cost: float,
    frontier: dict[int, float],
    base: ExchangeAuditConfig,
    rho: float,
    cheapest: int,
) -> list[dict[str, Any]]:
    """The leader's choice (numeric and analytic) and the Nash equilibrium at each audit cost c."""
    out = []
    for c in costs:

        def cost_of(B: int, c: float = c) -> float:
            return budget_cost(c, claim_cost, B)

        best = _best(cells, cost_of, lambda x: x.validator_at(cost_of(x.B)))
        planner = _best(cells, cost_of, lambda x: x.welfare_at(cost_of(x.B)))
        common: dict[str, Any] = {
            "V": base.V,
            "bad_approval_loss": base.bad_approval_loss,
            "noncompliant_share": rho,
            "no_trade_payoff": base.no_trade_payoff,
            "audit_cost": cost_of(cheapest),
        }
        nash = nash_equilibrium(**common)
        without_cost = {k: v for k, v in common.items() if k != "audit_cost"}
        out.append(
            {
                "audit_cost": c,
                "leader_q": best.q,
                "leader_B": best.B,
                "leader_misreport_rate": best.br.misreport_rate,
                "leader_validator_payoff": best.validator_at(cost_of(best.B)),
                "analytic_leader_q": commitment(q_deter=frontier[cheapest], **common),
                "break_even_cost_per_audit": break_even_cost(q_deter=frontier[cheapest], **without_cost),
                "welfare_leader_q": planner.q,
                "welfare_leader_B": planner.B,
                "analytic_welfare_leader_q": commitment(q_deter=frontier[cheapest], objective="welfare", **common),
                "nash_B": cheapest,
                "nash_q": nash.q,
                "nash_m": nash.m,
                "nash_kind": nash.kind,
            }
        )
    return out


# ---------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------
def _fmt_q(q: float) -> str:
    if math.isnan(q):
        return "—"
    return "never deterred (> 1)" if math.isinf(q) else f"{q:.2f}"


def _pm(mean: float, ci: float, digits: int = 3) -> str:
    if math.isnan(mean):
        return "—"
    return f"{mean:+.{digits}f}" + ("" if math.isnan(ci) else f" ± {ci:.{digits}f}")


def _tables(result: Inspection) -> tuple[str, str, str]:
    """The equilibria per B, the payoff grid (q × B), and the leader against the audit cost."""
    eq = markdown_table(
        [
            "B",
            "c_B",
            "fixed-q frontier",
            "Nash q* (analytic / measured)",
            "Nash m* (analytic / measured)",
            "validator at q*−h, q*, q*+h vs m*",
            "its slope in q (95% CI)",
            "lying gains at q*−h / q*+h",
        ],
        [
            [
                e["B"],
                f"{e['cost_per_audit']:.3g}",
                _fmt_q(e["frontier_q"]),
                f"{_fmt_q(e['nash_q'])} / {_fmt_q(e['measured_q'])}",
                f"{e['nash_m']:.3f} / " + ("—" if math.isnan(e["measured_m"]) else f"{e['measured_m']:.3f}"),
                "—"
                if math.isnan(e["validator_at"])
                else f"{e['validator_below']:.4f}, {e['validator_at']:.4f}, {e['validator_above']:.4f}",
                _pm(e["validator_slope"], e["validator_slope_ci"]),
                f"{_pm(e['gain_below'], e['gain_below_ci'])} / {_pm(e['gain_above'], e['gain_above_ci'])}",
            ]
            for e in result.equilibria
        ],
    )
    budgets = result.parameters["budgets"]
    by = {(r["q"], r["B"]): r for r in result.rows}
    first = budgets[0]
    grid = markdown_table(
        ["q", *(f"validator, B={B}" for B in budgets), *(f"misreport, B={B}" for B in budgets), f"welfare, B={first}"],
        [
            [
                f"{q:g}",
                *(_pm(by[q, B]["validator_payoff"], by[q, B]["validator_ci"]) for B in budgets),
                *(f"{by[q, B]['misreport_rate']:.3f}" for B in budgets),
                f"{by[q, first]['welfare']:.3f}",
            ]
            for q in result.parameters["qs"]
        ],
    )
    costs = markdown_table(
        [
            "audit cost c",
            "leader (q, B)",
            "analytic leader q",
            "misreport there",
            "leader's payoff",
            "welfare-maximising (q, B)",
            "analytic",
            "Nash (q*, m*) at the cheapest B",
        ],
        [
            [
                f"{r['audit_cost']:g}",
                f"({r['leader_q']:g}, {r['leader_B']})",
                f"{r['analytic_leader_q']:g}",
                f"{r['leader_misreport_rate']:.3f}",
                f"{r['leader_validator_payoff']:.4f}",
                f"({r['welfare_leader_q']:g}, {r['welfare_leader_B']})",
                f"{r['analytic_welfare_leader_q']:g}",
                f"({r['nash_q']:.3f}, {r['nash_m']:.3f}) {r['nash_kind']}",
            ]
            for r in result.costs
        ],
    )
    return eq, grid, costs


def _write(out: Path, result: Inspection, frontier: dict[int, float]) -> None:
    write_csv(out / "inspection.csv", result.rows, list(result.rows[0]))
    write_csv(out / "inspection_equilibria.csv", result.equilibria, list(result.equilibria[0]))
    write_csv(out / "inspection_costs.csv", result.costs, list(result.costs[0]))
    eq, grid, costs = _tables(result)
    p = result.parameters
    heading = (
        f"Scenario {p['scenario']}: V = {p['V']:g}, L = {p['L']:g}, n₀ = {p['no_trade_payoff']:g}, "
        f"Λ = {p['bad_approval_loss']:g}, c = {p['audit_cost']:g}, κ = {p['claim_cost']:g} per claim type "
        f"(c_B = c + κ·B); preset {p['preset']}; {p['episodes']} episodes per best response, {p['measured']} "
        f"measured (seed {p['seed']}, the same states in every cell); ρ = {result.noncompliant_share:.4f} of "
        f"them non-compliant; h = {STEP:g}."
    )
    md = "\n".join(
        [
            "# The validator as a strategic auditor",
            "",
            heading,
            "",
            "## Equilibria by budget B",
            "",
            eq,
            _leader_text(result),
            "",
            "## Validator payoff (95% CI over states) and misreport rate by (q, B)",
            "",
            grid,
            "## The leader's choice as the audit cost c grows (κ fixed)",
            "",
            costs,
        ]
    )
    (out / "inspection.md").write_text(md)
    _plots(out, result, frontier)
    (out / "summary.md").write_text(
        "\n".join(
            [
                "# The validator as a strategic auditor",
                "",
                heading,
                "",
                *_summary(result, frontier),
                "",
                eq,
                grid,
                costs,
            ]
        )
    )


def _leader_text(result: Inspection) -> str:
    lines = []
    for r, what in ((result.leader, "its own payoff"), (result.welfare_leader, "welfare")):
        margin = (
            (
                f"; ahead of the runner-up (q = {r['runner_up_q']:g}, B = {r['runner_up_B']}) by "
                f"{_pm(r['margin'], r['margin_ci'], 4)} (paired 95% CI)"
            )
            if not math.isnan(r["margin"])
            else ""
        )
        lines.append(
            f"Committing to maximise {what}, the validator picks q = {r['q']:g}, B = {r['B']}: "
            f"{_pm(r['value'], r['value_ci'], 4)} per episode, the proposer misreporting in "
            f"{r['misreport_rate']:.1%} of non-compliant episodes{margin}."
        )
    return "\n\n".join(lines)


def _summary(result: Inspection, frontier: dict[int, float]) -> list[str]:
    """The equilibria found, in sentences, next to the fixed-q frontier."""
    p, lead = result.parameters, result.leader
    e = next(x for x in result.equilibria if x["B"] == lead["B"])
    lines = [
        "**Fixed-q frontier** (the smallest q of the grid from which the best response stops misreporting): "
        + ", ".join(f"B = {B}: {_fmt_q(q)}" for B, q in frontier.items())
        + f"; this game's analytic threshold 1 − n₀/V = {_fmt_q(e['game_threshold'])}.",
        "",
        "**Commitment** (the validator leads). " + _leader_text(result),
        "",
    ]
    if frontier[lead["B"]] == 0:
        lines.append("Lying does not pay at any q of the grid: the validator needs no audits to deter it.")
    elif lead["q"] == frontier[lead["B"]]:
        lines.append(
            "The leader commits to exactly the fixed-q frontier: deterrence is worth its audits, and it "
            "audits no more than deterrence needs."
        )
    elif lead["q"] == 0:
        lines.append("The leader does not audit: deterring would cost more than the lies it prevents.")
    else:
        lines.append(f"The leader's q differs from the fixed-q frontier ({_fmt_q(frontier[lead['B']])}).")
    if not p["reveal_compliance"]:
        lines += [
            "",
            "(In this preset the proposer does not know its compliance: the analytic model assumes it "
            "does; the measured columns do not.)",
        ]
    lines.append("")
    if e["nash_kind"] == "mixed":
        measured_m = "—" if math.isnan(e["measured_m"]) else f"{e['measured_m']:.4f}"
        head = (
            f"**Nash equilibrium** (simultaneous moves, B = {e['B']}): q* = {e['nash_q']:.3f} (measured "
            f"{_fmt_q(e['measured_q'])}) and misreport rate m* = c_B/(ρΛ) = {e['nash_m']:.4f} (measured "
            f"{measured_m}). It is mixed, m* > 0, as inspection games are"
        )
        if math.isnan(e["validator_at"]):  # no lie found on the grid: nothing to mix, nothing measured
            lines.append(
                head + ". The run does not check it: no q of the grid below the fixed-q frontier has the "
                "best response lie, so there is no lie to mix with honesty (add a q below q* to the "
                "grid)."
            )
        else:
            worth = lead["value"] - e["nash_validator_payoff"]
            held = (
                " (below zero only because no q of the grid deters: the leader is held to the grid, the Nash q* is not)"
                if worth < 0 and math.isinf(frontier[lead["B"]])
                else ""
            )
            lines.append(
                head + f": against m* the validator's payoff is flat in q ({e['validator_below']:.4f}, "
                f"{e['validator_at']:.4f}, {e['validator_above']:.4f} at q* − h, q*, q* + h; slope "
                f"{_pm(e['validator_slope'], e['validator_slope_ci'], 4)}), and the proposer's gain from lying "
                f"changes sign across q* ({_pm(e['gain_below'], e['gain_below_ci'])} below, "
                f"{_pm(e['gain_above'], e['gain_above_ci'])} above). The validator earns "
                f"{e['nash_validator_payoff']:.4f} there against {lead['value']:.4f} committing: commitment is worth "
                f"{worth:+.4f} per episode{held}."
            )
    else:
        lines.append(
            f"**Nash equilibrium** (B = {e['B']}): pure, (q, m) = ({e['nash_q']:g}, {e['nash_m']:g}): {e['nash_kind']}."
        )
    auditing = [r["audit_cost"] for r in result.costs if r["leader_q"] > 0]
    idle = [r["audit_cost"] for r in result.costs if r["leader_q"] == 0]
    agree = sum(r["leader_q"] == r["analytic_leader_q"] for r in result.costs)
    text = f"audits at every c up to {max(auditing):g}" if auditing else "never audits"
    text += f" and stops from c = {min(idle):g}" if auditing and idle else ""
    worth = result.costs[0]["break_even_cost_per_audit"]
    analytic = (
        f"analytically it deters while an audit of the cheapest budget costs at most ρ·(n₀ + Λ)/q_F = {worth:.3f}, and"
        if 0 < worth < math.inf
        else "analytically"
    )
    lines += [
        "",
        f"**As the audit cost c grows** (last table): the leader {text}; {analytic} its q agrees with "
        f"the measured one at {agree} of {len(result.costs)} costs.",
    ]
    return lines


def _plots(out: Path, result: Inspection, frontier: dict[int, float]) -> None:
    budgets, lead = result.parameters["budgets"], result.leader
    nash = next((e for e in result.equilibria if e["B"] == lead["B"]), result.equilibria[0])

    def panel(key: str, ylabel: str, ci: str | None, nash_y: float, lead_y: float) -> dict[str, Any]:
        series: list[dict[str, Any]] = []
        for B in budgets:
            mine = [r for r in result.rows if r["B"] == B]
            series.append(
                {
                    "label": f"B = {B}",
                    "x": [r["q"] for r in mine],
                    "y": [r[key] for r in mine],
                    "yerr": [r[ci] for r in mine] if ci else None,
                }
            )
        ys = [r[key] for r in result.rows]
        q_f = frontier[lead["B"]]
        if not math.isinf(q_f):
            series.append(
                {
                    "label": f"fixed-q frontier (B = {lead['B']})",
                    "x": [q_f, q_f],
                    "y": [min(ys), max(ys)],
                    "style": {"fmt": "k--", "markersize": 0},
                }
            )
        if nash["nash_kind"] == "mixed":
            series.append(
                {
                    "label": f"Nash equilibrium (B = {nash['B']})",
                    "x": [nash["nash_q"]],
                    "y": [nash_y],
                    "style": {"fmt": "D", "color": "k", "markersize": 8, "mfc": "white"},
                }
            )
        series.append(
            {
                "label": f"leader's commitment (B = {lead['B']})",
                "x": [lead["q"]],
                "y": [lead_y],
                "style": {"fmt": "*", "color": "k", "markersize": 13},
            }
        )
        return {"ylabel": ylabel, "series": series}

    plot_lines(
        out / "inspection.png",
        [
            panel(
                "validator_payoff",
                "validator payoff per episode",
                "validator_ci",
                nash["nash_validator_payoff"],
                lead["value"],
            ),
            panel("misreport_rate", "best response's misreport rate", None, nash["nash_m"], lead["misreport_rate"]),
        ],
        xlabel="audit intensity q",
        title="The validator as a strategic auditor",
    )
    labels = [f"{r['audit_cost']:g}" for r in result.costs]
    x = list(range(len(labels)))
    plot_lines(
        out / "inspection_costs.png",
        [
            {
                "ylabel": "audit intensity q",
                "series": [
                    {"label": "Nash q*", "x": x, "y": [r["nash_q"] for r in result.costs], "style": {"fmt": "s--"}},
                    {
                        "label": "leader (commitment), measured",
                        "x": x,
                        "y": [r["leader_q"] for r in result.costs],
                        "style": {"fmt": "o", "markersize": 7},
                    },
                    {
                        "label": "leader, analytic",
                        "x": x,
                        "y": [r["analytic_leader_q"] for r in result.costs],
                        "style": {"fmt": "x", "markersize": 9},
                    },
                    {
                        "label": "welfare-maximising, measured",
                        "x": x,
                        "y": [r["welfare_leader_q"] for r in result.costs],
                        "style": {"fmt": "^", "markersize": 5},
                    },
                ],
            },
            {
                "ylabel": "misreport rate",
                "series": [
                    {
                        "label": "leader (commitment), measured",
                        "x": x,
                        "y": [r["leader_misreport_rate"] for r in result.costs],
                        "style": {"fmt": "o", "markersize": 7},
                    },
                    {"label": "Nash m*", "x": x, "y": [r["nash_m"] for r in result.costs], "style": {"fmt": "s--"}},
                ],
            },
        ],
        xlabel="audit cost c per audit (κ fixed)",
        xticklabels=labels,
        title="The leader's audit intensity and the Nash equilibrium as audits grow dearer",
    )


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _inspection_arguments(ins: argparse.ArgumentParser) -> None:
    costs = list_of(non_negative_float, "audit costs (non-negative numbers)", distinct=True)
    ins.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    ins.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default="temptation",
        help="(V, L): "
        + ", ".join(f"{k} ({v[0]:g}, {v[1]:g})" for k, v in SCENARIOS.items())
        + " (default temptation)",
    )
    ins.add_argument("--V", type=non_negative_float, help="the approval reward V (default: the scenario's)")
    ins.add_argument("--L", type=non_negative_float, help="the penalty L of a failed audit (default: the scenario's)")
    ins.add_argument(
        "--audit-cost", type=non_negative_float, default=0.1, help="c, the cost of one audit (default 0.1)"
    )
    ins.add_argument(
        "--claim-cost",
        type=non_negative_float,
        default=0.025,
        help="κ, the cost per claim type of the budget: an audit with budget B costs c + κ·B (default 0.025)",
    )
    ins.add_argument(
        "--bad-approval-loss",
        type=non_negative_float,
        default=10.0,
        help="Λ, the validator's loss for approving a non-compliant trade (default 10)",
    )
    ins.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
        help="the q grid (default 0 to 1 in steps of 0.1)",
    )
    ins.add_argument(
        "--budgets",
        type=list_of(int_in(1, 4), "budgets B", distinct=True),
        default=",".join(map(str, DEFAULT_BUDGETS)),
        help="the budgets B (default %(default)s)",
    )
    ins.add_argument(
        "--costs",
        type=costs,
        default=",".join(f"{c:g}" for c in DEFAULT_COSTS),
        help="the audit costs c of the leader-vs-cost table (default %(default)s)",
    )
    ins.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    ins.add_argument(
        "--episodes",
        type=int_in(4, MAX_EPISODES),
        default=10_000,
        help="episodes per best response: half choose it, half measure it (default 10000)",
    )
    ins.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _inspection(args: argparse.Namespace) -> int:
    inspection(
        args.out,
        scenario=args.scenario,
        V=args.V,
        L=args.L,
        audit_cost=args.audit_cost,
        claim_cost=args.claim_cost,
        bad_approval_loss=args.bad_approval_loss,
        qs=args.qs,
        budgets=args.budgets,
        costs=args.costs,
        preset=args.preset,
        episodes=args.episodes,
        seed=args.seed,
        progress=None,
    )
    print((args.out / "inspection.md").read_text())
    print(
        f"wrote inspection.csv, inspection_equilibria.csv, inspection_costs.csv, inspection.md, inspection.png, "
        f"inspection_costs.png and summary.md to {args.out}"
    )
    return 0


COMMAND = Command(
    "inspection",
    "the validator as a strategic auditor: the inspection game's Nash and commitment equilibria",
    _inspection_arguments,
    _inspection,
    "The validator chooses q and B, paying c + κ·B per audit, against a proposer best-responding over the q "
    "grid and --budgets: its best (q, B) as a leader (own payoff and welfare) next to the fixed-q frontier, "
    "the simultaneous-move equilibrium (q*, m*) analytic and measured, and the leader's choice as the audit "
    "cost grows. Writes inspection.csv, inspection_equilibria.csv, inspection_costs.csv, inspection.md, "
    "inspection.png, inspection_costs.png and summary.md into --out. Computed in this process, every cell on "
    "one shared sample of states: it takes no --backend.",
)
