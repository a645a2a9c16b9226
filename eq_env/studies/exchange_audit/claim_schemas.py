"""``eq-env claim-schemas``: does a richer claim schema deter a strategic proposer?

The same game is played under several claim schemas (:mod:`eq_env.exchange_audit.schema`; by default the
paper's and the ``"rich"`` one, which adds a conditional hedge-cover claim and a required risk interval)
and several audit budgets B, against the paper's rule validator.

**Detection per audited lie.** An audit checks k = min(B, P) of the schema's pool of P checkable claims,
uniformly; a lie that gets ℓ of them wrong is caught with probability

    π(ℓ, k, P) = 1 − C(P − ℓ, k) / C(P, k)        (π = 1 whenever ℓ ≥ 1 and k = P).

The paper's pool has P = 4; the strategic proposer's lie (claims asserting compliance: intent HEDGE, both
limits within) is wrong in ℓ = 3 claims for a speculation and ℓ = 1 for a hedge that breaches the risk
limit. The rich pool has P = 6. Its interval claim, told about the shaded risk the lie reports, is wrong
when the true risk lies more than 0.15 above it (most speculations, few borderline hedges), so the lie
can now be caught on one more claim. Its conditional claim ("if HEDGE then hedge ≥ 0.5") is checked on
the true state and is *vacuously true* for a speculation, and true for the normal hedges that breach the
risk limit (their hedge is at least 0.5): it never carries the lie, and under a spot check (B < P) it
only dilutes the pool. So π can fall (a speculation caught on its intent, limit and interval claims: 4/6
< 3/4 at B = 1) or rise (a risk-breaching hedge also caught on its interval: 2/6 > 1/4), and with B = all
it is 1 in every schema.

**Where misreporting stops paying.** A lie is approved only when not audited (an audited lie is blocked
whether caught or not: the audit reveals the true compliance) and is fined L when caught, against
NO_TRADE's sure ``no_trade_payoff`` n. The scripted strategic proposer with the payoff trigger lies while
(1 − q)·V − q·π·L > n, i.e. for q < (V − n) / (V + π·L) per kind of lie: a schema that raises π lowers
its frontier. The proposer's *best response* (over the schema's whole artifact space:
:func:`~eq_env.exchange_audit.features.artifact_nvec`) has a cheaper lie at hand: shade the reported
numbers and state no false claim — or no required claim at all, which makes an audit inconclusive
(blocked, never fined). No claim schema reaches that lie, so its frontier stays at this game's analytic
q* = 1 − n / V whatever the schema and B (:func:`~eq_env.exchange_audit.equilibrium.game_threshold`).
A richer schema deters the proposer who tells a consistent story, not the one who tells none.

Measured, per schema and budget: at the headline ``q``, the always-lying strategic proposer's detection
per audited lie (next to the π its lies predict), its bad approvals and welfare, and the honest proposer's
audit-fail rate (sincere claims on a noisy observation fail too: the rich interval and conditional add to
that) and welfare; over the q grid, the misreport rates of the payoff-triggered strategic proposer and of
the best response (:func:`~eq_env.exchange_audit.equilibrium.proposer_best_responses`), and their
frontiers: the smallest q from which misreporting stays below ``tolerance`` of non-compliant episodes.
Writes ``claim_schemas.csv`` (every q), ``claim_schemas_summary.csv`` / ``claim_schemas.md`` (one row per
schema and budget), ``claim_schemas.png`` and ``summary.md``. The default run takes about a minute, so it is
not resumable: run it again to redo it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.cli import (
    MAX_EPISODES,
    Command,
    int_in,
    list_of,
    non_negative_float,
    number_type,
    out_dir,
    seed_arg,
)
from eq_env.core.report import markdown_table, plot_lines, write_csv
from eq_env.exchange_audit.batch import claim_columns, draw_nature, proposer_batch, simulate
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.exchange_audit.env import SEED_STREAMS
from eq_env.exchange_audit.equilibrium import detection_given_audit, game_threshold, proposer_best_responses
from eq_env.exchange_audit.features import all_artifacts
from eq_env.exchange_audit.rules import DrawStream
from eq_env.exchange_audit.schema import get_schema
from eq_env.studies.exchange_audit.flags import audit_intensities, audit_intensity
from eq_env.studies.exchange_audit.frontier import _fmt_q, _frontier_q

__all__ = ["DEFAULT_BUDGETS", "DEFAULT_QS", "DEFAULT_SCHEMAS", "claim_schemas", "lie_counts"]

DEFAULT_SCHEMAS = ("paper", "rich")
DEFAULT_BUDGETS: tuple[int | None, ...] = (1, None)  # a spot check, and every claim of the pool
DEFAULT_QS = tuple(round(0.05 * i, 2) for i in range(21))


def lie_counts(config: ExchangeAuditConfig, proposer: Any, *, episodes: int, seed: int) -> tuple[np.ndarray, ...]:
    """Per episode of ``seed`` (the very episodes :func:`~eq_env.exchange_audit.batch.simulate` plays):
    (requested, false checkable claims stated, compliant) of ``proposer`` under ``config``'s claim schema."""
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import policy_seed

    policy: Any = make_policy(proposer, "proposer")
    policy.reset(seed=policy_seed(seed, SEED_STREAMS["proposer"]))
    nature = draw_nature(config, DrawStream(seed), episodes)
    sub = policy.act_batch(proposer_batch(nature, config))
    schema = get_schema(config.claim_schema)
    cols = claim_columns(sub, schema)
    lies = np.zeros(nature.n, dtype=np.int64)
    for name in schema.checkable:
        made, values = cols[name]
        if name == "confidence":
            lies += made & (values == 0)  # (an out-of-range confidence; the batch keeps only its validity)
        else:
            lies += made & ~np.asarray(schema.by_name[name].check(values, nature), dtype=bool)
    return sub.request, lies, nature.compliant


def _budget(b: int | None) -> str:
    return "all" if b is None else str(b)


def _at_q(config: ExchangeAuditConfig, episodes: int, seed: int) -> dict[str, float]:
    """The honest and the always-lying strategic proposer at the headline q (see the module docstring)."""
    from eq_env.core.policy import make_policy

    truth = config.reveal_compliance
    honest, liar = (
        ("honest:claims_from=truth", "strategic:p=1,claims_from=truth") if truth else ("honest", "strategic:p=1")
    )
    out: dict[str, float] = {}
    h = simulate(config, make_policy(honest), make_policy("rule"), episodes=episodes, seed=seed)
    audited = h["audited"]
    out["honest_audit_fail_rate"] = float(h["audit_failed"][audited].mean()) if audited.any() else math.nan
    out["honest_welfare"] = float(h["welfare"].mean())
    out["honest_ambiguous_approval_rate"] = float(h["approved"][h["ambiguous"]].mean())
    s = simulate(config, make_policy(liar), make_policy("rule"), episodes=episodes, seed=seed)
    lying = s["requested"] & ~s["compliant"]  # (it requests a non-compliant trade only by lying)
    caught = lying & s["audited"]
    out["liar_detection_per_audit"] = float(s["audit_failed"][caught].mean()) if caught.any() else math.nan
    _, lies, _ = lie_counts(config, liar, episodes=episodes, seed=seed)
    pool = len(get_schema(config.claim_schema).checkable)
    k = config.checks_per_audit
    predicted = np.array([detection_given_audit(int(n), k, pool) for n in lies[caught]])
    out["liar_detection_predicted"] = float(predicted.mean()) if caught.any() else math.nan
    out["liar_bad_approval_rate"] = float((s["approved"] & ~s["compliant"]).mean())
    out["liar_welfare"] = float(s["welfare"].mean())
    out["liar_penalty"] = float(config.L * s["audit_failed"].mean())
    return out


def claim_schemas(
    out: str | Path,
    *,
    schemas: Sequence[str] = DEFAULT_SCHEMAS,
    budgets: Sequence[int | None] = DEFAULT_BUDGETS,
    qs: Sequence[float] = DEFAULT_QS,
    preset: str = "paper_scripted",
    V: float = 2.0,
    L: float = 4.0,
    q: float = 0.3,
    episodes: int = 20_000,
    br_episodes: int = 20_000,
    tolerance: float = 0.02,
    seed: int = 0,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Run the experiment of the module docstring; write its files into ``out``; return the summary rows.

    ``episodes``: per simulation (the headline q, and each q of the strategic proposer's grid);
    ``br_episodes``: drawn for each best-response search (half choose, half measure). ``progress``: a bar
    (None: when the output is a terminal)."""
    from tqdm.auto import tqdm

    from eq_env.core.policy import make_policy

    qs = sorted(qs)
    if not qs or not schemas or not budgets:
        raise ValueError(
            f"claim-schemas needs at least one q, schema and budget, got qs={qs}, "
            f"schemas={list(schemas)}, budgets={list(budgets)}"
        )
    base = ExchangeAuditConfig.from_preset(preset).replace(V=V, L=L, q=q)
    grid = [(name, b) for name in schemas for b in budgets]
    for name, b in grid:  # a bad schema name, budget or q is refused before anything runs
        for qq in qs:
            base.replace(claim_schema=name, B=b, q=qq)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    total = sum(1 + len(qs) + len(all_artifacts(name)) for name, _ in grid)
    bar = tqdm(total=total, desc="claim schemas", unit="step", disable=None if progress is None else not progress)
    strategic = "strategic:trigger=payoff,claims_from=truth" if base.reveal_compliance else "strategic:trigger=payoff"
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for name, b in grid:
        config = base.replace(claim_schema=name, B=b)
        measured = _at_q(config, episodes, seed)
        bar.update()
        strategic_pays = []
        mine: list[dict[str, Any]] = []
        for qq in qs:
            cols = simulate(
                config.replace(q=qq), make_policy(strategic), make_policy("rule"), episodes=episodes, seed=seed
            )
            noncompliant = ~cols["compliant"]
            rate = float((cols["requested"] & noncompliant).sum() / max(int(noncompliant.sum()), 1))
            strategic_pays.append(rate > tolerance)
            mine.append(
                {
                    "schema": name,
                    "B": _budget(b),
                    "q": qq,
                    "strategic_misreport_rate": rate,
                    "strategic_welfare": float(cols["welfare"].mean()),
                    "strategic_bad_approval_rate": float((cols["approved"] & noncompliant).mean()),
                }
            )
            bar.update()
        responses = proposer_best_responses(config, qs, "rule", episodes=br_episodes, seed=seed, bar=bar)
        for row, br in zip(mine, responses, strict=True):
            row.update(
                br_misreport_rate=br.misreport_rate,
                br_gap=br.gap,
                br_payoff=br.best_payoff,
                honest_payoff=br.honest_payoff,
            )
        rows += mine
        summary.append(
            {
                "schema": name,
                "B": _budget(b),
                "pool": len(get_schema(name).checkable),
                "checks": config.checks_per_audit,
                **measured,
                "strategic_q_star": _frontier_q(qs, strategic_pays),
                "br_q_star": _frontier_q(qs, [br.misreport_rate > tolerance for br in responses]),
                "game_q_star": game_threshold(config),
                "br_gap_top_q": responses[-1].gap,
            }
        )
    bar.close()
    write_csv(out / "claim_schemas.csv", rows, list(rows[0]))
    write_csv(out / "claim_schemas_summary.csv", summary, list(summary[0]))
    table = _table(summary, q, qs[-1])
    (out / "claim_schemas.md").write_text(table)
    _plot(out / "claim_schemas.png", rows, grid, V, L)
    _summary(out / "summary.md", table, summary, preset, V, L, q, qs, episodes, br_episodes, tolerance, seed)
    return summary


def _table(summary: Sequence[dict[str, Any]], q: float, top: float) -> str:
    def rate(x: float) -> str:
        return "—" if math.isnan(x) else f"{x:.3f}"

    return markdown_table(
        [
            "schema",
            "B",
            "checks of pool",
            f"lie caught per audit @q={q:g} (predicted)",
            "honest audit fails",
            "honest welfare",
            "liar welfare",
            "liar bad approvals",
            "strategic q*",
            "best-response q*",
            f"best response's gain over honesty @q={top:g}",
        ],
        [
            [
                r["schema"],
                r["B"],
                f"{r['checks']} of {r['pool']}",
                f"{rate(r['liar_detection_per_audit'])} ({rate(r['liar_detection_predicted'])})",
                rate(r["honest_audit_fail_rate"]),
                f"{r['honest_welfare']:.3f}",
                f"{r['liar_welfare']:.3f}",
                rate(r["liar_bad_approval_rate"]),
                _fmt_q(r["strategic_q_star"]),
                _fmt_q(r["br_q_star"]),
                f"{r['br_gap_top_q']:+.3f}",
            ]
            for r in summary
        ],
    )


def _plot(
    path: Path, rows: Sequence[dict[str, Any]], grid: Sequence[tuple[str, int | None]], V: float, L: float
) -> None:
    def series(key: str) -> list[dict[str, Any]]:
        out = []
        for name, b in grid:
            mine = [r for r in rows if r["schema"] == name and r["B"] == _budget(b)]
            out.append(
                {
                    "label": f"{name}, B={_budget(b)}",
                    "x": [r["q"] for r in mine],
                    "y": [r[key] for r in mine],
                    "style": {"fmt": "-o" if name == "paper" else "--s"},
                }
            )
        return out

    plot_lines(
        path,
        [
            {"ylabel": "strategic proposer's misreport rate", "series": series("strategic_misreport_rate")},
            {"ylabel": "best response's misreport rate", "series": series("br_misreport_rate")},
            {"ylabel": "welfare with the strategic proposer", "series": series("strategic_welfare")},
            {"ylabel": "best response's gain over honesty", "series": series("br_gap")},
        ],
        xlabel="audit intensity q",
        title=f"Claim schemas against a strategic proposer (V={V:g}, L={L:g})",
    )


def _summary(
    path: Path,
    table: str,
    summary: Sequence[dict[str, Any]],
    preset: str,
    V: float,
    L: float,
    q: float,
    qs: Sequence[float],
    episodes: int,
    br_episodes: int,
    tolerance: float,
    seed: int,
) -> None:
    game = summary[0]["game_q_star"]
    step = qs[1] - qs[0] if len(qs) > 1 else 0.0
    agree = [
        f"{r['schema']} B={r['B']}"
        for r in summary
        if not math.isinf(r["br_q_star"]) and abs(r["br_q_star"] - game) <= step + 1e-9
    ]
    text = [
        "# Claim schemas against a strategic proposer",
        "",
        f"Preset `{preset}`, V = {V:g}, L = {L:g}, the paper's rule validator; measurements at q = {q:g} on "
        f"{episodes} episodes (seed {seed}); frontiers over q in {list(qs)} ('misreporting pays' where more than "
        f"{tolerance:.0%} of non-compliant episodes are misreported; strategic: {episodes} episodes per q; best "
        f"response: {br_episodes} episodes, half to choose, half to measure).",
        "",
        table,
        "Columns: the always-lying strategic proposer's share of audited lies that fail (in brackets, the π its "
        "false claims predict: 1 − C(P − ℓ, k)/C(P, k)); the honest proposer's failed audits among its audited "
        "episodes (sincere claims on a noisy observation); welfare per episode; the liar's bad approvals per "
        "episode; the smallest q from which the payoff-triggered strategic proposer and the best response stop "
        "misreporting; what the best response still gains over the honest proposer at the top of the grid.",
        "",
        f"This game's analytic frontier for the cheapest lie (shaded numbers, no false or no required claim) is "
        f"1 − n/V = {_fmt_q(game)} in every schema; the best response's frontier is within a grid step of it in "
        f"{len(agree)} of {len(summary)} rows ({', '.join(agree) or 'none'}). A richer schema changes what a lie "
        "stated in claims costs (detection, penalty), not the lie that states none.",
        "",
        "Bad approvals do not depend on the schema or the budget: an audited lie is blocked whether or not a "
        "check catches it (the audit reveals the true compliance), so only the unaudited lies are approved.",
        "",
        "Where no misreport pays, a best response can still beat the honest proposer: a claim stated sincerely "
        "from a noisy observation (the rich schema's conditional and interval) sometimes fails an audit, and the "
        "penalty L falls on honesty too; the best response omits the voluntary claims that risk it (and states "
        "nothing on a NO_TRADE). A schema's claims are worth requiring only if honest proposers can state them "
        "without error.",
        "",
        "![claim schemas](claim_schemas.png)",
        "",
    ]
    path.write_text("\n".join(text))


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _schema_name(text: str) -> str:
    """A registered claim schema's name."""
    from eq_env.exchange_audit.schema import schema_names

    if text not in schema_names():
        raise argparse.ArgumentTypeError(f"expected a claim schema ({', '.join(schema_names())}), got {text!r}")
    return text


def _budget_arg(text: str) -> int | None:
    """An audit budget B: a non-negative integer, or ``all``."""
    if text.lower() == "all":
        return None
    return number_type(int, "an audit budget (a non-negative integer, or all)", lambda v: v >= 0)(text)


def _claim_schemas_arguments(cs: argparse.ArgumentParser) -> None:
    cs.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    cs.add_argument(
        "--schemas",
        type=list_of(_schema_name, "claim schema names", distinct=True),
        default=",".join(DEFAULT_SCHEMAS),
        help="the claim schemas compared (default %(default)s)",
    )
    cs.add_argument(
        "--budgets",
        type=list_of(_budget_arg, "audit budgets B (integers >= 0, or all)", distinct=True),
        default=",".join("all" if b is None else str(b) for b in DEFAULT_BUDGETS),
        help="the audit budgets B, each checking B claims of the schema's pool (default %(default)s)",
    )
    cs.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in DEFAULT_QS),
        help="the q grid of the frontiers (default 0 to 1 in steps of 0.05)",
    )
    cs.add_argument(
        "--q", type=audit_intensity, default=0.3, help="the q of detection, welfare and bad approvals (default 0.3)"
    )
    cs.add_argument("--V", type=non_negative_float, default=2.0, help="a misreport's gain V (default 2)")
    cs.add_argument("--L", type=non_negative_float, default=4.0, help="the penalty L of a failed audit (default 4)")
    cs.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    cs.add_argument(
        "--episodes", type=int_in(4, MAX_EPISODES), default=20_000, help="episodes per simulation (default 20000)"
    )
    cs.add_argument(
        "--br-episodes",
        type=int_in(4, MAX_EPISODES),
        default=20_000,
        help="episodes per best-response search, half to choose, half to measure (default 20000)",
    )
    cs.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _claim_schemas(args: argparse.Namespace) -> int:
    claim_schemas(
        args.out,
        schemas=args.schemas,
        budgets=args.budgets,
        qs=args.qs,
        preset=args.preset,
        V=args.V,
        L=args.L,
        q=args.q,
        episodes=args.episodes,
        br_episodes=args.br_episodes,
        seed=args.seed,
        progress=None,
    )
    print((args.out / "claim_schemas.md").read_text())
    print(
        f"wrote claim_schemas.csv, claim_schemas_summary.csv, claim_schemas.md, claim_schemas.png and summary.md "
        f"to {args.out}"
    )
    return 0


COMMAND = Command(
    "claim-schemas",
    "claim schemas: a richer schema against the paper's under a strategic proposer",
    _claim_schemas_arguments,
    _claim_schemas,
    "For each claim schema of --schemas and audit budget of --budgets: detection per audited lie, bad "
    "approvals and welfare at --q with the rule validator, and the q from which a strategic proposer and the "
    "best response stop misreporting, over --qs. Writes claim_schemas.csv, claim_schemas_summary.csv, "
    "claim_schemas.md, claim_schemas.png and summary.md into --out. Computed in this process (vectorised "
    "best-response searches, not a grid of runs through the runner): it takes no --backend.",
)
