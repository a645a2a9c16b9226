"""Multi-turn RL in the games with TRL's ``GRPOTrainer`` (``eq-env finetune grpo``): whole episodes, the game's reward.

The unit is an episode. Each training prompt names an episode (``seed``, ``episode``) of the game; GRPO draws
``num_generations`` rollouts of it — the same puzzle, the same chance draws — and compares their rewards. A
rollout (TRL's documented ``rollout_func``) plays that episode through the environment with the model in the
learning ``role``, asked exactly as the LLM players are asked (the role's ``llm`` policy, its prompts, its reply
parsing, its re-asks and fallbacks), the model answering in-process (:mod:`eq_env.agents.local`), and the
partner:

* ``default`` — each other role's ``eq-env play`` default (the Einstein planner, the exchange–audit rule engine),
  or any registered policy spec of the other roles (``planner``, ``random``, ``sb3:path=...``);
* ``self`` — the model being trained in every LLM role of the game (both Einstein seats; proposer and
  validator);
* ``llm:model=...,base_url=...`` — another model at an endpoint (or ``hf:path=DIR`` in-process).

**The reward** is the game's own: the sum over the episode of the environment's rewards to the learning role's
agents (the Einstein puzzle: success reward and penalties; the exchange–audit game: the welfare; belief
coordination: accuracy), averaged over them when the model holds several seats. It reaches the trainer as the
``episode_reward`` field of each rollout, which the reward function returns as it is.

**The trajectory** TRL scores is TRL's multi-turn form: the first decision's prompt, then every reply the model
gave in the episode (re-asks included) with the prompts between them masked out of the loss (``env_mask``).
(The players see at each decision only that decision's prompt — which holds the game's history — so the trainer
scores each reply after the episode's earlier turns as well: the form TRL's multi-turn environments use.)

**Malformed actions** are handled as the players handle them — re-asked with the grammar's error, then the
role's fallback — and counted: each step's log (``grpo_log.jsonl``: reward, malformed-reply rate, fallback
rate, episode length) and the card say how often. Writes ``model/``, ``grpo_log.jsonl``, ``curve.csv``,
``curve.png`` (mean reward per step) and ``card.json``/``card.md`` into ``out``; checkpoints in
``out/checkpoints`` (the same command resumes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eq_env.agents.local import PENALTIES, LocalReply, forget_local, register_local
from eq_env.finetune.runs import (
    chat_tokenizer,
    check_integers,
    check_numbers,
    last_checkpoint,
    library_versions,
    trainer_arguments,
    write_card,
    write_curve,
)

__all__ = ["GRPOHyper", "Rollout", "TrainerModel", "add_arguments", "grpo", "play_rollout", "run"]

_PROMPT = re.compile(r"seed (\d+), episode (\d+)")
LEARNER = "grpo-learner"


@dataclass(frozen=True)
class GRPOHyper:
    """The run's settings (all on the card)."""

    max_steps: int = 50
    episodes: int = 64  # distinct episodes (prompts) the run cycles through
    num_generations: int = 4  # rollouts per episode, compared with each other
    batch_size: int = 4  # rollouts per step (a multiple of num_generations)
    learning_rate: float = 1e-5
    temperature: float = 1.0
    max_tokens: int = 48  # per reply
    max_reasks: int = 2
    beta: float = 0.0  # KL to the starting model (TRL's default, 0: no reference model is kept)
    logging_steps: int = 1
    save_steps: int = 50
    seed: int = 0

    def __post_init__(self) -> None:
        counts = ("max_steps", "episodes", "num_generations", "batch_size", "max_tokens", "logging_steps", "save_steps")
        check_integers(self, dict.fromkeys(counts, (1, 1 << 24)))
        check_integers(self, {"max_reasks": (0, 20), "seed": (0, 2**32 - 1)})
        check_numbers(self, {"learning_rate": (1e-12, 1.0), "temperature": (1e-3, 2.0), "beta": (0.0, 100.0)})
        if self.num_generations < 2:
            raise ValueError(f"num_generations must be at least 2 (GRPO compares rollouts), got {self.num_generations}")
        if self.batch_size % self.num_generations:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be a multiple of num_generations ({self.num_generations})"
            )


class TrainerModel:
    """The model being trained, as a local model of the LLM players: it samples from the model's current
    weights (never cached) and keeps the token ids of every request of the episode being played."""

    cacheable = False
    fingerprint = LEARNER
    parameters = PENALTIES

    def __init__(self, model: Any, tokenizer: Any, seed: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.seed = seed
        self.calls = 0  # requests answered: each draws from its own generator, so a run is reproducible
        self.turns: list[tuple[list[int], list[int]]] = []  # (prompt ids, reply ids) of this episode's requests

    def problem(self) -> str | None:
        return None

    async def generate(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        seed: int | None,
        n: int,
        extra: dict[str, Any],
    ) -> LocalReply:
        from eq_env.agents.hf import generate_chat

        self.calls += 1
        was_training = self.model.training
        self.model.eval()
        try:
            reply = generate_chat(
                self.model,
                self.tokenizer,
                messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=None,
                n=n,
                generator_seed=(self.seed << 32) + self.calls,
                extra=extra,
            )
        finally:
            self.model.train(was_training)
        for reply_ids in reply.extra["completion_ids"]:
            self.turns.append((reply.extra["prompt_ids"], reply_ids))
        return reply


@dataclass
class Rollout:
    """One episode played with the model: its reward, the actions taken, what the trainer scores."""

    seed: int
    episode: int
    reward: float
    actions: list[tuple[str, Any]]  # (agent, action) in the order played
    turns: list[tuple[list[int], list[int]]]
    decisions: int = 0
    malformed: int = 0  # invalid replies (each one re-asked, or the last before a fallback)
    fallbacks: int = 0
    failed: str = ""
    infos: list[dict[str, Any]] = field(default_factory=list)

    def trajectory(self) -> tuple[list[int], list[int], list[int]]:
        """(prompt ids, completion ids, env mask): TRL's multi-turn form (module docstring)."""
        if not self.turns:
            return [], [], []
        prompt, completion, mask = list(self.turns[0][0]), [], []
        for i, (asked, reply) in enumerate(self.turns):
            if i:
                completion += asked
                mask += [0] * len(asked)
            completion += reply
            mask += [1] * len(reply)
        return prompt, completion, mask


def learning_specs(game: str, role: str, partner: str, url: str, hyper: GRPOHyper) -> dict[str, str]:
    """role -> policy spec for a rollout: the model in ``role`` (and every LLM role when ``partner='self'``);
    ``"__learners__"``: the roles the model plays, comma-separated (their agents' rewards are the rollout's)."""
    from eq_env.core.policy import available_policies, format_policy_spec
    from eq_env.core.spec import env_spec

    spec = env_spec(game)
    entries = {e.role: e for e in available_policies(None, game) if e.name == "llm"}
    if role not in entries:
        raise ValueError(f"--role: {spec.name}'s LLM roles are {', '.join(sorted(entries))}, not {role!r}")
    wanted = {"temperature": hyper.temperature, "max_tokens": hyper.max_tokens, "max_reasks": hyper.max_reasks}

    def learner_of(seat: str) -> str:  # (a role's llm policy takes what it has: belief's executors never re-ask)
        takes = entries[seat].parameters()
        return format_policy_spec(
            "llm", {"model": LEARNER, "base_url": url, **{k: v for k, v in wanted.items() if k in takes}}
        )

    specs = {}
    for other in spec.roles:
        if other == role or (partner == "self" and other in entries):
            specs[other] = learner_of(other)
        elif partner == "default":
            specs[other] = spec.default_policies.get(other, "random")
        elif partner != "self":
            specs[other] = partner
    missing = [r for r in spec.roles if r not in specs]
    if missing:
        raise ValueError(f"--partner self: {', '.join(missing)} has no LLM policy; give a partner policy spec")
    learners = [r for r in spec.roles if r == role or (partner == "self" and r in entries)]
    return {**specs, "__learners__": ",".join(learners)}


async def _play(
    game: str, config: Any, specs: Mapping[str, str], seed: int, episode: int, model: TrainerModel
) -> Rollout:
    from eq_env.core.policy import PolicyError, make_policy
    from eq_env.core.runner import decide, forced_action, is_idle, policy_seed
    from eq_env.core.spec import env_spec

    spec = env_spec(game)
    roles = spec.agent_roles(config)
    policies: dict[str, Any] = {}
    for agent, role in roles.items():  # (the learner's seats share nothing but the model)
        policy = make_policy(specs[role], role=role, env=game)
        stream = spec.roles[role]
        policy.reset(policy_seed(seed, (stream, list(roles).index(agent))))
        policies[agent] = policy
    learners = [a for a, r in roles.items() if r in specs["__learners__"].split(",")]
    env = spec.raw_env(config)
    env.reset(seed=seed, options={"episode": episode})
    model.turns = []
    rollout = Rollout(seed, episode, 0.0, [], [])
    returns = dict.fromkeys(learners, 0.0)
    try:
        for agent in env.agent_iter():
            observation, reward, terminated, truncated, _ = env.last()
            if agent in returns:
                returns[agent] += float(reward)
            if terminated or truncated:
                env.step(None)
                continue
            forced = None if is_idle(observation) else forced_action(observation)
            if is_idle(observation):
                action, info = None, None
            elif forced is not None:
                action, info = forced, None
            else:
                action, info = await decide(policies[agent], observation, env)
            if agent in returns and info:
                rollout.decisions += 1
                rollout.malformed += len(info.get("invalid_replies") or [])
                rollout.fallbacks += int(bool(info.get("fallback")))
                rollout.infos.append({k: info.get(k) for k in ("attempts", "fallback", "invalid_replies")})
            rollout.actions.append((agent, action))
            env.step(action)
    except PolicyError as err:  # (the partner's endpoint, say): the episode scores nothing, and says why
        rollout.failed = str(err)
    finally:
        for policy in policies.values():
            close = getattr(policy, "aclose", None)
            if callable(close):
                await close()
    rollout.reward = sum(returns.values()) / max(len(returns), 1) if not rollout.failed else 0.0
    rollout.turns = list(model.turns)
    return rollout


def play_rollout(
    game: str, config: Any, specs: Mapping[str, str], seed: int, episode: int, model: TrainerModel
) -> Rollout:
    """Play one episode with the model (see the module docstring); the rollout it was."""
    return asyncio.run(_play(game, config, specs, seed, episode, model))


def episode_prompt(game: str, seed: int, episode: int) -> list[dict[str, str]]:
    """The dataset's prompt naming an episode (the rollout plays that episode; the text itself is not asked)."""
    return [{"role": "user", "content": f"{game}: seed {seed}, episode {episode}"}]


def grpo(
    game: str,
    model: str,
    out: Path,
    *,
    role: str,
    partner: str = "default",
    config: Any = None,
    hyper: GRPOHyper = GRPOHyper(),
    seed_base: int = 1_000_000,
    on_rollouts: Callable[[list[Rollout]], None] | None = None,
    reward_seen: Callable[[list[float]], None] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Train ``model`` by GRPO in ``game`` (module docstring); returns the card.

    Training episodes are seed ``seed_base + hyper.seed``, episodes ``0 .. hyper.episodes - 1`` (the default base
    is far from the seeds the bench and ``reproduce`` play). ``on_rollouts`` receives each generation's rollouts
    and ``reward_seen`` the rewards the trainer's reward function returned for them (the tests compare the two).
    """
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from eq_env.agents.client import configure, settings
    from eq_env.core.spec import env_spec

    spec = env_spec(game)
    config = config if config is not None else spec.config()
    seed = seed_base + hyper.seed
    tokenizer = chat_tokenizer(model, "the players' prompts are chats")
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "grpo_log.jsonl"
    dataset = Dataset.from_list([{"prompt": episode_prompt(game, seed, i)} for i in range(hyper.episodes)])
    learner: dict[str, Any] = {}
    url = f"local:{LEARNER}-{id(learner)}"
    specs = learning_specs(game, role, partner, url, hyper)
    step_log: list[dict[str, Any]] = []

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if "model" not in learner:
            learner["model"] = TrainerModel(trainer.model, tokenizer, hyper.seed)
            register_local(url.removeprefix("local:"), learner["model"])
        rollouts = []
        for prompt in prompts:
            text = prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)
            m = _PROMPT.search(text)
            if m is None:
                raise ValueError(f"a GRPO prompt must name an episode ('seed S, episode I'), got {text[:80]!r}")
            rollouts.append(play_rollout(game, config, specs, int(m[1]), int(m[2]), learner["model"]))
        if on_rollouts is not None:
            on_rollouts(rollouts)
        decisions = sum(r.decisions for r in rollouts)
        asked = decisions + sum(r.malformed for r in rollouts)
        entry = {
            "step": trainer.state.global_step,
            "episodes": len(rollouts),
            "reward_mean": sum(r.reward for r in rollouts) / len(rollouts),
            "malformed_rate": sum(r.malformed for r in rollouts) / max(asked, 1),
            "fallback_rate": sum(r.fallbacks for r in rollouts) / max(decisions, 1),
            "decisions_per_episode": decisions / len(rollouts),
            "failed_episodes": sum(bool(r.failed) for r in rollouts),
        }
        step_log.append(entry)
        with log_path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
        trajectories = [r.trajectory() for r in rollouts]
        for r, (p, c, _) in zip(rollouts, trajectories, strict=True):
            if not p or not c:  # (no decision of the model's: an episode the partner ended at once)
                raise ValueError(f"episode {r.episode} of seed {r.seed}: the model made no decision in it")
        return {
            "prompt_ids": [t[0] for t in trajectories],
            "completion_ids": [t[1] for t in trajectories],
            "logprobs": None,
            "env_mask": [t[2] for t in trajectories],
            "episode_reward": [r.reward for r in rollouts],
        }

    def game_reward(prompts: list[Any], completions: list[Any], episode_reward: list[float], **_: Any) -> list[float]:
        rewards = [float(r) for r in episode_reward]
        if reward_seen is not None:
            reward_seen(rewards)
        return rewards

    game_reward.__name__ = f"{spec.name}_reward"
    checkpoints = out / "checkpoints"
    args = GRPOConfig(
        max_steps=hyper.max_steps,
        per_device_train_batch_size=hyper.batch_size,
        num_generations=hyper.num_generations,
        learning_rate=hyper.learning_rate,
        temperature=hyper.temperature,
        beta=hyper.beta,
        max_completion_length=hyper.max_tokens,
        **trainer_arguments(
            checkpoints,
            seed=hyper.seed,
            logging_steps=hyper.logging_steps,
            save_steps=hyper.save_steps,
            progress=progress,
        ),
    )
    previous = settings()
    configure(cache="off")  # (the model changes every step: nothing it says may be replayed)
    try:
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=game_reward,  # type: ignore[arg-type]
            args=args,
            train_dataset=dataset,
            processing_class=tokenizer,
            rollout_func=rollout_func,
        )
        resume = last_checkpoint(checkpoints)
        started = time.perf_counter()
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        seconds = time.perf_counter() - started
    finally:
        configure(cache=previous.cache)
        forget_local(url)
    trainer.save_model(str(out / "model"))
    tokenizer.save_pretrained(str(out / "model"))
    history = [{"step": e["step"] + 1, "loss": e["reward_mean"]} for e in step_log]
    title = f"GRPO of {Path(model).name} in {spec.name} (mean episode reward)"
    write_curve(history, out, title, value="reward_mean", ylabel="mean episode reward")
    card = {
        "format": 1,
        "kind": "grpo",
        "game": spec.name,
        "config": config.to_dict(),
        "role": role,
        "partner": partner,
        "base_model": model,
        "data": f"episodes 0-{hyper.episodes - 1} of seed {seed}",
        "data_sha256": "",
        "data_lines": {"episodes": hyper.episodes},
        "hyper": asdict(hyper),
        "steps": trainer.state.global_step,
        "final_loss": step_log[-1]["reward_mean"] if step_log else None,
        "reward_first": step_log[0]["reward_mean"] if step_log else None,
        "malformed_rate": sum(e["malformed_rate"] for e in step_log) / max(len(step_log), 1),
        "resumed_from": resume.name if resume else None,
        "seconds_this_run": round(seconds, 1),
        "versions": library_versions(),
    }
    write_card(out, card)
    return card


def config_arg(text: str) -> dict[str, Any]:
    from eq_env.core.policy import parse_scalar

    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise argparse.ArgumentTypeError(f"expected key=value,... (the game's parameters), got {item!r}")
        out[key.strip()] = parse_scalar(value.strip())
    return out


def add_arguments(sub: Any) -> None:
    """The ``grpo`` subcommand's flags."""
    from eq_env.core.cli import int_in, out_dir, seed_arg

    d = GRPOHyper()
    p = sub.add_parser(
        "grpo", help="multi-turn RL in a game with TRL's GRPOTrainer (whole episodes)", description=__doc__
    )
    p.add_argument("--env", required=True, dest="game", help="the game (einstein-puzzle, exchange-audit, ...)")
    p.add_argument("--model", required=True, help="a checkpoint directory or a Hugging Face model id")
    p.add_argument("--out", type=out_dir, required=True, help="the run's directory (run again to resume)")
    p.add_argument("--role", required=True, help="the role the model learns (player_0, proposer, coordinator...)")
    p.add_argument(
        "--partner",
        default="default",
        help="default (each other role's eq-env play default: the planner, the rule engine...), self, or a policy "
        "spec for the other roles (random, planner, llm:model=...,base_url=..., hf:path=DIR)",
    )
    p.add_argument("--config", type=config_arg, default={}, help="the game's parameters: n=4,comm_mode=none")
    p.add_argument("--max-steps", type=int_in(1, 1 << 24), default=d.max_steps)
    p.add_argument("--episodes", type=int_in(1, 1 << 24), default=d.episodes, help="distinct training episodes")
    p.add_argument("--num-generations", type=int_in(2, 1024), default=d.num_generations)
    p.add_argument("--batch-size", type=int_in(2, 1 << 16), default=d.batch_size)
    p.add_argument("--learning-rate", type=float, default=d.learning_rate)
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--max-tokens", type=int_in(1, 1 << 16), default=d.max_tokens, help="tokens per reply")
    p.add_argument("--max-reasks", type=int_in(0, 20), default=d.max_reasks)
    p.add_argument("--beta", type=float, default=d.beta, help="KL coefficient to the starting model (default 0)")
    p.add_argument("--save-steps", type=int_in(1, 1 << 24), default=d.save_steps)
    p.add_argument("--seed", type=seed_arg, default=0)


def run(args: argparse.Namespace) -> int:
    """``eq-env finetune grpo``."""
    from eq_env.core.spec import env_spec

    spec = env_spec(args.game)
    hyper = GRPOHyper(
        max_steps=args.max_steps,
        episodes=args.episodes,
        num_generations=args.num_generations,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        max_reasks=args.max_reasks,
        beta=args.beta,
        save_steps=args.save_steps,
        seed=args.seed,
    )
    config = spec.config.from_preset(None, **args.config)
    card = grpo(spec.name, args.model, args.out, role=args.role, partner=args.partner, config=config, hyper=hyper)
    print(
        f"wrote {args.out}/model ({card['steps']} steps; mean episode reward {card['reward_first']} at the first "
        f"step, {card['final_loss']} at the last; malformed replies {card['malformed_rate']:.1%})",
        file=sys.stderr,
    )
    return 0
