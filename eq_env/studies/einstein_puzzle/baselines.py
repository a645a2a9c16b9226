"""The Einstein puzzle's rows of ``eq-env baselines`` (:mod:`eq_env.studies.baselines`).

* **one seat with the planner**: MaskablePPO in ``player_0`` with the decentralised planner in the other
  seat, on the game as it is (:func:`eq_env.baselines.einstein_puzzle.rl.train`);
* **self-play**: one MaskablePPO policy in both seats from scratch, with the self-play recipe
  (:data:`SELFPLAY_RECIPE`: the strict action mask, which changes no rule and no optimal policy, see
  ``eq_env.einstein_puzzle.env``), also scored with the planner as a partner it never trained with
  (``with_planner``) and with a copy trained on another seed (``cross_play``);

each at n = 4, 6 and 8 objects in every comm mode (``none``, no communication, is the control); and
self-play with RLlib PPO at n = 4, provide & seek, its two seats one shared module (``self-play-rllib``) or a
module each (``self-play-rllib-independent``), needing the ``rllib`` extra; and self-play with TorchRL's
MAPPO at n = 4 in provide & seek and, as the control, none (``self-play-torchrl``: one actor shared by the
seats, a centralised critic), needing the ``compat`` extra. The
headline metric is the success rate; the reference is the decentralised planner in both seats on the same
configuration and evaluation (its plan length is shown beside as ``steps``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.rules import COMM_MODES
from eq_env.studies.baselines import (
    RLLIB_UNIT,
    TORCHRL_UNIT,
    Baseline,
    Bound,
    Budget,
    means,
    rllib_missing,
    rllib_run,
    torchrl_fingerprint,
    torchrl_missing,
    torchrl_run,
)

__all__ = ["BASELINES", "SELFPLAY_RECIPE"]

# what makes self-play learn from scratch (docs/guide/einstein-puzzle.md, "Self-play from scratch")
SELFPLAY_RECIPE: dict[str, Any] = {"strict_mask": True}  # (shaping measured no help, and harm at n = 8)
SIZES = (4, 6, 8)
SEAT_STEPS = {4: 20_000, 6: 40_000, 8: 60_000}
SELF_STEPS = {4: 50_000, 6: 100_000, 8: 150_000}
QUICK = Budget(timesteps=1024, eval_episodes=10)
SHORT = {"provide_and_seek": "provide & seek", "provide_only": "provide only", "seek_only": "seek only", "none": "none"}


def _config(setting: str, n: int, comm_mode: str) -> EinsteinPuzzleConfig:
    extra = SELFPLAY_RECIPE if setting.startswith("self-play") else {}  # (RLlib's self-play rows too)
    return EinsteinPuzzleConfig(n=n, comm_mode=comm_mode, **extra)


def _parse(name: str) -> tuple[str, int, str]:
    _, setting, size, mode = name.split("/")
    return setting, int(size[1:]), mode


def train_seat(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """One seat with the planner as partner (the baseline ``name``), trained and scored greedy and sampled."""
    from eq_env.baselines.einstein_puzzle.rl import train

    setting, n, mode = _parse(name)
    result = train(
        out,
        partner="planner" if setting == "seat" else "self",
        config=_config(setting, n, mode),
        timesteps=budget.timesteps,
        seed=seed,
        eval_seeds=eval_seeds,
        eval_episodes=budget.eval_episodes,
        progress=False,
    )
    ev = {label: means(summary) for label, summary in result.evaluations.items()}
    if setting == "seat":
        greedy, sampled = ev["greedy"], ev["sampled"]
    else:
        greedy = {**ev["self-play, greedy"], "with_planner": ev["with planner, greedy"]["success_rate"]}
        sampled = {**ev["self-play, sampled"], "with_planner": ev["with planner, sampled"]["success_rate"]}
    return {"greedy": greedy, "sampled": sampled, "curve": result.curve, "steps_run": result.steps_run}


def planner_reference(name: str, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The decentralised planner in both seats on the baseline's configuration and evaluation."""
    played = _play(name, {"player_0": "planner", "player_1": "planner"}, budget, eval_seeds)
    return {**played, "with_planner": played["success_rate"]}


def _play(name: str, policies: dict[str, Any], budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """The baseline's configuration played by ``policies`` on the evaluation: the runner's means."""
    from eq_env.core.runner import evaluate
    from eq_env.einstein_puzzle.spec import ID

    setting, n, mode = _parse(name)
    ev = evaluate(ID, _config(setting, n, mode), policies, episodes=budget.eval_episodes, seeds=list(eval_seeds))
    return means(ev.summary)


def _with_planner(
    name: str, result: dict[str, Any], seat: Any, budget: Budget, eval_seeds: Sequence[int]
) -> dict[str, Any]:
    """``result`` with ``with_planner`` in its greedy and sampled metrics: ``seat(deterministic)`` in ``player_0``
    with the planner, a partner it never trained with, in ``player_1``."""
    for how, deterministic in (("greedy", True), ("sampled", False)):
        played = _play(name, {"player_0": seat(deterministic), "player_1": "planner"}, budget, eval_seeds)
        result[how]["with_planner"] = played["success_rate"]
    return result


def cross_play(name: str, model_a: Path, model_b: Path, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """Self-play: ``model_a`` in ``player_0`` with ``model_b`` (trained apart) in ``player_1``, greedy."""
    from eq_env.baselines.einstein_puzzle.rl import sb3_policy

    policies = {"player_0": sb3_policy(str(model_a), "player_0"), "player_1": sb3_policy(str(model_b), "player_1")}
    return _play(name, policies, budget, eval_seeds)


def train_rllib(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Self-play with RLlib PPO (one module shared by the seats, or a module per seat), scored greedy and sampled,
    and with the planner as partner (``with_planner``) as the SB3 self-play rows."""
    from eq_env.baselines.rllib import RLlibPolicy
    from eq_env.einstein_puzzle.spec import ID

    setting, n, mode = _parse(name)
    result = rllib_run(ID, _config(setting, n, mode), out, seed, budget, eval_seeds, modules=RLLIB_MODULES[setting])
    return _with_planner(name, result, lambda d: RLlibPolicy(out, "player_0", d), budget, eval_seeds)


def cross_rllib(name: str, model_a: Path, model_b: Path, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, float]:
    """RLlib self-play: ``model_a``'s player_0 module with ``model_b``'s player_1 module, greedy."""
    from eq_env.baselines.rllib import RLlibPolicy

    policies = {"player_0": RLlibPolicy(model_a, "player_0"), "player_1": RLlibPolicy(model_b, "player_1")}
    return _play(name, policies, budget, eval_seeds)


def _rllib_baseline(setting: str) -> Baseline:
    n, mode = 4, "provide_and_seek"
    name = f"einstein-puzzle/{setting}/n{n}/{mode}"
    shared = RLLIB_MODULES[setting] is None
    return Baseline(
        name=name,
        game="einstein-puzzle",
        setting=f"Einstein self-play, n = {n}, {SHORT[mode]}",
        learner="RLlib PPO, " + ("one module shared by the seats" if shared else "a module per seat (independent)"),
        metric="success_rate",
        reference_label="planner",
        train=Bound(train_rllib, name),
        reference=Bound(planner_reference, name),
        budgets={"full": Budget(30, 100), **({"quick": Budget(2, 10)} if shared else {})},
        shown=("steps", "shares", "asks", "with_planner"),
        fingerprint=json.dumps(["rllib", setting, _config(setting, n, mode).to_dict()], sort_keys=True),
        unit=RLLIB_UNIT,
        curve="training episodes' return, both seats summed",
        cross=Bound(cross_rllib, name),
        missing=rllib_missing,
    )


def train_torchrl(name: str, out: Path, seed: int, budget: Budget, eval_seeds: Sequence[int]) -> dict[str, Any]:
    """Self-play with TorchRL MAPPO (one actor shared by the seats, a centralised critic), scored greedy and
    sampled, and with the planner as partner (``with_planner``) as the SB3 self-play rows."""
    from eq_env.baselines.torchrl import TorchRLPolicy
    from eq_env.einstein_puzzle.spec import ID

    setting, n, mode = _parse(name)
    result = torchrl_run(ID, _config(setting, n, mode), out, seed, budget, eval_seeds)
    return _with_planner(name, result, lambda d: TorchRLPolicy(out, "player_0", d), budget, eval_seeds)


def cross_torchrl(
    name: str, model_a: Path, model_b: Path, budget: Budget, eval_seeds: Sequence[int]
) -> dict[str, float]:
    """TorchRL self-play: ``model_a``'s actor in ``player_0`` with ``model_b``'s in ``player_1``, greedy."""
    from eq_env.baselines.torchrl import TorchRLPolicy

    policies = {"player_0": TorchRLPolicy(model_a, "player_0"), "player_1": TorchRLPolicy(model_b, "player_1")}
    return _play(name, policies, budget, eval_seeds)


def _torchrl_baseline(mode: str) -> Baseline:
    n, setting = 4, "self-play-torchrl"
    name = f"einstein-puzzle/{setting}/n{n}/{mode}"
    return Baseline(
        name=name,
        game="einstein-puzzle",
        setting=f"Einstein self-play, n = {n}, {SHORT[mode]}",
        learner="TorchRL MAPPO, one actor shared by the seats, a centralised critic",
        metric="success_rate",
        reference_label="planner",
        train=Bound(train_torchrl, name),
        reference=Bound(planner_reference, name),
        budgets={
            "full": Budget(TORCHRL_FRAMES, 100),
            **({"quick": Budget(2000, 10)} if mode == "provide_and_seek" else {}),
        },
        shown=("steps", "shares", "asks", "with_planner"),
        fingerprint=torchrl_fingerprint(setting, _config(setting, n, mode)),
        unit=TORCHRL_UNIT,
        curve="training episodes' return, both seats summed",
        cross=Bound(cross_torchrl, name),
        missing=torchrl_missing,
    )


def _baseline(setting: str, n: int, mode: str) -> Baseline:
    name = f"einstein-puzzle/{setting}/n{n}/{mode}"
    steps = (SEAT_STEPS if setting == "seat" else SELF_STEPS)[n]
    label = "player_0 with the planner" if setting == "seat" else "self-play"
    return Baseline(
        name=name,
        game="einstein-puzzle",
        setting=f"Einstein {label}, n = {n}, {SHORT[mode]}",
        learner="SB3 MaskablePPO",
        metric="success_rate",
        reference_label="planner",
        train=Bound(train_seat, name),
        reference=Bound(planner_reference, name),
        # (the quick preset, CI's, keeps one row of each setting: n = 4, provide & seek)
        budgets={"full": Budget(steps, 100), **({"quick": QUICK} if (n, mode) == (4, "provide_and_seek") else {})},
        shown=("steps", "shares", "asks") + (("with_planner",) if setting == "self-play" else ()),
        fingerprint=json.dumps(_config(setting, n, mode).to_dict(), sort_keys=True),
        cross=Bound(cross_play, name) if setting == "self-play" else None,
    )


# RLlib's self-play rows (n = 4, provide & seek): the game's one module for both seats, and a module per seat
RLLIB_MODULES: dict[str, dict[str, str] | None] = {
    "self-play-rllib": None,
    "self-play-rllib-independent": {"player_0": "player_0", "player_1": "player_1"},
}

TORCHRL_FRAMES = 20_000  # a TorchRL self-play run's budget (frames of the parallel environment)
TORCHRL_MODES = ("provide_and_seek", "none")  # (none: the control without communication)

BASELINES = (
    *(_baseline(setting, n, mode) for setting in ("seat", "self-play") for n in SIZES for mode in COMM_MODES),
    *(_rllib_baseline(setting) for setting in RLLIB_MODULES),
    *(_torchrl_baseline(mode) for mode in TORCHRL_MODES),
)
