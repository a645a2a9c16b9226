"""``eq-env frontier``: the deterrence frontier three ways — the paper's eq. 3, a best-response search, PPO.

For each scenario (V, L, B) the *deterrence frontier* is the smallest audit
intensity q from which misreporting no longer pays (and does not pay again at
any higher q of the grid). It is measured three ways, side by side:

* **analytic (eq. 3)**: q* = V / ((V + L)·π), where π is the chance that an
  audit checks a false claim (:func:`eq_env.exchange_audit.equilibrium.analytic_threshold`),
  for the least detectable lie (one false claim) — the paper's condition,
  which compares a lie with an honest request that is *blocked*;
* **analytic (this game)**: the same reasoning applied to the game as built.
  An honest proposer that cannot get approval sends NO_TRADE, worth
  ``no_trade_payoff``; and audits check claims, not reported numbers, so the
  cheapest lie shades the numbers and states no false claim: never penalised,
  only blocked when audited. It pays while (1 − q)·V > no_trade_payoff, i.e.
  q* = 1 − no_trade_payoff / V, whatever L and B;
* **best response**: the proposer's best response to the rule validator over
  the discrete artifact space (:func:`eq_env.exchange_audit.equilibrium.proposer_best_response`)
  at each q of the grid; misreporting "pays" where the best response
  misreports in more than ``tolerance`` of non-compliant episodes;
* **PPO**: one PPO proposer per scenario trained on episodes whose q is drawn
  from the grid (it sees q), evaluated at each q the same way.

The frontier is known to the grid's resolution: a reported q* means "between
the previous grid point and this one". Writes ``frontier.csv`` (one row per
scenario and q), ``frontier_summary.csv`` / ``frontier.md`` (one row per
scenario), ``frontier.png``, ``misreport_vs_q.png`` and ``points.jsonl`` (the best responses, as they finish:
a run again resumes from them; see :func:`frontier` for where they run).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from eq_env.core.cli import (
    MAX_EPISODES,
    Command,
    add_backend_flags,
    executor_of,
    int_in,
    jobs_arg,
    out_dir,
    seed_arg,
    timesteps_arg,
)
from eq_env.core.executors import Call, Executor, LocalExecutor
from eq_env.core.experiments import ResultsStore
from eq_env.core.report import from_json_number, json_number, markdown_table, plot_lines, write_csv
from eq_env.exchange_audit.batch import proposer_batch, sample_nature
from eq_env.exchange_audit.config import PRESETS, ExchangeAuditConfig
from eq_env.exchange_audit.equilibrium import (
    _misreports,
    analytic_threshold,
    game_threshold,
    proposer_best_response,
    proposer_payoff,
)
from eq_env.exchange_audit.rules import DrawStream
from eq_env.studies.exchange_audit.flags import audit_intensities

__all__ = ["DEFAULT_QS", "DEFAULT_SCENARIOS", "Scenario", "frontier", "misreport_rate"]

DEFAULT_QS = tuple(round(0.1 * i, 1) for i in range(11))


@dataclass(frozen=True)
class Scenario:
    name: str
    V: float
    L: float
    B: int | None

    def config(self, base: ExchangeAuditConfig, q: float) -> ExchangeAuditConfig:
        return base.replace(V=self.V, L=self.L, B=self.B, q=q)


DEFAULT_SCENARIOS = (
    Scenario("baseline", 1.0, 2.0, 4),
    Scenario("temptation", 2.0, 1.0, 4),
    Scenario("temptation_spot_check", 2.0, 1.0, 1),
    Scenario("temptation_punishment", 2.0, 4.0, 4),
    Scenario("high_value", 3.0, 2.0, 4),
)


def misreport_rate(config: ExchangeAuditConfig, proposer: Any, *, episodes: int = 20_000, seed: int = 7) -> float:
    """Share of non-compliant episodes in which ``proposer`` requests approval with a misreport."""
    from eq_env.core.policy import make_policy

    policy: Any = make_policy(proposer, "proposer")
    nature = sample_nature(config, *DrawStream(seed).batch(episodes))
    views = proposer_batch(nature, config)
    policy.reset(seed=seed)
    sub = policy.act_batch(views)
    noncompliant = ~nature.compliant
    return float((_misreports(sub, nature, views) & noncompliant).sum() / max(int(noncompliant.sum()), 1))


def _frontier_q(qs: Sequence[float], pays: Sequence[bool]) -> float:
    """The smallest q of the grid from which misreporting never pays again (inf if it pays at the top)."""
    if pays[-1]:
        return math.inf
    q_star = qs[-1]
    for q, p in zip(reversed(qs), reversed(pays), strict=True):
        if p:
            break
        q_star = q
    return q_star


def frontier(
    out: str | Path,
    *,
    scenarios: Sequence[Scenario] = DEFAULT_SCENARIOS,
    qs: Sequence[float] = DEFAULT_QS,
    preset: str = "paper_scripted",
    episodes: int = 20_000,
    timesteps: int = 60_000,
    tolerance: float = 0.02,
    seed: int = 0,
    train_ppo: bool = True,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """Measure the frontier for every scenario; write the files of the module docstring; return the summary rows.

    Without PPO (``train_ppo=False``) the PPO columns, text and plot series are left out, not shown empty.

    The best responses — one per (scenario, q), independent — go to ``executor`` (default: this process,
    one by one; local worker processes or a Ray cluster, see :mod:`eq_env.core.executors`) and are recorded
    in ``OUT/points.jsonl`` as they finish: the same command run again (after an interrupt, or a killed
    driver) skips the recorded ones, and the tables are the same bytes on every backend. PPO is trained
    (once per scenario, reused from ``OUT/ppo``) and evaluated in this process: its model files stay where
    the driver wrote them.
    """
    qs = sorted(qs)
    if not qs or not scenarios:
        raise ValueError(f"the frontier needs at least one q and one scenario, got qs={qs}, {len(scenarios)} scenarios")
    out = Path(out)
    base = ExchangeAuditConfig.from_preset(preset)
    for q in qs:
        base.replace(q=q)  # a q outside [0, 1] is refused before anything runs
    out.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(out / "points.jsonl")
    with store.exclusive():
        points = _best_responses(store, scenarios, base, qs, episodes, seed, executor or LocalExecutor(1), progress)
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for sc in scenarios:
        ppo_spec = None
        if train_ppo:
            ppo_spec = _ppo_for(sc, base, qs, out / "ppo" / sc.name, timesteps, seed)
        br_pays, ppo_pays = [], []
        for q in qs:
            cfg = sc.config(base, q)
            br = {k: from_json_number(points[_point_key(cfg, episodes, seed)][k]) for k in POINT_COLUMNS}
            ppo_rate = misreport_rate(cfg, ppo_spec, episodes=episodes, seed=seed + 1) if ppo_spec else math.nan
            # on the very episodes the best response is measured on: the two compare pairwise
            ppo_payoff = proposer_payoff(cfg, ppo_spec, "rule", episodes=episodes, seed=seed) if ppo_spec else math.nan
            br_pays.append(br["br_misreport_rate"] > tolerance)
            ppo_pays.append(ppo_rate > tolerance)
            rows.append({"scenario": sc.name, "V": sc.V, "L": sc.L, "B": sc.B, "q": q, **br})
            if ppo_spec:
                rows[-1].update(ppo_misreport_rate=ppo_rate, ppo_payoff=ppo_payoff)
        scenario = sc.config(base, qs[0])  # (B=None means every claim: checks_per_audit resolves it)
        summary.append(
            {
                "scenario": sc.name,
                "V": sc.V,
                "L": sc.L,
                "B": sc.B,
                "eq3_q_star": analytic_threshold(sc.V, sc.L, scenario.checks_per_audit, lies=1),
                "game_q_star": game_threshold(scenario),
                "br_q_star": _frontier_q(qs, br_pays),
                **({"ppo_q_star": _frontier_q(qs, ppo_pays)} if ppo_spec else {}),
            }
        )
    write_csv(out / "frontier.csv", rows, list(rows[0]))
    write_csv(out / "frontier_summary.csv", summary, list(summary[0]))
    _write_markdown(out, summary, rows, qs, tolerance, preset, episodes, timesteps if train_ppo else None, seed)
    _plots(out, summary, rows, scenarios, train_ppo)
    return summary


POINT_COLUMNS = ("br_misreport_rate", "br_gap", "br_payoff", "honest_payoff")


def _point_key(config: ExchangeAuditConfig, episodes: int, seed: int) -> str:
    """What determines a best response (the package version too: code changes may change it)."""
    from eq_env import __version__

    blob = json.dumps(
        {"eq_env": __version__, "config": config.to_dict(), "episodes": episodes, "seed": seed}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def best_response_point(config: ExchangeAuditConfig, episodes: int, seed: int) -> dict[str, Any]:
    """One point of the frontier: the proposer's best response to the rule validator at ``config``'s q, as
    a record of :data:`POINT_COLUMNS` (plain floats, NaN as null) keyed by :func:`_point_key` (an executor's task)."""
    br = proposer_best_response(config, "rule", episodes=episodes, seed=seed)
    values = (br.misreport_rate, br.gap, br.best_payoff, br.honest_payoff)
    point = {k: json_number(float(v)) for k, v in zip(POINT_COLUMNS, values, strict=True)}
    return {"key": _point_key(config, episodes, seed), **point}


def _best_responses(
    store: ResultsStore,
    scenarios: Sequence[Scenario],
    base: ExchangeAuditConfig,
    qs: Sequence[float],
    episodes: int,
    seed: int,
    executor: Executor,
    progress: bool | None,
) -> dict[str, dict[str, Any]]:
    """Every point's record, those in ``store`` reused, the others computed and appended as they finish.
    Every row is read back through JSON, so a point computed now and one recorded earlier are the same."""
    store.compact()
    done = store.load()
    configs = {_point_key(c, episodes, seed): c for c in (sc.config(base, q) for sc in scenarios for q in qs)}
    todo = [(key, c) for key, c in configs.items() if key not in done]
    bar = tqdm(
        total=len(configs),
        initial=len(configs) - len(todo),
        desc="frontier",
        unit="point",
        disable=None if progress is None else not progress,
    )

    def record(point: dict[str, Any]) -> None:
        store.append(point)
        done[point["key"]] = json.loads(json.dumps(point))
        bar.update(1)

    try:
        if executor.runs_inline(len(todo)):
            for _, c in todo:
                record(best_response_point(c, episodes, seed))
        elif todo:
            calls: list[Call] = [((c, episodes, seed), {}) for _, c in todo]
            names = [f"q={c.q:g} V={c.V:g} L={c.L:g}" for _, c in todo]
            with contextlib.closing(executor.map_unordered(best_response_point, calls, names)) as finished:
                for point in finished:
                    record(point)
    finally:
        bar.close()
    store.compact()
    return {key: done[key] for key in configs}


def _ppo_for(
    sc: Scenario, base: ExchangeAuditConfig, qs: Sequence[float], path: Path, timesteps: int, seed: int
) -> str:
    """A PPO proposer for this scenario trained across the q grid (reused if already in ``path``)."""
    import json

    from eq_env.baselines.exchange_audit.rl import train

    meta = path / "policy.json"
    wanted = {
        "config": sc.config(base, qs[0]).to_dict(),
        "audit_intensities": list(qs),
        "timesteps": timesteps,
        "seed": seed,
    }
    if meta.exists():
        have = json.loads(meta.read_text())
        if all(have.get(k) == v for k, v in wanted.items()):
            return f"sb3:path={path}"
    train(
        "proposer",
        path,
        timesteps=timesteps,
        seed=seed,
        config=sc.config(base, qs[0]),
        audit_intensities=qs,
        eval_episodes=500,
        eval_seeds=(1000,),
        progress=False,
    )
    return f"sb3:path={path}"


def _fmt_q(q: float) -> str:
    if math.isnan(q):
        return "—"
    return "never deterred (> 1)" if math.isinf(q) else f"{q:.2f}"


def _write_markdown(
    out: Path,
    summary: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    qs: Sequence[float],
    tolerance: float,
    preset: str,
    episodes: int,
    timesteps: int | None,
    seed: int,
) -> None:
    step = qs[1] - qs[0] if len(qs) > 1 else 0.0
    ppo = timesteps is not None
    table = markdown_table(
        ["scenario", "V", "L", "B", "eq. 3 (paper)", "this game (analytic)", "best response"] + ["PPO"] * ppo,
        [
            [
                r["scenario"],
                f"{r['V']:g}",
                f"{r['L']:g}",
                r["B"],
                _fmt_q(r["eq3_q_star"]),
                _fmt_q(r["game_q_star"]),
                _fmt_q(r["br_q_star"]),
            ]
            + ([_fmt_q(r["ppo_q_star"])] if ppo else [])
            for r in summary
        ],
    )
    agree = [
        r["scenario"]
        for r in summary
        if not math.isinf(r["br_q_star"]) and abs(r["br_q_star"] - r["game_q_star"]) <= step + 1e-9
    ]
    ppo_agree = [
        r["scenario"]
        for r in summary
        if ppo and not math.isinf(r["ppo_q_star"]) and abs(r["ppo_q_star"] - r["br_q_star"]) <= step + 1e-9
    ]
    ppo_sentence = (
        f"; PPO agrees with the best response in {len(ppo_agree)} of {len(summary)} ({', '.join(ppo_agree) or 'none'})."
        if ppo
        else "."
    )
    text = [
        "# The deterrence frontier",
        "",
        f"Smallest audit intensity q from which misreporting stops paying, against the paper's rule validator "
        f"(preset `{preset}`; q grid step {step:g}, so a value means 'between the previous grid point and this "
        f"one'; 'misreporting pays' where more than {tolerance:.0%} of non-compliant episodes are misreported; "
        f"{'best response and PPO' if ppo else 'best response'} measured on {episodes} episodes per q"
        + (
            # (the seeds frontier() evaluates the sb3:path=DIR spec on, which plays the most likely action)
            f"; PPO trained for {timesteps} steps per scenario across the q grid, then played greedily (its most "
            f"likely action), its misreport rate measured on the episodes of seed {seed + 1} and its payoff on "
            f"those of seed {seed} that measure the best response"
            if ppo
            else ""
        )
        + ").",
        "",
        table,
        f"The best-response frontier agrees with this game's analytic threshold, 1 − no_trade_payoff / V, within "
        f"the grid step in {len(agree)} of {len(summary)} scenarios ({', '.join(agree) or 'none'})" + ppo_sentence,
        "",
        "Why eq. 3 differs: it weighs a lie against an honest request that is blocked (worth 0). Here an honest "
        "proposer that cannot be approved sends NO_TRADE, worth 1, so lying must beat 1, not 0; and audits check "
        "claims, not the reported numbers, so the cheapest lie shades the numbers and states no false claim. It is "
        "never fined L, only blocked when audited, so its payoff is (1 − q)·V and the frontier does not move with L "
        "or B. With V = 1 no lie can beat NO_TRADE at any q.",
        "",
        *(_ppo_disagreements(summary, rows, step, tolerance, len(qs), timesteps) if ppo else []),
        "![frontier](frontier.png)",
        "",
        "![misreport vs q](misreport_vs_q.png)",
        "",
    ]
    (out / "frontier.md").write_text("\n".join(text))


def _ppo_disagreements(
    summary: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    step: float,
    tolerance: float,
    n_qs: int,
    timesteps: int | None,
) -> list[str]:
    """A paragraph per scenario where PPO's frontier is more than a grid step from the best response's: where PPO
    still misreports, what a lie loses there, and how close PPO's payoff is to the best response's."""
    lines = []
    for r in summary:
        if math.isnan(r["ppo_q_star"]) or math.isinf(r["br_q_star"]):
            continue
        if abs(r["ppo_q_star"] - r["br_q_star"]) <= step + 1e-9:
            continue
        late = [
            x
            for x in rows
            if x["scenario"] == r["scenario"] and x["q"] > r["br_q_star"] + 1e-9 and x["ppo_misreport_rate"] > tolerance
        ]
        if not late:
            continue
        points = "; ".join(
            f"q = {x['q']:g}: {x['ppo_misreport_rate']:.0%} misreported, payoff "
            f"{x['ppo_payoff'] / x['br_payoff']:.1%} of the best response's"
            for x in late
        )
        lines += [
            f"Why PPO differs in {r['scenario']}: above the best response's frontier it still misreports in some "
            f"non-compliant episodes ({points}). Past the threshold a lie loses 1 − (1 − q)·V against NO_TRADE per "
            f"non-compliant episode, a small signal next to the payoff noise of all episodes; a policy trained for "
            f"{timesteps} steps spread over {n_qs} values of q has not finished unlearning it there. More "
            "`--timesteps` narrow the gap; the best response is the reference.",
            "",
        ]
    return lines


def _plots(
    out: Path,
    summary: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    scenarios: Sequence[Scenario],
    ppo: bool,
) -> None:
    names = [r["scenario"] for r in summary]
    x = list(range(len(names)))

    def capped(key: str) -> list[float]:
        return [min(r[key], 1.05) if not math.isnan(r[key]) else math.nan for r in summary]

    series = [
        {
            "label": "eq. 3 (paper); 1.05 = never deterred",
            "x": x,
            "y": capped("eq3_q_star"),
            "style": {"fmt": "s", "markersize": 8, "mfc": "white"},
        },
        {"label": "this game, analytic", "x": x, "y": capped("game_q_star"), "style": {"fmt": "D", "markersize": 7}},
        {"label": "best response", "x": x, "y": capped("br_q_star"), "style": {"fmt": "o", "markersize": 6}},
    ]
    if ppo:
        series.append({"label": "PPO", "x": x, "y": capped("ppo_q_star"), "style": {"fmt": "x", "markersize": 9}})
    labels = [f"{r['scenario']}\nV={r['V']:g} L={r['L']:g} B={r['B']}" for r in summary]
    plot_lines(
        out / "frontier.png",
        [{"ylabel": "deterrence frontier q*", "series": series}],
        xlabel="scenario",
        xticklabels=labels,
    )
    panels = []
    for sc in scenarios:
        mine = [r for r in rows if r["scenario"] == sc.name]
        panels.append(
            {
                "ylabel": f"misreport rate ({sc.name})",
                "series": [
                    {
                        "label": "best response",
                        "x": [r["q"] for r in mine],
                        "y": [r["br_misreport_rate"] for r in mine],
                    },
                    *(
                        [{"label": "PPO", "x": [r["q"] for r in mine], "y": [r["ppo_misreport_rate"] for r in mine]}]
                        if ppo
                        else []
                    ),
                ],
            }
        )
    plot_lines(out / "misreport_vs_q.png", panels, xlabel="audit intensity q")


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
def _frontier_arguments(fr: argparse.ArgumentParser) -> None:
    fr.add_argument(
        "--out",
        type=out_dir,
        required=True,
        help="output directory: frontier.md/.csv, frontier_summary.csv, two plots, points.jsonl and the PPO "
        "models (ppo/)",
    )
    fr.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="paper_scripted",
        help="game preset (default paper_scripted: the proposer knows its true compliance)",
    )
    fr.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
        help="the q grid: distinct audit intensities in [0, 1] (default 0 to 1 by 0.1)",
    )
    fr.add_argument(
        "--episodes",
        type=int_in(4, MAX_EPISODES),
        default=20_000,
        help="episodes per best response and per evaluation (default 20000)",
    )
    fr.add_argument("--timesteps", type=timesteps_arg, default=60_000, help="PPO training steps per scenario")
    fr.add_argument("--no-ppo", action="store_true", help="skip the PPO column (minutes faster)")
    fr.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    fr.add_argument(
        "--jobs",
        type=jobs_arg,
        help="worker processes for the best responses (default 1); with "
        "--backend ray, the CPUs of the Ray instance started here",
    )
    add_backend_flags(fr)


def _frontier(args: argparse.Namespace) -> int:
    import importlib.util

    if not args.no_ppo and importlib.util.find_spec("stable_baselines3") is None:  # (before the hour of work)
        raise ValueError(
            "the frontier's PPO column needs Stable-Baselines3, which is not installed: "
            "pip install 'eq-env[rl]', or leave PPO out with --no-ppo"
        )
    executor = executor_of(args, default_jobs=1)
    frontier(
        args.out,
        preset=args.preset,
        qs=args.qs,
        episodes=args.episodes,
        timesteps=args.timesteps,
        seed=args.seed,
        train_ppo=not args.no_ppo,
        progress=None,
        executor=executor,
    )
    print((args.out / "frontier.md").read_text())
    return 0


COMMAND = Command(
    "frontier",
    "the deterrence frontier: eq. 3, the best response and PPO, side by side",
    _frontier_arguments,
    _frontier,
    "For several (V, L, B): the smallest q at which misreporting stops paying, from the paper's eq. 3, this "
    "game's analytic threshold, a best-response search and a PPO proposer trained across q. Writes "
    "frontier.csv, frontier_summary.csv, frontier.md and two plots into --out. The best responses (one per "
    "scenario and q) run on --backend and are kept in --out/points.jsonl as they finish (re-running "
    "resumes); PPO trains and is evaluated in this process.",
    "finished best responses (points.jsonl) and PPO models (ppo/) are saved in --out; run the same command to resume",
)
