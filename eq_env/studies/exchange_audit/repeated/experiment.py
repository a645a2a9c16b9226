"""``eq-env repeated``: does a reputation hold a proposer honest at a lower audit intensity?

**The model.** The proposer and the validator (the paper's rule engine) play the repeated exchange–audit game
(:mod:`eq_env.exchange_audit.repeated.env`): rounds of the one-shot game, each going on to the next with probability
δ (a geometric horizon, truncated at a cap T where δ^T ≤ 10⁻⁴ so the cap does not matter), or exactly T rounds
(``--rounds``). Each round's audit intensity q_t comes from an audit policy:

* ``fixed`` q (the knob: q);
* ``decay``: q_t = max(q_min, q₀·γ^c), c the clean audits so far (the knob: the floor q_min; q₀, γ flags);
* ``decay-reset``: the same, a failed audit resetting c to 0;
* ``trigger``: q, then q_punish after a failed audit for ``punish_rounds`` rounds or for ever (the knob: q).

The proposer knows its compliance (preset ``paper_scripted``), so the stage strategies differ only in lying;
``--miss`` / ``--false-fail`` make the audits noisy (:mod:`eq_env.studies.exchange_audit.noisy`), which makes audits
cost an honest proposer (false fails) — where, by the condition below, a trigger starts to bite.

**What is measured**, for each horizon, audit policy and knob on the grid: the proposer's best response over the
stage strategies honest / shade / false claims (:mod:`eq_env.exchange_audit.repeated.dp`: dynamic programming over
the reputation state, chosen on half of the sampled positions, measured on the other half): its misreport rate on
the path (misreported requests in non-compliant rounds over non-compliant rounds), its gain over honesty for ever
per episode, and along its path per round: welfare, the audit cost c·q_t the validator spends, bad approvals and the
average q. The same for honesty for ever (the audit cost an honest proposer costs).

**Frontiers.** Misreporting *pays* at a knob when the best response misreports in more than ``tolerance`` of
the non-compliant rounds on its path. The *measured frontier* is the smallest knob of the grid from which it
never pays again; it is reported as the knob and as the average q an honest proposer then faces (what
honesty costs in audits). It is compared with

* the **one-shot frontier** q*₁: the one-shot best response over the whole artifact space
  (:func:`~eq_env.exchange_audit.equilibrium.proposer_best_response`, as ``eq-env frontier`` measures it), and this
  game's analytic 1 − no_trade_payoff/V;
* the **repeated-game condition** derived in :mod:`eq_env.exchange_audit.repeated.dp`: no single deviation from
  honesty pays at any state honest play reaches,

      R_ℓ(s) − R_h(s) ≤ δ·[P_h(s) − P_ℓ(s)]·W          (one-shot gain ≤ the future it costs),

  evaluated exactly from the same stage estimates on a knob grid of step 0.01 (a δ-horizon as unbounded, T
  rounds round by round). In closed form: with ``fixed`` q it is the one-shot condition (q ≥ q*₁); with a
  grim ``trigger`` to q_p, gain(q) ≤ δ·q·(φ_ℓ − φ_h)·[R_h(q) − R_h(q_p)]/(1 − δ + δ·q·φ_h), which bites only
  if more audits cost an honest proposer (R_h falls with q); with ``decay`` the floor must deter on its own
  (q_min ≥ q*₁), since a liar caught at the floor stays there.

A patient liar *exploits* a decaying q where the best response is honest while its clean-audit count is low and
lies once q has decayed below q*₁: the summary says from which count, and how often it then lies.

**Checks.** At ``--check-delta`` a few cells (:data:`CHECK_CELLS`) are also played in the environment itself: the
best response as a policy (:class:`~eq_env.exchange_audit.repeated.dp.DPProposer`) over ``--simulate-episodes``
episodes of the held-out seed ``--seed`` + 1000, its gain over honesty for ever on the same episodes (same positions,
audit coins and horizon) and its misreport rate beside the dynamic programme's; and a PPO proposer trained
``--ppo-timesteps`` steps (default 30000; 0: none) on the proposer's view with the history in its observation
(:class:`~eq_env.exchange_audit.repeated.views.RepeatedProposerEnv`, ``action_encoding="strategy"``: it chooses the
round's stage strategy, as the best response does; γ = 0.8), evaluated the same way, greedily (its most likely
action: :class:`~eq_env.exchange_audit.repeated.views.ViewPolicy`). PPO models are saved under ``OUT/ppo`` and
reused when the command is run again with the same cell, steps and seed; the rest (under a minute) is recomputed.

Writes ``repeated.csv`` (every horizon, policy and knob), ``repeated_summary.csv`` (every horizon and policy),
``repeated_checks.csv`` (the cells), ``repeated.md``, ``repeated.png`` (misreport rate on the path against the
knob), ``repeated_frontier.png`` (per horizon, the average q an honest proposer faces at each policy's
frontier, next to q*₁) and ``summary.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eq_env.core.cli import (
    MAX_EPISODES,
    MAX_TIMESTEPS,
    Command,
    int_in,
    list_of,
    non_negative_float,
    number_type,
    out_dir,
    seed_arg,
    shown,
)
from eq_env.core.report import markdown_table, plot_lines, write_csv
from eq_env.exchange_audit.config import PRESETS
from eq_env.exchange_audit.equilibrium import game_threshold, proposer_best_response
from eq_env.exchange_audit.repeated.dp import (
    BestResponse,
    DPProposer,
    Estimates,
    deterrence_holds,
    estimate_stage,
    repeated_best_response,
    reputation_states,
)
from eq_env.exchange_audit.repeated.rules import MAX_ROUNDS, RepeatedConfig
from eq_env.studies.exchange_audit.flags import audit_intensities, audit_intensity, rate
from eq_env.studies.exchange_audit.frontier import DEFAULT_QS, _fmt_q, _frontier_q

__all__ = ["CHECK_CELLS", "DEFAULT_DELTAS", "POLICIES", "Horizon", "horizon_cap", "repeated"]

DEFAULT_DELTAS = (0.0, 0.5, 0.8, 0.9, 0.95)
POLICIES = ("fixed", "decay", "decay-reset", "trigger")
KNOBS = {"fixed": "q", "decay": "q_min", "decay-reset": "q_min", "trigger": "q"}
CHECK_CELLS = (("fixed", 0.2), ("fixed", 0.8), ("decay", 0.1), ("decay-reset", 0.1))
TAIL = 1e-4  # a δ-horizon's cap T: the chance of reaching it is at most this
FINE_STEP = 0.01
# the history-aware PPO proposer's settings (here and in eq-env baselines' repeated row)
PPO_HYPERPARAMETERS = {
    "n_steps": 256,
    "batch_size": 256,
    "learning_rate": 1e-3,
    "n_epochs": 5,
    "ent_coef": 0.01,
    "gamma": 0.8,
    "gae_lambda": 0.95,
}
PPO_ENVS = 4


@dataclass(frozen=True)
class Horizon:
    """T rounds at most, each followed by another with probability δ (δ = 1: exactly T)."""

    rounds: int
    continuation: float

    @property
    def label(self) -> str:
        return f"T={self.rounds}" if self.continuation >= 1.0 else f"δ={self.continuation:g}"


def horizon_cap(continuation: float) -> int:
    """The cap T of a geometric horizon δ: the fewest rounds with δ^T ≤ :data:`TAIL` (1 for δ = 0)."""
    if not 0.0 <= continuation < 1.0:
        raise ValueError(f"a continuation δ must be in [0, 1), got {continuation!r}")
    if continuation == 0.0:
        return 1
    return min(MAX_ROUNDS, max(1, math.ceil(math.log(TAIL) / math.log(continuation))))


def policy_config(
    base: RepeatedConfig,
    policy: str,
    knob: float,
    horizon: Horizon,
    *,
    q0: float,
    gamma: float,
    q_punish: float,
    punish_rounds: int | None,
) -> RepeatedConfig:
    """The repeated game of one experiment policy at one knob (module docstring)."""
    common: dict[str, Any] = {"rounds": horizon.rounds, "continuation": horizon.continuation}
    if policy == "fixed":
        return base.replace(audit_policy="fixed", q=knob, **common)
    if policy in ("decay", "decay-reset"):
        return base.replace(
            audit_policy="decay", q=q0, gamma=gamma, q_min=knob, reset_on_fail=policy == "decay-reset", **common
        )
    if policy == "trigger":
        return base.replace(audit_policy="trigger", q=knob, q_punish=q_punish, punish_rounds=punish_rounds, **common)
    raise ValueError(f"unknown audit policy {policy!r}; choose from {', '.join(POLICIES)}")


def repeated(
    out: str | Path,
    *,
    preset: str = "paper_scripted",
    V: float = 2.0,
    L: float = 1.0,
    miss: float = 0.0,
    false_fail: float = 0.0,
    deltas: Sequence[float] = DEFAULT_DELTAS,
    rounds: Sequence[int] = (),
    policies: Sequence[str] = POLICIES,
    qs: Sequence[float] = DEFAULT_QS,
    q0: float = 1.0,
    gamma: float = 0.8,
    q_punish: float = 1.0,
    punish_rounds: int | None = None,
    episodes: int = 20_000,
    tolerance: float = 0.02,
    check_delta: float = 0.9,
    simulate_episodes: int = 1000,
    ppo_timesteps: int = 30_000,
    seed: int = 0,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Run the experiment of the module docstring; write its files; return the summary rows.

    ``progress``: a progress bar (None: when the output is a terminal)."""
    from tqdm.auto import tqdm

    qs = sorted(qs)
    horizons = [Horizon(horizon_cap(d), d) for d in deltas] + [Horizon(int(t), 1.0) for t in rounds]
    unknown = [p for p in policies if p not in POLICIES]
    if not qs or not horizons or not policies or unknown:
        raise ValueError(
            f"the experiment needs at least one knob value, horizon and audit policy (of "
            f"{', '.join(POLICIES)}), got qs={qs}, deltas={list(deltas)}, rounds={list(rounds)}, "
            f"policies={list(policies)}"
        )

    if (
        isinstance(ppo_timesteps, bool)
        or not isinstance(ppo_timesteps, int)
        or not (ppo_timesteps == 0 or 64 <= ppo_timesteps <= MAX_TIMESTEPS)
    ):
        raise ValueError(
            f"ppo_timesteps must be 0 (no PPO) or an integer in [64, {MAX_TIMESTEPS}], got "
            f"{shown(repr(ppo_timesteps), quoted=False)}"
        )
    base = RepeatedConfig.from_preset(preset, V=V, L=L)
    if not base.stage.reveal_compliance:
        raise ValueError(
            f"preset {preset!r}: the experiment needs a proposer that knows its compliance (reveal_compliance, "
            "preset paper_scripted); one that judges it from its noisy view makes sincere errors, which the "
            "stage strategies' lies would partly correct, and the menu could not tell the two apart"
        )
    if miss or false_fail:
        base = base.replace(stage=base.stage.with_audit_noise(miss, false_fail))
    for h in horizons:  # every configuration is refused, if it must be, before anything runs
        for policy in policies:
            for knob in qs:
                policy_config(base, policy, knob, h, q0=q0, gamma=gamma, q_punish=q_punish, punish_rounds=punish_rounds)
    horizon_cap(check_delta)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cells = [c for c in CHECK_CELLS if c[0] in policies]
    bar = tqdm(
        total=len(qs) + len(horizons) * len(policies) + len(cells),
        desc="repeated",
        unit="step",
        disable=None if progress is None else not progress,
    )

    estimates = estimate_stage(base.stage, episodes=episodes, seed=seed)
    one_shot = []
    for q in qs:  # the one-shot frontier, over the whole artifact space
        one_shot.append(proposer_best_response(base.stage.replace(q=q), episodes=episodes, seed=seed).misreport_rate)
        bar.update()
    one_shot_q = _frontier_q(qs, [m > tolerance for m in one_shot])
    analytic_q = game_threshold(base.stage)

    def config(policy: str, knob: float, h: Horizon) -> RepeatedConfig:
        return policy_config(base, policy, knob, h, q0=q0, gamma=gamma, q_punish=q_punish, punish_rounds=punish_rounds)

    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for h in horizons:
        for policy in policies:
            results = [repeated_best_response(config(policy, knob, h), estimates=estimates) for knob in qs]
            rows += [_row(h, policy, knob, br, estimates) for knob, br in zip(qs, results, strict=True)]
            summary.append(_summary_row(h, policy, qs, results, tolerance, config, estimates, one_shot_q))
            bar.update()
    checks = []
    check = Horizon(horizon_cap(check_delta), check_delta)
    for policy, knob in cells:
        checks.append(
            _check(config(policy, knob, check), policy, knob, estimates, out, simulate_episodes, ppo_timesteps, seed)
        )
        bar.update()
    bar.close()
    honest = next(iter(estimates[1].values()))  # (the menu's first strategy is the honest one)
    write_csv(out / "repeated.csv", rows, list(rows[0]))
    write_csv(out / "repeated_summary.csv", summary, list(summary[0]))
    if checks:
        write_csv(out / "repeated_checks.csv", checks, list(checks[0]))
    context = {
        "preset": preset,
        "V": V,
        "L": L,
        "miss": miss,
        "false_fail": false_fail,
        "B": base.stage.checks_per_audit,
        "episodes": episodes,
        "tolerance": tolerance,
        "seed": seed,
        "one_shot_q": one_shot_q,
        "analytic_q": analytic_q,
        "qs": qs,
        "q0": q0,
        "gamma": gamma,
        "q_punish": q_punish,
        "punish_rounds": punish_rounds,
        "check": check,
        "simulate_episodes": simulate_episodes,
        "ppo_timesteps": ppo_timesteps,
        "honest_r0": honest.proposer[0],
        "honest_r1": honest.proposer[1],
        "honest_failed": honest.failed,
    }
    tables = _tables(summary, rows, checks, context)
    (out / "repeated.md").write_text(tables)
    _plots(out, rows, summary, horizons, policies, context)
    (out / "summary.md").write_text(_summary_text(summary, rows, checks, tables, context))
    return summary


# ---------------------------------------------------------------------------
# Rows
# ---------------------------------------------------------------------------
def _row(h: Horizon, policy: str, knob: float, br: BestResponse, estimates: tuple[Estimates, Estimates]) -> dict:
    fit = list(estimates[0].values())
    c = br.config
    return {
        "horizon": h.label,
        "rounds": h.rounds,
        "continuation": h.continuation,
        "policy": policy,
        "knob": KNOBS[policy],
        "value": knob,
        "br_misreport_rate": br.best.misreport_rate,
        "br_gain": br.gain,
        "br_gain_per_round": br.gain / br.best.rounds,
        "br_payoff": br.best.value,
        "honest_payoff": br.honest.value,
        "expected_rounds": br.best.rounds,
        "br_mean_q": br.best.mean_q,
        "honest_mean_q": br.honest.mean_q,
        "br_welfare": br.best.welfare,
        "honest_welfare": br.honest.welfare,
        "br_audit_cost": br.best.audit_cost,
        "honest_audit_cost": br.honest.audit_cost,
        "br_bad_approvals": br.best.bad_approved,
        "honest_bad_approvals": br.honest.bad_approved,
        "condition_holds": deterrence_holds(br.states, fit, c.rounds, c.continuation),
        "br_plan": br.describe(),
    }


def _summary_row(
    h: Horizon,
    policy: str,
    qs: Sequence[float],
    results: Sequence[BestResponse],
    tolerance: float,
    config: Any,
    estimates: tuple[Estimates, Estimates],
    one_shot_q: float,
) -> dict:
    fit = list(estimates[0].values())
    pays = [br.best.misreport_rate > tolerance for br in results]
    measured = _frontier_q(qs, pays)
    step = max((b - a for a, b in itertools.pairwise(qs)), default=0.0)
    fine = [round(FINE_STEP * i, 10) for i in range(round(1 / FINE_STEP) + 1)]
    fine = [k for k in fine if qs[0] - 1e-12 <= k <= qs[-1] + 1e-12] or list(qs)
    fails = []
    for knob in fine:
        cfg = config(policy, knob, h)
        fails.append(not deterrence_holds(reputation_states(cfg), fit, cfg.rounds, cfg.continuation))
    condition = _frontier_q(fine, fails)
    low = results[0]  # the lowest knob: where a liar gains most

    def honest_q(knob: float) -> float:
        if math.isinf(knob):
            return math.inf
        br = repeated_best_response(config(policy, knob, h), estimates=estimates)
        return br.honest.mean_q

    measured_q, condition_q = honest_q(measured), honest_q(condition)
    return {
        "horizon": h.label,
        "rounds": h.rounds,
        "continuation": h.continuation,
        "policy": policy,
        "knob": KNOBS[policy],
        "br_frontier": measured,
        "br_frontier_mean_q": measured_q,
        "condition_frontier": condition,
        "condition_frontier_mean_q": condition_q,
        "one_shot_q": one_shot_q,
        # lower by a grid step at least: both frontiers are known to the grid's resolution only
        "below_one_shot": (not math.isinf(measured_q)) and measured_q <= one_shot_q - step + 1e-9,
        "lowest_knob": qs[0],
        "lowest_misreport_rate": low.best.misreport_rate,
        "lowest_gain": low.gain,
        "lowest_br_mean_q": low.best.mean_q,
        "lowest_plan": low.describe(),
    }


def _check(
    cfg: RepeatedConfig,
    policy: str,
    knob: float,
    estimates: tuple[Estimates, Estimates],
    out: Path,
    episodes: int,
    timesteps: int,
    seed: int,
) -> dict[str, Any]:
    """A cell played in the environment: the best response (and PPO), beside the dynamic programme."""
    from eq_env.core.runner import evaluate as play_runs
    from eq_env.exchange_audit.repeated.spec import ID

    br = repeated_best_response(cfg, estimates=estimates)
    held_out = [_held_out_seed(seed)]
    row: dict[str, Any] = {
        "cell": f"{policy} {KNOBS[policy]}={knob:g}",
        "horizon": f"δ={cfg.continuation:g}",
        "dp_payoff": br.best.value,
        "honest_payoff": br.honest.value,
        "dp_gain": br.gain,
        "dp_welfare": br.best.welfare,
        "dp_misreport_rate": br.best.misreport_rate,
        "dp_mean_q": br.best.mean_q,
        "dp_plan": br.describe(),
    }
    players: list[tuple[str, Any]] = [("honest", br.strategies[0].spec), ("sim", DPProposer(br))]
    if timesteps > 0:
        players.append(("ppo", _ppo(cfg, out / "ppo" / f"{policy}-{knob:g}", timesteps, seed)))
    honest = np.zeros(0)
    for name, player in players:
        ev = play_runs(ID, cfg, {"proposer": player, "validator": "rule"}, episodes=episodes, seeds=held_out)
        payoffs = np.array([r.proposer_payoff for r in ev.records])
        if name == "honest":  # (the same positions, audits and horizon in every episode: compare in pairs)
            honest = payoffs
            continue
        gain = payoffs - honest
        row[f"{name}_payoff"] = float(payoffs.mean())
        row[f"{name}_gain"] = float(gain.mean())
        row[f"{name}_gain_se"] = float(gain.std(ddof=1) / math.sqrt(len(gain))) if len(gain) > 1 else math.nan
        metrics = ev.per_seed[0]
        row[f"{name}_welfare"] = metrics["welfare"]
        row[f"{name}_misreport_rate"] = metrics["noncompliant_misreport_rate"]
        row[f"{name}_mean_q"] = metrics["mean_q"]
    return row


def _held_out_seed(seed: int) -> int:
    """The seed the checked cells are played on: PPO trains on ``seed``, ``seed + 1``... (one per environment)."""
    return seed + 1000


def _ppo(cfg: RepeatedConfig, path: Path, timesteps: int, seed: int) -> Any:
    """A PPO proposer with the history in its observation, trained on this cell (reused if ``path`` has it)."""
    from eq_env.baselines.sb3 import learn, sb3_class
    from eq_env.exchange_audit.repeated.views import RepeatedProposerEnv, ViewPolicy

    meta = path / "policy.json"
    wanted = {"config": cfg.to_dict(), "timesteps": timesteps, "seed": seed, "action_encoding": "strategy"}
    if meta.exists() and json.loads(meta.read_text()) == wanted and (path / "model.zip").exists():
        return ViewPolicy(sb3_class("ppo").load(path / "model.zip", device="cpu"), cfg)
    model, _, _ = learn(
        lambda: RepeatedProposerEnv(config=cfg, action_encoding="strategy"),
        algo="ppo",
        timesteps=timesteps,
        seed=seed,
        hyperparameters=PPO_HYPERPARAMETERS,
        n_envs=PPO_ENVS,
        progress=False,
    )
    path.mkdir(parents=True, exist_ok=True)
    model.save(path / "model.zip")
    meta.write_text(json.dumps(wanted))
    return ViewPolicy(model, cfg)


# ---------------------------------------------------------------------------
# Tables, plots, summary
# ---------------------------------------------------------------------------
def _fmt(x: float) -> str:
    return _fmt_q(x) if isinstance(x, float) and (math.isinf(x) or math.isnan(x)) else f"{x:.2f}"


def _tables(summary: Sequence[dict], rows: Sequence[dict], checks: Sequence[dict], ctx: dict) -> str:
    main = markdown_table(
        [
            "horizon",
            "audit policy",
            "knob",
            "frontier (best response)",
            "avg q there (honest)",
            "frontier (condition)",
            "avg q there (condition)",
            "misreport at lowest knob",
            "its plan",
        ],
        [
            [
                r["horizon"],
                r["policy"],
                r["knob"],
                _fmt(r["br_frontier"]),
                _fmt(r["br_frontier_mean_q"]),
                _fmt(r["condition_frontier"]),
                _fmt(r["condition_frontier_mean_q"]),
                f"{r['lowest_misreport_rate']:.0%} ({r['knob']}={r['lowest_knob']:g})",
                r["lowest_plan"],
            ]
            for r in summary
        ],
    )
    text = [
        f"One-shot frontier q*₁ = {_fmt(ctx['one_shot_q'])} (best response over the artifact space; analytic "
        f"1 − no_trade_payoff/V = {ctx['analytic_q']:.2f}). Preset {ctx['preset']}, V = {ctx['V']:g}, "
        f"L = {ctx['L']:g}, B = {ctx['B']}{_noise(ctx)}; {ctx['episodes']} positions (half choose, half measure), seed "
        f"{ctx['seed']}; misreporting pays above {ctx['tolerance']:.0%} of non-compliant rounds on the path.",
        "",
        main,
    ]
    if checks:
        ppo = "ppo_payoff" in checks[0]
        head = ["cell", "DP plan", "honest payoff", "DP gain", "DP gain in the env", "DP misreport", "in the env"]
        head += ["PPO gain in the env", "PPO misreport"] if ppo else []
        body = []
        for c in checks:
            line = [
                f"{c['cell']}, {c['horizon']}",
                c["dp_plan"],
                f"{c['honest_payoff']:.2f}",
                f"{c['dp_gain']:+.2f}",
                f"{c['sim_gain']:+.2f} ± {c['sim_gain_se']:.2f}",
                f"{c['dp_misreport_rate']:.1%}",
                f"{c['sim_misreport_rate']:.1%}",
            ]
            if ppo:
                line += [f"{c['ppo_gain']:+.2f} ± {c['ppo_gain_se']:.2f}", f"{c['ppo_misreport_rate']:.1%}"]
            body.append(line)
        what = (
            f"Played in the environment ({ctx['simulate_episodes']} episodes of the held-out seed "
            f"{_held_out_seed(ctx['seed'])}). Payoffs are "
            "the proposer's per episode; a gain is over honesty for ever on the same episodes (same positions, "
            "audit coins and horizon), ± one standard error"
        )
        if ppo:
            what += (
                f"; PPO trained {ctx['ppo_timesteps']} steps per cell with the history in its observation, played "
                "greedily (its most likely action)"
            )
        text += ["", what + ":", "", markdown_table(head, body)]
    return "\n".join(text)


def _plots(
    out: Path,
    rows: Sequence[dict],
    summary: Sequence[dict],
    horizons: Sequence[Horizon],
    policies: Sequence[str],
    ctx: dict,
) -> None:
    panels = []
    for policy in policies:
        series: list[dict[str, Any]] = []
        for h in horizons:
            mine = [r for r in rows if r["policy"] == policy and r["horizon"] == h.label]
            series.append(
                {"label": h.label, "x": [r["value"] for r in mine], "y": [r["br_misreport_rate"] for r in mine]}
            )
        if not math.isinf(ctx["one_shot_q"]):  # (a vertical line at the one-shot frontier, on the knob axis)
            series.append(
                {
                    "label": "one-shot q*₁",
                    "x": [ctx["one_shot_q"]] * 2,
                    "y": [0.0, 1.0],
                    "style": {"fmt": "k:", "markersize": 0},
                }
            )
        panels.append({"ylabel": f"{policy}: misreport rate on path (x: {KNOBS[policy]})", "series": series})
    plot_lines(
        out / "repeated.png",
        panels,
        xlabel="knob",
        title=f"Best response in the repeated game (V={ctx['V']:g}, L={ctx['L']:g})",
    )
    labels = [h.label for h in horizons]
    x = list(range(len(labels)))

    def capped(policy: str, key: str) -> list[float]:
        return [
            min(next(r[key] for r in summary if r["policy"] == policy and r["horizon"] == lab), 1.05) for lab in labels
        ]

    frontier: list[dict[str, Any]] = [
        {"label": f"{p} (best response)", "x": x, "y": capped(p, "br_frontier_mean_q"), "style": {"color": f"C{i}"}}
        for i, p in enumerate(policies)
    ]
    frontier += [
        {
            "label": f"{p} (condition)",
            "x": x,
            "y": capped(p, "condition_frontier_mean_q"),
            "style": {"fmt": "--x", "color": f"C{i}"},
        }
        for i, p in enumerate(policies)
    ]
    # (behind the policies' lines: fixed q's frontier is q*₁ itself and must stay visible)
    frontier.append(
        {"label": "one-shot q*₁", "hline": min(ctx["one_shot_q"], 1.05), "style": {"color": "0.5", "zorder": 0}}
    )
    plot_lines(
        out / "repeated_frontier.png",
        [{"ylabel": "honest proposer's avg q at the frontier", "series": frontier}],
        xlabel="horizon",
        xticklabels=labels,
        title="Average q at each audit policy's deterrence frontier (1.05 = never deterred)",
    )


def _summary_text(summary: Sequence[dict], rows: Sequence[dict], checks: Sequence[dict], tables: str, ctx: dict) -> str:
    q1 = ctx["one_shot_q"]
    lower = [r for r in summary if r["below_one_shot"]]
    if lower:
        answer = (
            "Yes, by at least a grid step, in "
            + ", ".join(f"{r['policy']} at {r['horizon']} (avg q {r['br_frontier_mean_q']:.2f})" for r in lower)
            + f", against the one-shot q*₁ = {_fmt(q1)}."
        )
    else:
        answer = (
            f"No: under no audit policy and horizon of the grid does the best response stay honest at an "
            f"average q a grid step or more below the one-shot frontier q*₁ = {_fmt(q1)}."
        )
        knob_lower = [r for r in summary if r["knob"] == "q" and r["br_frontier"] < q1 - 1e-9]
        if knob_lower:
            answer += (
                " Yet "
                + "; ".join(
                    f"the {r['policy']} at {r['horizon']} deters from q = {r['br_frontier']:.2f}" for r in knob_lower
                )
                + ": below q*₁, but the punishments an honest proposer draws too (its failed audits) raise the "
                "average q it faces back to " + ", ".join(f"{r['br_frontier_mean_q']:.2f}" for r in knob_lower) + "."
            )
    agree = [r for r in summary if _close(r["br_frontier"], r["condition_frontier"], ctx["qs"])]
    r0, r1, phi = ctx["honest_r0"], ctx["honest_r1"], ctx["honest_failed"]
    if phi == 0.0 and r1 >= r0:
        why = (
            f"Why: the future a lie risks is the rent of fewer audits, R_h(q) − R_h(q_punish), and here an audit "
            f"never fails an honest proposer (φ_h = 0) while its round payoff rises from R_h(0) = {r0:.3f} to "
            f"R_h(1) = {r1:.3f} (an audit gets it approved where its noisy numbers sit beyond a limit): more "
            "audits are no punishment, so a liar caught loses no rent it would not lose by turning honest."
        )
    else:
        why = (
            f"An audit costs an honest proposer here (it fails in φ_h = {phi:.1%} of audits; its round payoff "
            f"goes from R_h(0) = {r0:.3f} to R_h(1) = {r1:.3f}), so more audits are a punishment the condition "
            "weighs against the one-shot gain."
        )
    exploited = []
    for r in summary:
        if not r["policy"].startswith("decay"):
            continue
        worst = [
            x
            for x in rows
            if x["policy"] == r["policy"] and x["horizon"] == r["horizon"] and x["br_misreport_rate"] > ctx["tolerance"]
        ]
        if worst:
            floors = ", ".join(f"{x['value']:g}" for x in worst)
            exploited.append(
                f"{r['policy']} at {r['horizon']}: q_min ∈ {{{floors}}} (at q_min = {r['lowest_knob']:g} "
                f"it lies in {r['lowest_misreport_rate']:.0%} of non-compliant rounds, "
                f"{r['lowest_gain']:+.2f} per episode over honesty; plan: {r['lowest_plan']})"
            )
    lines = [
        "# Repeated play and reputation",
        "",
        f"Preset {ctx['preset']}, V = {ctx['V']:g}, L = {ctx['L']:g}{_noise(ctx)} (in the one-shot game a lie "
        f"pays below q*₁ = {_fmt(q1)}). Decay starts at q₀ = {ctx['q0']:g} with γ = {ctx['gamma']:g}; the "
        f"trigger punishes with q = {ctx['q_punish']:g} for "
        f"{'ever' if ctx['punish_rounds'] is None else str(ctx['punish_rounds']) + ' rounds'}.",
        "",
        "**Does reputation hold honesty at a lower average q than the one-shot frontier?** " + answer,
        f"The repeated-game condition of the manual (one-shot gain ≤ the future it costs) agrees with the best "
        f"response's frontier within a grid step in {len(agree)} of {len(summary)} horizon × policy cells. " + why,
        "",
        "**Where does a patient liar exploit a decaying q?** "
        + ("; ".join(exploited) + "." if exploited else "Nowhere on this grid."),
        "The plan reads: honest while the clean-audit count is low (an audited lie earns no clean audit), "
        "lying from the count at which q has decayed below what deters it.",
        "",
        *_checks_text(checks),
        tables,
        "",
        "![misreport rate](repeated.png)",
        "",
        "![frontier](repeated_frontier.png)",
        "",
    ]
    return "\n".join(lines)


def _noise(ctx: dict) -> str:
    """The audits' noise, when there is some."""
    if not (ctx["miss"] or ctx["false_fail"]):
        return ""
    return f", noisy audits (every claim: missed lies ε₀ = {ctx['miss']:g}, false fails ε₁ = {ctx['false_fail']:g})"


def _checks_text(checks: Sequence[dict]) -> list[str]:
    """A paragraph on the cells played in the environment: does play agree with the programme, how close is PPO."""
    if not checks:
        return []
    worst = max(abs(c["sim_gain"] - c["dp_gain"]) / c["sim_gain_se"] if c["sim_gain_se"] > 0 else 0.0 for c in checks)
    text = (
        f"**Checks in the environment.** Played as a policy, the best response's gain over honesty is the "
        f"programme's within {worst:.1f} standard errors in every checked cell"
    )
    if "ppo_gain" in checks[0]:
        parts = [
            f"{c['cell']}: {c['ppo_gain']:+.2f} (best response {c['dp_gain']:+.2f}), misreporting "
            f"{c['ppo_misreport_rate']:.0%} (best response {c['dp_misreport_rate']:.0%})"
            for c in checks
        ]
        text += "; a PPO proposer with the history in its observation, played greedily, gains " + "; ".join(parts)
    return [text + ".", ""]


def _close(a: float, b: float, qs: Sequence[float]) -> bool:
    if math.isinf(a) or math.isinf(b):
        return math.isinf(a) and math.isinf(b)
    step = max((y - x for x, y in itertools.pairwise(qs)), default=0.0)
    return abs(a - b) <= step + 1e-9


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------
_delta = number_type(float, "a continuation δ in [0, 1)", lambda v: 0.0 <= v < 1.0)
_ppo_timesteps = number_type(
    int, f"0 (no PPO) or a number of steps in [64, {MAX_TIMESTEPS}]", lambda v: v == 0 or 64 <= v <= MAX_TIMESTEPS
)


def _audit_policy(text: str) -> str:
    if text not in POLICIES:
        raise argparse.ArgumentTypeError(f"expected an audit policy among {', '.join(POLICIES)}, got {text!r}")
    return text


def _punish_rounds(text: str) -> int | None:
    """``forever`` (None) or a positive number of rounds."""
    if text.strip().lower() in ("forever", "none"):
        return None
    return int_in(1, 100_000, " or 'forever'")(text)


# 0 (no PPO) or train's range: a larger count was once cut to 10^9 in silence, a training that never ends


def _repeated_arguments(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("--out", type=out_dir, required=True, help="output directory: tables, figures, summary.md")
    rp.add_argument(
        "--preset",
        choices=sorted(p for p, c in PRESETS.items() if c.reveal_compliance),
        default="paper_scripted",
        help="game preset: one whose proposer knows its compliance",
    )
    rp.add_argument("--V", type=non_negative_float, default=2.0, help="approval reward V (default 2: temptation)")
    rp.add_argument("--L", type=non_negative_float, default=1.0, help="penalty L of a failed audit (default 1)")
    rp.add_argument("--miss", type=rate, default=0.0, help="noisy audits: ε₀, a checked lie passes (default 0)")
    rp.add_argument(
        "--false-fail", type=rate, default=0.0, help="noisy audits: ε₁, a checked true claim fails (default 0)"
    )
    rp.add_argument(
        "--deltas",
        type=list_of(_delta, "continuation probabilities δ in [0, 1)", distinct=True),
        default=",".join(f"{d:g}" for d in DEFAULT_DELTAS),
        help="geometric horizons: after each round the game goes on with probability δ (default %(default)s)",
    )
    rp.add_argument(
        "--rounds",
        type=list_of(int_in(1, 100_000), "round counts T", distinct=True),
        default=[],
        help="fixed horizons of exactly T rounds, besides the δ ones (e.g. 1,10)",
    )
    rp.add_argument(
        "--policies",
        type=list_of(_audit_policy, "audit policies", distinct=True),
        default=",".join(POLICIES),
        help="audit policies (default %(default)s)",
    )
    rp.add_argument(
        "--qs",
        type=audit_intensities,
        default=",".join(f"{q:g}" for q in (0.1 * i for i in range(11))),
        help="the knob grid: q (fixed, trigger) or q_min (decay) (default 0 to 1 by 0.1)",
    )
    rp.add_argument("--q0", type=audit_intensity, default=1.0, help="decay: the starting q (default 1)")
    rp.add_argument("--gamma", type=rate, default=0.8, help="decay: q's factor per clean audit (default 0.8)")
    rp.add_argument("--q-punish", type=audit_intensity, default=1.0, help="trigger: q after a failed audit (default 1)")
    rp.add_argument(
        "--punish-rounds",
        type=_punish_rounds,
        default=None,
        help="trigger: rounds of punishment, or 'forever' (default: forever, a grim trigger)",
    )
    rp.add_argument(
        "--episodes",
        type=int_in(4, MAX_EPISODES),
        default=20_000,
        help="positions sampled per stage estimate and one-shot best response (default 20000)",
    )
    rp.add_argument(
        "--check-delta",
        type=_delta,
        default=0.9,
        help="the δ of the cells also played in the environment (default 0.9)",
    )
    rp.add_argument(
        "--simulate-episodes",
        type=int_in(2, MAX_EPISODES),
        default=1000,
        help="episodes each checked cell is played (default 1000)",
    )
    rp.add_argument(
        "--ppo-timesteps",
        type=_ppo_timesteps,
        default=30_000,
        help="train a PPO proposer with the history in its observation for N steps per checked cell "
        "(default 30000, about a minute for the four cells; 0: no PPO)",
    )
    rp.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")


def _repeated(args: argparse.Namespace) -> int:
    started = time.perf_counter()  # (the time goes to the console only: the files of a seed are byte-identical)
    repeated(
        args.out,
        preset=args.preset,
        V=args.V,
        L=args.L,
        miss=args.miss,
        false_fail=args.false_fail,
        deltas=args.deltas,
        rounds=args.rounds,
        policies=args.policies,
        qs=args.qs,
        q0=args.q0,
        gamma=args.gamma,
        q_punish=args.q_punish,
        punish_rounds=args.punish_rounds,
        episodes=args.episodes,
        check_delta=args.check_delta,
        simulate_episodes=args.simulate_episodes,
        ppo_timesteps=args.ppo_timesteps,
        seed=args.seed,
        progress=None,
    )
    print((args.out / "repeated.md").read_text())
    print(
        f"wrote repeated.csv, repeated_summary.csv, repeated_checks.csv, repeated.md, repeated.png, "
        f"repeated_frontier.png and summary.md to {args.out} in {time.perf_counter() - started:.1f} s"
    )
    return 0


COMMAND = Command(
    "repeated",
    "repeated play and reputation: the best response to fixed, decaying and trigger audit policies",
    _repeated_arguments,
    _repeated,
    "For each horizon (--deltas, --rounds), audit policy (--policies) and knob (--qs): the proposer's best "
    "response in the repeated game by dynamic programming over the reputation state, its misreport rate, "
    "welfare, audit cost and bad approvals; the deterrence frontier next to the one-shot one and the "
    "repeated-game condition; a few cells played in the environment (and by PPO with --ppo-timesteps). "
    "Writes repeated.csv, repeated_summary.csv, repeated_checks.csv, repeated.md, repeated.png, "
    "repeated_frontier.png and summary.md into --out. Computed in this process (dynamic programming over the "
    "reputation state, not a grid of runs through the runner): it takes no --backend.",
    "trained PPO models are saved in --out/ppo; run the same command to reuse them",
)
