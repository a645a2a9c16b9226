"""``eq-env noisy-audits``: what noisy detection does to the exchange–audit game.

**The threshold generalised to noisy detection.** Eq. 3 compares a lie (one false claim) with an honest
request that is blocked: the lie pays V unless an audit detects it (probability q·π, π = B/4 the chance its
false claim is checked), and then it pays −L as well. With noisy audits a checked lie passes with
probability ε₀ and every checked true claim fails with probability ε₁, so given an audit

* the lie fails with d = 1 − [π·ε₀·(1 − ε₁)^(B−1) + (1 − π)·(1 − ε₁)^B],
* an honest proposer's (all-true) claims fail with φ = 1 − (1 − ε₁)^B, and it pays L then too.

Deterrence, V·(1 − q·d) − q·d·L + ΔC ≤ −q·φ·L (ΔC = C(r_lie) − C(r_honest) where eq. 3 puts it, on the side
of the lie's gain V), gives

    q* = (V + ΔC) / ((V + L)·d − L·φ)        (inf when the denominator is ≤ 0 or q* > 1),

which is eq. 3 at ε₀ = ε₁ = 0 (d = π, φ = 0). Missed lies shrink d; false fails raise d a little but
raise φ more (they punish honesty too), so both push the frontier up.

For each (ε₀, ε₁) of the grid the command measures, with the paper's rule validator: welfare, the honest
proposer's expected penalty, bad approvals of an honest and a strategic proposer at the scenario's q; and the
deterrence frontier from the proposer's best response
(:func:`~eq_env.exchange_audit.equilibrium.proposer_best_response`) over a grid of q, next to the
analytic q*. Writes ``noisy_audits.csv`` (every q), ``noisy_audits_summary.csv`` / ``noisy_audits.md``,
``noisy_audits.png`` (the best response's misreport rate against q), ``noisy_audits_penalty.png``
(the honest proposer's expected penalty against ε₁) and ``summary.md``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eq_env.core.cli import (
    MAX_EPISODES,
    Command,
    int_in,
    list_of,
    non_negative_float,
    out_dir,
    seed_arg,
)
from eq_env.core.report import markdown_table, plot_lines, write_csv
from eq_env.exchange_audit.batch import simulate
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import proposer_best_response
from eq_env.studies.exchange_audit.flags import audit_intensities, audit_intensity, rate
from eq_env.studies.exchange_audit.frontier import DEFAULT_QS, _fmt_q, _frontier_q

__all__ = ["DEFAULT_NOISE", "noisy_audits", "noisy_detection", "noisy_threshold"]

DEFAULT_NOISE = ((0.0, 0.0), (0.1, 0.0), (0.3, 0.0), (0.5, 0.0), (0.0, 0.05), (0.0, 0.1), (0.3, 0.1))


def noisy_detection(checks: int, miss: float, false_fail: float) -> tuple[float, float]:
    """(d, φ): P(an audit fails a one-lie artifact), P(it fails an all-true one), ``checks`` of the 4 checked."""
    b = max(0, min(checks, 4))
    pi = b / 4
    passes = pi * miss * (1 - false_fail) ** max(b - 1, 0) + (1 - pi) * (1 - false_fail) ** b
    return 1.0 - passes, 1.0 - (1 - false_fail) ** b


def noisy_threshold(V: float, L: float, checks: int, miss: float, false_fail: float, extra_cost: float = 0.0) -> float:
    """The smallest q deterring a one-lie misreport under noisy audits (module docstring); inf if none ≤ 1."""
    d, phi = noisy_detection(checks, miss, false_fail)
    need = V + extra_cost
    if need <= 0:
        return 0.0
    denominator = (V + L) * d - L * phi
    if denominator <= 0:
        return math.inf
    q = need / denominator
    return q if q <= 1.0 else math.inf


def noisy_audits(
    out: str | Path,
    *,
    noise: Sequence[tuple[float, float]] = DEFAULT_NOISE,
    qs: Sequence[float] = DEFAULT_QS,
    preset: str = "paper_scripted",
    V: float = 2.0,
    L: float = 1.0,
    q: float = 0.3,
    episodes: int = 20_000,
    tolerance: float = 0.02,
    seed: int = 0,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Run the experiment of the module docstring; write its files; return the summary rows.

    ``progress``: a progress bar (None: when the output is a terminal)."""
    from tqdm.auto import tqdm

    qs = sorted(qs)
    if not qs or not noise:
        raise ValueError(f"noisy audits need at least one q and one (ε₀, ε₁), got qs={qs}, noise={list(noise)}")
    base = ExchangeAuditConfig.from_preset(preset).replace(V=V, L=L, q=q)
    for qq in qs:
        base.replace(q=qq)  # a q or a rate outside [0, 1] is refused before anything runs
    for miss, false_fail in noise:
        base.with_audit_noise(miss, false_fail)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bar = tqdm(
        total=len(noise) * (2 + len(qs)),
        desc="noisy audits",
        unit="run",
        disable=None if progress is None else not progress,
    )
    honest = "honest:claims_from=truth" if base.reveal_compliance else "honest"
    strategic = "strategic:trigger=payoff,claims_from=truth" if base.reveal_compliance else "strategic:p=0.5"
    from eq_env.core.policy import make_policy

    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for miss, false_fail in noise:
        config = base.with_audit_noise(miss, false_fail)
        at_q = config.replace(q=q)
        measured: dict[str, float] = {}
        for name, spec in (("honest", honest), ("strategic", strategic)):
            cols = simulate(at_q, make_policy(spec), make_policy("rule"), episodes=episodes, seed=seed)
            measured[f"{name}_welfare"] = float(cols["welfare"].mean())
            measured[f"{name}_bad_approval_rate"] = float((cols["approved"] & ~cols["compliant"]).mean())
            measured[f"{name}_penalty"] = float(at_q.L * cols["audit_failed"].mean())
            bar.update()
        pays = []
        for qq in qs:
            br = proposer_best_response(config.replace(q=qq), episodes=episodes, seed=seed)
            pays.append(br.misreport_rate > tolerance)
            rows.append(
                {
                    "miss": miss,
                    "false_fail": false_fail,
                    "q": qq,
                    "br_misreport_rate": br.misreport_rate,
                    "br_gap": br.gap,
                    "br_payoff": br.best_payoff,
                    "honest_payoff": br.honest_payoff,
                }
            )
            bar.update()
        d, phi = noisy_detection(config.checks_per_audit, miss, false_fail)
        summary.append(
            {
                "miss": miss,
                "false_fail": false_fail,
                "detect_given_audit": d,
                "honest_fail_given_audit": phi,
                "analytic_q_star": noisy_threshold(V, L, config.checks_per_audit, miss, false_fail),
                "best_response_q_star": _frontier_q(qs, pays),
                **measured,
            }
        )
    bar.close()
    write_csv(out / "noisy_audits.csv", rows, list(rows[0]))
    write_csv(out / "noisy_audits_summary.csv", summary, list(summary[0]))
    shown = (
        "miss",
        "false_fail",
        "analytic_q_star",
        "best_response_q_star",
        "honest_penalty",
        "honest_welfare",
        "strategic_welfare",
        "strategic_bad_approval_rate",
    )
    table = markdown_table(
        [
            "ε₀",
            "ε₁",
            "q* analytic",
            "q* best response",
            f"honest penalty @q={q:g}",
            "honest welfare",
            "strategic welfare",
            "strategic bad approvals",
        ],
        [[_fmt_q(r[k]) if k.endswith("q_star") else r[k] for k in shown] for r in summary],
    )
    (out / "noisy_audits.md").write_text(table)
    keys = [(m, f) for m, f in noise]
    series = [
        {
            "label": f"ε₀={m:g}, ε₁={f:g}",
            "x": [r["q"] for r in rows if (r["miss"], r["false_fail"]) == k],
            "y": [r["br_misreport_rate"] for r in rows if (r["miss"], r["false_fail"]) == k],
        }
        for k in keys
        for m, f in [k]
    ]
    plot_lines(
        out / "noisy_audits.png",
        [{"ylabel": "best response's misreport rate", "series": series}],
        xlabel="q",
        title=f"Noisy audits: the best response (V={V:g}, L={L:g}, B={base.checks_per_audit})",
    )
    # The honest proposer's expected penalty against the false-fail rate, a line per miss rate (its own x axis).
    misses = sorted({m for m, _ in noise})
    penalty = [
        {
            "label": f"ε₀={m:g}",
            "x": [r["false_fail"] for r in summary if r["miss"] == m],
            "y": [r["honest_penalty"] for r in summary if r["miss"] == m],
        }
        for m in misses
    ]
    plot_lines(
        out / "noisy_audits_penalty.png",
        [{"ylabel": f"honest proposer's expected penalty at q={q:g}", "series": penalty}],
        xlabel="ε₁ (false-fail rate)",
        title=f"Noisy audits: what false fails cost the honest (V={V:g}, L={L:g}, B={base.checks_per_audit})",
    )
    (out / "summary.md").write_text(
        f"# Noisy audits\n\nPreset {preset}, V = {V:g}, L = {L:g}, B = {base.checks_per_audit}, "
        f"{episodes} episodes, seed {seed}; welfare, penalties and bad approvals at q = {q:g}; frontier over "
        f"q in {list(qs)} (misreporting pays where the best response misreports in more than {tolerance:.0%} "
        f"of non-compliant episodes).\n\n{table}\n"
    )
    return summary


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _noise_pair(text: str) -> tuple[float, float]:
    """``EPS0:EPS1``: a miss rate and a false-fail rate, both in [0, 1]."""
    parts = text.split(":")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected EPS0:EPS1 (a miss and a false-fail rate), got {text!r}")
    return rate(parts[0].strip()), rate(parts[1].strip())


_noise = list_of(_noise_pair, "EPS0:EPS1 pairs (miss and false-fail rates in [0, 1])", distinct=True)


def _noisy_audits_arguments(na: argparse.ArgumentParser) -> None:
    na.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    na.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    na.add_argument(
        "--noise",
        type=_noise,
        default=",".join(f"{m:g}:{f:g}" for m, f in DEFAULT_NOISE),
        help="the (ε₀, ε₁) grid as EPS0:EPS1 pairs, the same rates for every claim type (default %(default)s)",
    )
    na.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
        help="the q grid of the best-response frontier (default 0 to 1 in steps of 0.1)",
    )
    na.add_argument(
        "--q", type=audit_intensity, default=0.3, help="the q of welfare, penalty and bad approvals (default 0.3)"
    )
    na.add_argument("--V", type=non_negative_float, default=2.0, help="a misreport's gain V (default 2)")
    na.add_argument("--L", type=non_negative_float, default=1.0, help="the penalty L of a failed audit (default 1)")
    na.add_argument(
        "--episodes",
        type=int_in(4, MAX_EPISODES),
        default=20_000,
        help="episodes per measurement and per best response (default 20000)",
    )
    na.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _noisy_audits(args: argparse.Namespace) -> int:
    noisy_audits(
        args.out,
        noise=args.noise,
        qs=args.qs,
        preset=args.preset,
        V=args.V,
        L=args.L,
        q=args.q,
        episodes=args.episodes,
        seed=args.seed,
        progress=None,
    )
    print((args.out / "noisy_audits.md").read_text())
    print(
        f"wrote noisy_audits.csv, noisy_audits_summary.csv, noisy_audits.md, noisy_audits.png, "
        f"noisy_audits_penalty.png and summary.md to {args.out}"
    )
    return 0


COMMAND = Command(
    "noisy-audits",
    "noisy audits: welfare, honest penalty, bad approvals and the frontier as ε₀, ε₁ grow",
    _noisy_audits_arguments,
    _noisy_audits,
    "For each (ε₀, ε₁) of --noise (missed lies, false fails of true claims): welfare, an honest proposer's "
    "expected penalty and bad approvals at --q with the rule validator, and the deterrence frontier from "
    "a best-response search over --qs next to eq. 3 generalised to noisy detection. Writes "
    "noisy_audits.csv, noisy_audits_summary.csv, noisy_audits.md, noisy_audits.png, noisy_audits_penalty.png and "
    "summary.md into --out. Computed in this process (vectorised simulations and best-response searches, not a "
    "grid of runs through the runner): it takes no --backend.",
)
