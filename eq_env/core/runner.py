"""Play episodes of any registered game with a policy per role, and measure them.

:func:`play` runs one seed through the game's AEC environment, agent by agent
(``agent_iter``), and returns one record per episode; :func:`aplay` does the
same with several episodes in flight, for policies that wait on something (LLM
policies, ``aact``), recording the episodes whose policy failed instead of
ending the run; :func:`evaluate` runs several seeds and summarises the game's
metrics (mean and sample standard deviation over seeds). Episodes may have any
number of turns and agents. The runner knows policies only through
:class:`~eq_env.core.policy.Policy` (and :class:`~eq_env.core.policy.JointPolicy`)
and games only through their :class:`~eq_env.core.spec.EnvSpec`.

Seeding: the environment's draws come from ``seed`` itself (episode ``i`` of a
seed is ``reset(seed=seed, options={"episode": i})``), and each policy's own
randomness from a child of it (:func:`policy_seed`, per role and agent), so a
run is reproducible bit for bit and two conditions with the same seed face the
same chance events. An agent whose only legal action is one (its
``action_mask``) takes it without the policy being asked, so an LLM is not
billed for a decision that does not exist.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from eq_env.core.policy import PolicyError, PolicySetupError, UserPolicyError, imported_spec, make_policy, new_run
from eq_env.core.spec import EnvSpec, env_spec

__all__ = [
    "Episode",
    "Evaluation",
    "FailedEpisode",
    "agent_policies",
    "aplay",
    "episode_from_dict",
    "evaluate",
    "forced_action",
    "format_metrics_table",
    "is_async",
    "is_idle",
    "llm_summary",
    "merge_infos",
    "play",
    "play_concurrent",
    "policy_seed",
    "summarize",
]

Policies = Mapping[str, Any]  # role -> a policy object or a spec string


def policy_seed(seed: int, stream: int | tuple[int, ...]) -> int:
    """The seed a policy is reset with for a run of ``seed``: a child of it on ``stream`` (an EnvSpec's
    role stream, and the agent's index when the role has several agents)."""
    key = (stream,) if isinstance(stream, int) else tuple(stream)
    ss = np.random.SeedSequence(seed, spawn_key=key)
    return int(ss.generate_state(1, dtype=np.uint64)[0])


def forced_action(observation: Any) -> int | None:
    """The only legal action when the observation's ``action_mask`` leaves just one, else None."""
    mask = observation.get("action_mask") if isinstance(observation, Mapping) else None
    if mask is None:
        return None
    mask = np.asarray(mask)
    return int(np.argmax(mask)) if mask.ndim == 1 and int(mask.sum()) == 1 else None


def is_idle(observation: Any) -> bool:
    """The agent has nothing to decide this turn (its observation's ``"idle"`` is set: another role's phase
    of a simultaneous-move game); the runner plays ``None`` for it without asking its policy."""
    return isinstance(observation, Mapping) and bool(observation.get("idle", False))


def is_async(policy: Any) -> bool:
    """The policy offers ``async aact(observation) -> (action, info)`` (LLM policies do), or a joint policy
    ``async aact_joint(observations) -> (actions, info)``."""
    return any(callable(getattr(policy, m, None)) for m in ("aact", "aact_joint", "aact_privileged"))


def _is_joint(policy: Any) -> bool:
    return callable(getattr(policy, "act_joint", None))


def agent_stream(stream: int, index: int) -> tuple[int, ...]:
    """The seed stream of a role's ``index``-th agent: the role's own for the first, so that a role's first
    agent draws the same whatever the number of its agents (a grid over N keeps common random numbers)."""
    return (stream,) if index == 0 else (stream, index)


class _Agents:
    """The policy of each agent of one run: made from the role's spec — one instance per agent, or one for
    all of the role's agents when it is a joint policy — or given as an object (shared by the role's
    agents); seeded per role and agent."""

    def __init__(self, spec: EnvSpec, config: Any, policies: Policies) -> None:
        spec.check_config(config)
        spec.check_roles(list(policies))
        self.spec = spec
        self.by_agent: dict[str, Any] = {}
        self.seeds: list[tuple[Any, tuple[int, ...]]] = []  # (policy, seed stream) once per distinct policy
        for role, agents in spec.agents(config).items():
            given, stream = policies[role], spec.roles[role]
            for i, agent in enumerate(agents):
                if not isinstance(given, str):
                    policy = _checked_role(given, role)
                elif i > 0 and _is_joint(self.by_agent[agents[0]]):
                    policy = self.by_agent[agents[0]]  # one joint policy decides for the role's agents
                else:
                    policy = make_policy(given, role, spec)
                if not any(p is policy for p, _ in self.seeds):
                    self.seeds.append((policy, agent_stream(stream, i)))
                self.by_agent[agent] = policy

    def reset(self, seed: int) -> None:
        for policy, stream in self.seeds:
            policy.reset(seed=policy_seed(seed, stream))

    def distinct(self) -> list[Any]:
        return list({id(p): p for p, _ in self.seeds}.values())

    def any_async(self) -> bool:
        return any(is_async(p) for p in self.distinct())


def _checked_role(policy: Any, role: str) -> Any:
    if getattr(policy, "role", role) != role:
        raise ValueError(f"{policy!r} plays {getattr(policy, 'role', None)!r}, not {role!r}")
    return policy


def agent_policies(env: Any, config: Any, policies: Policies) -> dict[str, Any]:
    """agent → the policy that plays it, as :func:`play` builds them from ``policies`` (role → spec)."""
    return _Agents(env_spec(env), config, policies).by_agent


def merge_infos(infos: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One agent's infos over an episode's turns, as one: numbers summed, flags or-ed, lists joined, dicts
    merged the same way, anything else the last one's — but never a None, which says a turn had nothing to
    report (a turn with no fallback has ``"fallback_reason": None``: an earlier turn's reason stays). A single
    info comes back as it is (a copy)."""
    if not infos:
        return None
    out: dict[str, Any] = {}
    for info in infos:
        for key, value in info.items():
            if key not in out:
                out[key] = dict(value) if isinstance(value, dict) else list(value) if isinstance(value, list) else value
                continue
            old = out[key]
            if value is None:
                continue
            if isinstance(value, bool) and isinstance(old, bool):
                out[key] = old or value  # (a fallback in any turn is a fallback of the episode)
            elif _number(value) and _number(old):
                out[key] = old + value
            elif isinstance(value, list) and isinstance(old, list):
                out[key] = old + value
            elif isinstance(value, dict) and isinstance(old, dict):
                out[key] = merge_infos([old, value])
            else:
                out[key] = value
    return out


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# ---------------------------------------------------------------------------
# Failed episodes
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class FailedEpisode:
    """An episode no policy action could be obtained for (e.g. the endpoint stayed down).

    ``role`` is the role whose policy failed and ``error`` what happened. ``infos`` holds what each
    agent's policy reported for this episode, the failing one's attempt included (requests, retries,
    tokens billed, transport errors): an answer paid for before another agent's request failed is
    part of the run's costs.
    """

    seed: int
    episode: int
    role: str
    error: str
    infos: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed: bool = True
    agent: str = ""

    @property
    def info(self) -> dict[str, Any] | None:
        """What the failing agent's policy reported."""
        return self.infos.get(self.agent)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Episode = Any  # a game's record, or a FailedEpisode


def episode_from_dict(env: Any, data: Mapping[str, Any]) -> Episode:
    """A finished or failed episode of the game ``env`` from its dict; a ValueError names a bad field."""
    from eq_env.core.records import checked_fields

    if isinstance(data, Mapping) and data.get("failed"):
        return FailedEpisode(**checked_fields(FailedEpisode, data))
    return env_spec(env).record_from_dict(data)


# ---------------------------------------------------------------------------
# Playing
# ---------------------------------------------------------------------------
async def _act(policy: Any, observation: Any) -> tuple[Any, dict[str, Any] | None]:
    if is_async(policy):
        action, info = await policy.aact(observation)
        return action, info
    return policy.act(observation), None


async def decide(policy: Any, observation: Any, env: Any) -> tuple[Any, dict[str, Any] | None]:
    """One decision of a policy for one agent, however it acts: privileged ones (``aact_privileged`` /
    ``act_privileged``, see :mod:`eq_env.core.policy`) are given the raw environment ``env``; waiting ones are
    awaited; plain ones are called. Returns (action, info or None)."""
    waiting = getattr(policy, "aact_privileged", None)
    if callable(waiting):  # (e.g. an LLM screened by the game's verifiers)
        action, info = await waiting(observation, env)
        return action, info
    privileged = getattr(policy, "act_privileged", None)
    if callable(privileged):  # an oracle: it reads the game itself
        action, info = privileged(observation, env)
        return action, info
    return await _act(policy, observation)


def _acting_method(policy: Any) -> str:
    """The method :func:`decide` calls on ``policy`` (named when a user's policy raises in it)."""
    privileged = next((m for m in ("aact_privileged", "act_privileged") if callable(getattr(policy, m, None))), None)
    return privileged or ("aact" if is_async(policy) else "act")


def decide_now(policy: Any, observation: Any, env: Any) -> tuple[Any, dict[str, Any] | None]:
    """:func:`decide` from synchronous code: an event loop only for a policy that waits (an RL view's partner
    steps on a hot path)."""
    if is_async(policy):
        return asyncio.run(decide(policy, observation, env))
    coroutine = decide(policy, observation, env)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()  # pragma: no cover - is_async guards
    raise RuntimeError("a synchronous policy awaited something")  # pragma: no cover


async def _act_joint(policy: Any, observations: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict | None]:
    act = getattr(policy, "aact_joint", None)
    if callable(act):
        actions, info = await act(observations)
        return actions, info
    return policy.act_joint(observations), None


class _Turns:
    """The loop of one episode: every agent's turn, each answered by its policy."""

    def __init__(self, env: Any, agents: _Agents, seed: int | None = None, episode: int | None = None) -> None:
        self.env = env
        self.agents = agents
        self.where = f"episode {episode}, seed {seed}"  # (said when a user's policy raises)
        self.infos: dict[str, list[dict[str, Any]]] = {}
        self.acting = ""  # the agent whose policy is being asked (named if it fails)

    def agent_infos(self) -> dict[str, dict[str, Any]]:
        return {a: merged for a, infos in self.infos.items() if (merged := merge_infos(infos)) is not None}

    async def play(self) -> None:
        env = self.env
        pending: dict[str, Any] = {}  # a joint policy's answers, waiting for their agents' turns
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                pending.pop(agent, None)
                env.step(None)
                continue
            action = forced_action(observation)
            if action is not None or is_idle(observation):
                pending.pop(agent, None)  # (an answer for a move that was not the agent's to choose)
            else:
                self.acting = agent
                policy = self.agents.by_agent[agent]
                if _is_joint(policy):
                    if agent not in pending:  # the first of its agents to act this round: it decides for all
                        group = [a for a in env.agents if self.agents.by_agent.get(a) is policy]
                        method = "aact_joint" if callable(getattr(policy, "aact_joint", None)) else "act_joint"
                        with self._users_errors(policy, method):
                            answers, info = await _act_joint(policy, {a: env.observe(a) for a in group})
                        missing = [a for a in group if a not in answers]
                        if missing:
                            raise PolicyError(f"{policy!r} gave no action for {', '.join(missing)}")
                        pending.update({a: answers[a] for a in group})
                        if info:
                            self.infos.setdefault(agent, []).append(info)
                    action = pending.pop(agent)
                else:
                    with self._users_errors(policy, _acting_method(policy)):
                        action, info = await decide(policy, observation, env)
                    if info:
                        self.infos.setdefault(agent, []).append(info)
            env.step(action)

    @contextlib.contextmanager
    def _users_errors(self, policy: Any, method: str) -> Iterator[None]:
        """Whatever a policy made from a ``module:Class`` spec raises as a :class:`UserPolicyError` of one
        line naming the spec, the episode and the exception; a registered policy's errors pass as they are
        (our bugs keep their tracebacks), and so do a policy's own PolicyError / PolicySetupError, an
        interrupt and a cancellation."""
        try:
            yield
        except (PolicyError, PolicySetupError, KeyboardInterrupt, asyncio.CancelledError):
            raise
        except BaseException as err:
            spec = imported_spec(policy)
            if spec is None:
                raise
            said = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            raise UserPolicyError(f"policy {spec!r} raised {said} in {method} ({self.where})") from err


def _bar(total: int, seed: int, progress: bool | None) -> Any:
    return tqdm(total=total, desc=f"seed {seed}", unit="ep", disable=None if progress is None else not progress)


def play(
    env: Any,
    config: Any,
    policies: Policies | _Agents,
    *,
    episodes: int,
    seed: int,
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
    concurrency: int = 1,
) -> list[Any]:
    """Play ``episodes`` episodes of seed ``seed`` of the game ``env`` (an id, short name or spec).

    ``policies`` maps each role to a policy object or spec string (``"planner:depth=3"``). ``render``
    receives each finished episode's text rendering; ``progress=None`` shows a bar only on a terminal.
    When a policy waits on something (``aact``: LLM policies), the episodes go through :func:`aplay`
    with ``concurrency`` in flight, and a failed episode raises
    :class:`~eq_env.core.policy.PolicyError` here (experiments record them instead).
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 0:
        raise ValueError(f"episodes must be a non-negative integer, got {episodes!r}")
    spec = env_spec(env)
    agents = policies if isinstance(policies, _Agents) else _Agents(spec, config, policies)
    if agents.any_async():
        out = play_concurrent(
            spec,
            config,
            agents,
            episodes=episodes,
            seed=seed,
            concurrency=concurrency,
            progress=progress,
            render=render,
        )
        failed = [e for e in out if isinstance(e, FailedEpisode)]
        if failed:
            raise PolicyError(f"{len(failed)} episode(s) failed, e.g. episode {failed[0].episode}: {failed[0].error}")
        return out
    agents.reset(seed)
    game = spec.raw_env(config, render_mode="ansi" if render else None)
    records = []
    bar = _bar(episodes, seed, progress)
    for i in range(episodes):
        game.reset(seed=seed, options={"episode": i})
        turns = _Turns(game, agents, seed, i)
        _run_sync(turns.play())
        records.append(spec.record(game, seed, i, turns.agent_infos()))
        if render is not None:
            render(game.render())
        bar.update(1)
    bar.close()
    game.close()
    return records


def _run_sync(coroutine: Any) -> None:
    """Run a coroutine that never awaits anything (every policy acts synchronously) without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("a synchronous episode awaited something")  # pragma: no cover - _Agents.any_async guards


async def aplay(
    env: Any,
    config: Any,
    policies: Policies | _Agents,
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

    Each episode is the same as in :func:`play`; episodes in ``skip`` are not played (a resumed run).
    ``on_episode`` receives each episode as it finishes — in whatever order they finish — so a caller
    can save it at once. An episode whose policy raises — :class:`~eq_env.core.policy.PolicyError`
    (e.g. the endpoint stayed down) or anything else (a policy bug, an action the environment
    rejects) — becomes a :class:`FailedEpisode` carrying the error, and the run goes on: one bad
    reply never ends a run. :class:`~eq_env.core.policy.PolicySetupError` (nothing can be played)
    stops it before anything is recorded; policies with an ``async check()`` are checked first.
    """
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    spec = env_spec(env)
    agents = policies if isinstance(policies, _Agents) else _Agents(spec, config, policies)
    agents.reset(seed)
    roles = spec.agent_roles(config)
    skipped = set(skip)  # once: ``skip`` may be a one-pass iterator
    todo = [i for i in range(episodes) if i not in skipped]
    envs: asyncio.Queue[Any] = asyncio.Queue()
    for _ in range(min(concurrency, max(len(todo), 1))):
        envs.put_nowait(spec.raw_env(config, render_mode="ansi" if render else None))
    bar = _bar(len(todo), seed, progress)

    async def one(i: int) -> Episode:
        game = await envs.get()  # the pool bounds concurrency; environments are reused in turn
        turns = _Turns(game, agents, seed, i)
        try:
            game.reset(seed=seed, options={"episode": i})
            await turns.play()
            result: Episode = spec.record(game, seed, i, turns.agent_infos())
            if render is not None:
                render(game.render())
        except PolicySetupError:  # no episode can succeed: stop the run, record nothing
            raise
        except PolicyError as err:
            infos = turns.agent_infos()
            if err.info:  # (the failing attempt's own costs)
                infos[turns.acting] = merge_infos([*turns.infos.get(turns.acting, []), err.info]) or {}
            result = FailedEpisode(seed, i, roles.get(turns.acting, ""), str(err), infos, agent=turns.acting)
        except Exception as err:  # recorded with its type; the run goes on
            result = FailedEpisode(
                seed,
                i,
                roles.get(turns.acting, ""),
                f"{type(err).__name__}: {err}",
                turns.agent_infos(),
                agent=turns.acting,
            )
        finally:
            envs.put_nowait(game)
        if on_episode is not None:
            on_episode(result)
        bar.update(1)
        return result

    tasks: list[asyncio.Future[Episode]] = []
    try:
        with new_run():  # (inside a longer run, e.g. run_all's, this is part of it)
            if todo:  # a policy that cannot be served stops the run before any episode is paid for
                for policy in agents.distinct():
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
        for policy in agents.distinct():  # close connections while their event loop still runs
            close = getattr(policy, "aclose", None)
            if callable(close):
                await close()
    return sorted(results, key=lambda e: e.episode)


def play_concurrent(
    env: Any,
    config: Any,
    policies: Policies | _Agents,
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
            env,
            config,
            policies,
            episodes=episodes,
            seed=seed,
            concurrency=concurrency,
            skip=skip,
            on_episode=on_episode,
            progress=progress,
            render=render,
        )
    )


# ---------------------------------------------------------------------------
# LLM costs
# ---------------------------------------------------------------------------
def llm_summary(
    env: Any,
    config: Any,
    records: Sequence[Any],
    failed: Sequence[FailedEpisode] = (),
    superseded: Sequence[Episode] = (),
) -> dict[str, Any]:
    """Totals of what LLM policies reported over a run, per role: tokens, requests, fallbacks, re-asks.

    ``prompt_tokens``/``completion_tokens`` are attributed to the run's episodes, failed ones
    included (what their samples cost when drawn, replay or not); ``calls`` counts the answers
    policies gave. Under ``transport``, what was done and paid for to play the run: every request
    of every episode, those of failed episodes and of ``superseded`` attempts (failed episodes an
    earlier, resumed run played before these) included.
    """
    roles = env_spec(env).agent_roles(config)
    out: dict[str, Any] = {"failed_episodes": len(failed)}
    for role in env_spec(env).roles:
        answered = [i for r in records for a, i in r.infos.items() if i and roles.get(a) == role]
        answered += [i for f in failed for a, i in f.infos.items() if i and roles.get(a) == role and a != f.agent]
        lost = [i for f in failed for a, i in f.infos.items() if i and roles.get(a) == role and a == f.agent]
        earlier = [i for e in superseded for a, i in e.infos.items() if i and roles.get(a) == role]
        if not answered and not lost and not earlier:
            continue
        drawn = [*answered, *lost]
        transport = [i.get("transport", {}) for i in (*drawn, *earlier)]
        out[role] = {
            # a policy that decides several times an episode reports "decisions" (summed over the episode)
            "calls": sum(int(i.get("decisions", 1)) for i in answered),
            "prompt_tokens": sum(i.get("prompt_tokens", 0) for i in drawn),
            "completion_tokens": sum(i.get("completion_tokens", 0) for i in drawn),
            "usage_estimated": sum(bool(i.get("usage_estimated")) for i in drawn),
            "fallbacks": sum(int(i["fallbacks"]) if "fallbacks" in i else bool(i.get("fallback")) for i in answered),
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


# ---------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------
def summarize(
    per_seed: Iterable[Mapping[str, float]], metrics: Iterable[str] | None = None
) -> dict[str, tuple[float, float]]:
    """Mean and sample standard deviation (ddof = 1) of each metric over seeds.

    Seeds where a metric is undefined (NaN) are left out of its mean; with fewer than two defined
    values the standard deviation is NaN. ``metrics`` (default: those of the first seed) fixes the order.
    """
    rows = list(per_seed)
    names = list(metrics) if metrics is not None else (list(rows[0]) if rows else [])
    out: dict[str, tuple[float, float]] = {}
    for name in names:
        values = np.array([r[name] for r in rows], dtype=np.float64)
        values = values[~np.isnan(values)]
        mean = float(values.mean()) if values.size else math.nan
        std = float(values.std(ddof=1)) if values.size > 1 else math.nan
        out[name] = (mean, std)
    return out


@dataclass
class Evaluation:
    """Several seeds of one condition: records, per-seed metrics and their summary."""

    env: str
    config: Any
    policies: dict[str, str]  # role -> the policy, as repr shows it
    seeds: list[int]
    episodes: int
    records: list[Any]
    per_seed: list[dict[str, float]]
    failed: list[FailedEpisode] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, tuple[float, float]]:
        return summarize(self.per_seed, env_spec(self.env).metrics)


def check_seeds(seeds: Any) -> list[int]:
    """``seeds`` as a list, or a ValueError: a non-empty sequence of distinct non-negative integers."""
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
    return [int(s) for s in seeds]


@new_run()
def evaluate(
    env: Any,
    config: Any,
    policies: Policies,
    *,
    episodes: int,
    seeds: Sequence[int],
    progress: bool | None = False,
    render: Callable[[str], None] | None = None,
    concurrency: int = 1,
) -> Evaluation:
    """:func:`play` for each seed, with per-seed metrics (the game's ``compute_metrics``).

    Episodes that LLM policies fail (see :class:`FailedEpisode`) are kept in ``failed`` and left out
    of the metrics, instead of ending the evaluation.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")  # 0 would give NaN metrics
    seeds = check_seeds(seeds)
    spec = env_spec(env)
    agents = _Agents(spec, config, policies)  # (checks the config and the roles)
    records: list[Any] = []
    failed: list[FailedEpisode] = []
    per_seed = []
    for seed in seeds:
        if agents.any_async():
            out = play_concurrent(
                spec,
                config,
                agents,
                episodes=episodes,
                seed=seed,
                concurrency=concurrency,
                progress=progress,
                render=render,
            )
            run = [e for e in out if not isinstance(e, FailedEpisode)]
            failed.extend(e for e in out if isinstance(e, FailedEpisode))
        else:
            run = play(spec, config, agents, episodes=episodes, seed=seed, progress=progress, render=render)
        records.extend(run)
        per_seed.append(spec.compute_metrics(run))
    shown = {
        role: repr(agents.by_agent[members[0]]) if members else "(no agent)"
        for role, members in spec.agents(config).items()
    }
    return Evaluation(spec.id, config, shown, seeds, episodes, records, per_seed, failed)


def format_metrics_table(summary: Mapping[str, tuple[float, float]], digits: int = 3) -> str:
    """A plain-text table of ``metric  mean  std``."""
    width = max(len(k) for k in summary)
    lines = [f"{'metric':<{width}}  {'mean':>8}  {'std':>8}", f"{'-' * width}  {'-' * 8}  {'-' * 8}"]
    for name, (mean, std) in summary.items():
        m = "—" if math.isnan(mean) else f"{mean:.{digits}f}"
        s = "—" if math.isnan(std) else f"{std:.{digits}f}"
        lines.append(f"{name:<{width}}  {m:>8}  {s:>8}")
    return "\n".join(lines)
