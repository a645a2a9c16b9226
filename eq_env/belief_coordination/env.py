"""# Belief coordination (``eq_env/belief-coordination-v0``)

N executors answer one question together; each chooses its own sampling
parameters (temperature T, repetition penalty p), an *answerer* turns
(question, T, p) into an answer, and a coordinator commits one of the answers.
Every agent receives the same reward. This is the setting of ECON ("From Debate
to Equilibrium", ICML 2025), built so that its claims can be tested: whether
learned beliefs over (T, p) beat fixed ones, and whether they form an
equilibrium.

| Import               | `from eq_env import belief_coordination_v0`                                      |
|----------------------|----------------------------------------------------------------------------------|
| Actions              | executors: Box (T, p) normalised, or Discrete (grid index); coordinator: Discrete(N) |
| Parallel API         | Yes (native); AEC by PettingZoo's standard conversion                           |
| Manual control       | No                                                                               |
| Agents               | `agents = ['executor_0', ..., 'executor_{N-1}', 'coordinator']`                 |
| Agents count         | N + 1 (N = `n_executors`, 1 to 16)                                                |
| Observation          | Dict: `"observation"` Box(0, 1, float32), `"idle"` Discrete(2), masks and texts |
| Reward               | 0.5·TS + 0.3·AL + 0.2·CC, shared (weights configurable)                          |

```python
import eq_env, pettingzoo
env = pettingzoo.make("parallel", "eq_env/belief-coordination-v0", n_executors=5)
observations, infos = env.reset(seed=0)
while env.agents:
    actions = {a: env.action_space(a).sample() for a in env.agents}   # idle agents' actions are ignored
    observations, rewards, terminations, truncations, infos = env.step(actions)
```

## An episode

1. **Answering** (`rounds` steps, 1 by default): every executor sends its
   (T, p); each executor's *own* (T, p) reaches its own answerer request (the
   original code sent only executor 0's). With `rounds` > 1 the later rounds
   are a debate: each executor reads the others' previous replies and answers
   again with the (T, p) it sends that round.
2. **Commit** (one step): the coordinator sees every final reply and commits
   one executor's answer (action `i`: executor i's number).

Agents whose phase it is not are *idle*: their observation's `"idle"` is 1, the
environment ignores their action (``None`` is fine), and the package's runner
does not ask their policy. The episode ends after the commit; every agent is
terminated with the shared reward (0 on earlier steps).

## Actions

* **executors**, `action_space="box"` (default): `Box(0, 1, (2,), float32)`,
  where `(x, y)` means `T = T_min + x·(T_max − T_min)` and `p = p_min +
  y·(p_max − p_min)` (normalised, as RL libraries and PettingZoo's tests expect;
  the observation's `"ranges"`, `[[T_min, T_max], [p_min, p_max]]`, says how to
  map). Defaults T ∈ [0.1, 2.0] (the paper's) and p ∈ [1.0, 2.0] (p = 1 is no
  penalty; the original code's range 0.1–0.9 *rewarded* repetition). An action
  outside the box, or not finite, is refused with a ValueError naming the
  executor. `action_space="grid"`: `Discrete(G)`, the index
  `t·grid_penalties + p` of the grid of `grid_temperatures` evenly spaced
  temperatures times `grid_penalties` penalties (6 × 5 by default: T 0.1, 0.48 … 2.0; p 1, 1.25 … 2), for
  value-based learners; the observation then has an `"action_mask"` (all ones
  while answering, only 0 while idle) and the `"grid"` itself (G × 2: the (T, p)
  of each index), so a policy can pick the index of the (T, p) it wants.
* **coordinator**: `Discrete(N)`, the executor whose answer is committed. Its
  `"action_mask"` is all ones (only 0 while idle): committing an answer that is
  no number is allowed and scores TS = AL = 0; who gave a number is in its
  features and its `"answers"`.

## Observations

Every observation is a Dict with `"observation"` (numbers in [0, 1]) and `"idle"`.

* executor, `"observation"` (5): the question's difficulty; the round, scaled
  from 0 (the first) to 1 (the last; always 0 with one round); then, about its own previous reply (0 in round 1): the
  share of the other executors that gave the same number, whether that number
  had the most support, whether it was a number at all.
* coordinator, `"observation"` (1 + 3N): the difficulty, then for each executor
  the share of executors that gave its number, whether it gave one, and its
  temperature scaled to [0, 1]. Also `"question"` (Text: the question) and
  `"transcript"` (Text: the replies, `[executor i] T=0.70 p=1.20` and the reply,
  each cut to its last 600 characters, after `[...] `, so the final answer
  stays), `"replies"` (a Tuple of N Texts: the same replies, one each) and
  `"answers"` (Text: a line `i: N` per executor, the number the environment
  scores, `i: none` for none), in printable ASCII (other characters become
  `?`): what an LLM coordinator reads. A coordinator should map its commitment
  to an executor with `"answers"`, never by reading numbers out of the
  replies, which the executors write.

## Rewards

TS, AL and CC are defined in :mod:`eq_env.belief_coordination.rules`: TS = the
committed number is correct; AL = share of executors whose final number equals
the committed one; CC = share of executors whose final number is correct. The
reward is `w_ts·TS + w_al·AL + w_cc·CC` for every agent at the end.

## Questions and answerers

Questions are generated (:mod:`eq_env.belief_coordination.questions`: episode
i of seed s is always the same word problem; `difficulty` sets the mix) or
given: `questions=` a list of `Question` or a path to a GSM8K-style JSONL file
(each seed plays the file in its own order). The answerer is the
:class:`~eq_env.belief_coordination.answerers.SimulatedAnswerer` (offline;
`sensitive=False` is the null instrument on which T and p cannot matter), or
`answerer=` any object with `answer(requests)`, e.g. the LLM answerer of
:mod:`eq_env.agents.belief_coordination`.

## Arguments

``belief_coordination_v0.parallel_env(config=None, preset=None, render_mode=None, answerer=None,
questions=None, observation_mode="text", **fields)``: a configuration, or a preset (`paper`, `grid`,
`nine`, `debate`, `null`) with any field overridden (`n_executors=5`); `observation_mode="numeric"` (grid
configurations) gives the numeric observation mode (see the version history; `eq_env.core.numeric`).
`reset(seed=s, options={"episode": i})` plays episode `i` of seed `s`; `"episode"` is the only option (a
game parameter such as `n_executors` is set when the environment is made). A call the API does not take —
an unknown agent, a seed that is not a non-negative integer, options that are not a dict or hold another key,
a parallel `step` given anything but a dict keyed by the agents in play, `observe()`, `last()` or `state()`
before `reset()` — is refused with one clear error naming it, before anything changes. An unknown keyword is a
`TypeError`. `render_mode`: `"ansi"` (`render()` returns the round as text), `"human"` (prints it) or
`"rgb_array"` (that text as a picture: `eq_env.core.render`).

## Version history

* v0: first version.
* v0, unchanged results: `render_mode="human"` prints the round and returns None (it returned the
  text and printed nothing); `render_mode="rgb_array"`; an unknown keyword is a `TypeError` (also a
  `ValueError`, as before).
* v0: `state_space` (the coordinator's features and the round); the numeric observation mode,
  `observation_mode="numeric"` (grid configurations): `Dict(observation, action_mask int8)` and `Discrete`
  actions, an idle agent allowed only its no-op, 0 (`eq_env.belief_coordination.numeric`).
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec_wrapper

from eq_env.belief_coordination import rules
from eq_env.belief_coordination.answerers import Answer, SimulatedAnswerer, answer_draws, round_requests
from eq_env.belief_coordination.config import BeliefCoordinationConfig
from eq_env.belief_coordination.questions import Question, generated_question, load_jsonl, show_number
from eq_env.belief_coordination.rules import EXECUTOR_FEATURES
from eq_env.core.api import (
    before_reset,
    checked_actions,
    checked_agent,
    checked_episode,
    checked_options,
    checked_seed,
)
from eq_env.core.render import RENDER_MODES, rendered

__all__ = ["CHARSET", "COORDINATOR", "ROLES_STREAMS", "BeliefCoordinationParallelEnv", "raw_env", "role_agents"]

COORDINATOR = "coordinator"
ROLES_STREAMS = {"executor": 0, "coordinator": 1}  # role -> policy seed stream (in the order roles act)
CHARSET = "".join(sorted(set(string.printable) - set("\t\r\x0b\x0c")))  # printable ASCII and "\n"
_ALLOWED = frozenset(CHARSET)
QUESTION_CHARS = 4000
REPLY_CHARS = 600
ANSWER_CHARS = 32  # a line "i: <number>" of the "answers" text
RESET_OPTIONS = ("episode",)  # (a game parameter is set when the environment is made, never by reset)


def role_agents(config: BeliefCoordinationConfig) -> dict[str, tuple[str, ...]]:
    """role → its agents under ``config``."""
    return {"executor": config.executors, "coordinator": (COORDINATOR,)}


def ascii_text(text: str, limit: int) -> str:
    """``text`` in the observation's charset (other characters as ``?``), cut to ``limit`` characters."""
    out = "".join(c if c in _ALLOWED else "?" for c in text[:limit])
    return out


class BeliefCoordinationParallelEnv(ParallelEnv):  # type: ignore[misc]
    """The parallel environment (the module docstring is its manual)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "belief_coordination_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(
        self,
        config: BeliefCoordinationConfig | None = None,
        preset: str | None = None,
        render_mode: str | None = None,
        answerer: Any = None,
        questions: Sequence[Question] | str | Path | None = None,
        **overrides: Any,
    ) -> None:
        self.config = BeliefCoordinationConfig.resolve(config, preset, overrides)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.answerer = answerer if answerer is not None else SimulatedAnswerer(self.config.simulation())
        if not callable(getattr(self.answerer, "answer", None)):
            raise TypeError(f"answerer must have answer(requests), got {type(self.answerer).__name__}")
        if isinstance(questions, (str, Path)):
            questions = load_jsonl(Path(questions))
        if questions is not None:
            questions = list(questions)
            if not questions or not all(isinstance(q, Question) for q in questions):
                raise ValueError("questions must be a non-empty sequence of Question, or a JSONL file's path")
        self.questions: list[Question] | None = questions
        self.possible_agents = [*self.config.executors, COORDINATOR]
        self.agents: list[str] = []
        self._seed: int | None = None
        self._episode = 0
        self._orders: dict[int, np.ndarray] = {}
        self._observations: dict[str, dict[str, Any]] = {}
        self._build_spaces()

    # -- spaces ------------------------------------------------------------------
    def _build_spaces(self) -> None:
        c, n = self.config, self.config.n_executors
        idle = spaces.Discrete(2)
        executor_obs: dict[str, spaces.Space[Any]] = {
            "observation": spaces.Box(0.0, 1.0, (EXECUTOR_FEATURES,), np.float32),
            "idle": idle,
        }
        low = np.array([c.temperature_min, c.penalty_min], np.float32)
        high = np.array([c.temperature_max, c.penalty_max], np.float32)
        if c.action_space == "grid":
            executor_act: spaces.Space[Any] = spaces.Discrete(c.grid_size)
            executor_obs["action_mask"] = spaces.Box(0, 1, (c.grid_size,), np.int8)
            executor_obs["grid"] = spaces.Box(
                np.tile(low, (c.grid_size, 1)), np.tile(high, (c.grid_size, 1)), dtype=np.float32
            )
            t, p = c.grid_point(np.arange(c.grid_size))
            self._grid = np.stack([t, p], axis=1).astype(np.float32)
        else:  # normalised: PettingZoo's battery (and RL libraries) expect 0 to be a valid action
            executor_act = spaces.Box(0.0, 1.0, (2,), np.float32)
            executor_obs["ranges"] = spaces.Box(
                np.stack([low, low], axis=1), np.stack([high, high], axis=1), dtype=np.float32
            )
            self._ranges = np.stack([low, high], axis=1)
        # state(): the coordinator's features, then the round (0 … rounds; rounds + 1 once committed)
        high = np.array([1.0] * (1 + 3 * n) + [c.rounds + 1], np.float32)
        self.state_space = spaces.Box(np.zeros(2 + 3 * n, np.float32), high, dtype=np.float32)
        coordinator_obs = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (1 + 3 * n,), np.float32),
                "action_mask": spaces.Box(0, 1, (n,), np.int8),
                "idle": idle,
                "question": spaces.Text(QUESTION_CHARS, min_length=0, charset=CHARSET),
                "transcript": spaces.Text(n * (REPLY_CHARS + 40), min_length=0, charset=CHARSET),
                "replies": spaces.Tuple([spaces.Text(REPLY_CHARS, min_length=0, charset=CHARSET)] * n),
                "answers": spaces.Text(n * ANSWER_CHARS, min_length=0, charset=CHARSET),
            }
        )
        executor_space = spaces.Dict(executor_obs)
        self._observation_spaces = {a: executor_space for a in self.config.executors}
        self._observation_spaces[COORDINATOR] = coordinator_obs
        self._action_spaces: dict[str, spaces.Space[Any]] = {a: executor_act for a in self.config.executors}
        self._action_spaces[COORDINATOR] = spaces.Discrete(n)

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._observation_spaces[checked_agent(agent, self.possible_agents)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._action_spaces[checked_agent(agent, self.possible_agents)]

    # -- episodes ----------------------------------------------------------------
    def _question(self, seed: int, episode: int) -> Question:
        if self.questions is None:
            return generated_question(seed, episode, self.config.difficulty)
        order = self._orders.get(seed)
        if order is None:  # each seed plays the file in its own order
            ss = np.random.SeedSequence(seed, spawn_key=(7, 1))
            order = self._orders[seed] = np.random.default_rng(ss).permutation(len(self.questions))
            if len(self._orders) > 64:
                self._orders = {seed: order}
        return self.questions[int(order[episode % len(order)])]

    def reset(self, seed: int | None = None, options: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
        seed = checked_seed(seed)  # (every argument is checked before anything changes)
        episode = checked_episode(checked_options(options, RESET_OPTIONS, config=BeliefCoordinationConfig))
        if seed is not None:
            self._seed, self._episode = seed, 0
        elif self._seed is None:
            self._seed, self._episode = int(np.random.SeedSequence().generate_state(1)[0]), 0
        if episode is not None:
            self._episode = episode
        assert self._seed is not None
        self.episode = self._episode
        self.stream_seed = self._seed
        self._episode += 1
        self.question = self._question(self.stream_seed, self.episode)
        self.draws = answer_draws(self.stream_seed, self.episode)
        self.round = 0
        self.temperatures: list[list[float]] = []  # per round, per executor
        self.penalties: list[list[float]] = []
        self.replies: list[list[Answer]] = []
        self.committed: int | None = None
        self.terms: dict[str, float] = {}
        self.reward = 0.0
        self.agents = list(self.possible_agents)
        self._observations = {}
        self._question_text = ascii_text(self.question.text, QUESTION_CHARS)
        observations = {a: self.observe(a) for a in self.agents}
        return observations, {a: {} for a in self.agents}

    @property
    def answering(self) -> bool:
        return self.round < self.config.rounds

    # -- actions -----------------------------------------------------------------
    def executor_parameters(self, agent: str, action: Any) -> tuple[float, float]:
        """(T, p) of an executor's action, or a ValueError naming the agent and what was expected."""
        c = self.config
        if c.action_space == "grid":
            index = _index(action, c.grid_size)
            if index is None:
                raise ValueError(f"{agent}: action must be a grid index in [0, {c.grid_size}), got {action!r}")
            grid_t, grid_p = c.grid_point(index)
            return float(grid_t), float(grid_p)
        try:
            raw = np.asarray(action) if isinstance(action, (np.ndarray, list, tuple)) else np.array([])
        except ValueError:  # (a ragged list: no array at all)
            raw = np.array([])
        real = raw.dtype.kind in "iuf"  # (not bool, complex, text or objects)
        values = raw.astype(float) if real else np.array([])
        if values.shape != (2,) or not np.isfinite(values).all() or not ((values >= 0) & (values <= 1)).all():
            raise ValueError(
                f"{agent}: action must be two numbers in [0, 1] (where T and p lie in their ranges), got {action!r}"
            )
        t = c.temperature_min + float(values[0]) * (c.temperature_max - c.temperature_min)
        p = c.penalty_min + float(values[1]) * (c.penalty_max - c.penalty_min)
        return min(t, c.temperature_max), min(p, c.penalty_max)

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse an acting agent's action that is not in its space (idle agents' actions are ignored)."""
        if not self.agents:
            raise ValueError("the episode is over; call reset()")
        if agent not in self.possible_agents:
            raise ValueError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        if self._idle(agent):
            return
        if agent == COORDINATOR:
            n = self.config.n_executors
            if _index(action, n) is None:
                raise ValueError(f"{agent}: action must be an executor's index in [0, {n}), got {action!r}")
        else:
            self.executor_parameters(agent, action)

    def _idle(self, agent: str) -> bool:
        return (agent == COORDINATOR) == self.answering

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise ValueError("the episode is over (or not started); call reset()")
        acting = [a for a in self.agents if not self._idle(a)]
        checked_actions(actions, self.agents, acting)  # (a dict, of this game's agents, with every acting one's)
        for agent in acting:
            self.check_action(agent, actions[agent])
        if self.answering:
            self._answer_round({a: actions[a] for a in acting})
            rewards = dict.fromkeys(self.agents, 0.0)
            done = False
        else:
            self._commit(int(_index(actions[COORDINATOR], self.config.n_executors)))  # type: ignore[arg-type]
            rewards = dict.fromkeys(self.agents, float(self.reward))
            done = True
        agents = list(self.agents)
        self._observations = {}
        observations = {a: self.observe(a) for a in agents}
        terminations = dict.fromkeys(agents, done)
        truncations = dict.fromkeys(agents, False)
        infos: dict[str, dict[str, Any]] = {a: {} for a in agents}
        if done:
            self.agents = []
            self._observations = {}  # (after the end every agent is idle)
        if self.render_mode == "human":
            print(self.render())
        return observations, rewards, terminations, truncations, infos

    def _answer_round(self, actions: Mapping[str, Any]) -> None:
        r, q = self.round, self.question
        params = [self.executor_parameters(a, actions[a]) for a in self.config.executors]
        previous = self.replies[-1] if self.replies else None
        requests = round_requests(q, params, previous, self.draws, self.stream_seed, self.episode, r)
        answers = list(self.answerer.answer(requests))
        if len(answers) != len(requests):
            raise RuntimeError(f"the answerer gave {len(answers)} answers to {len(requests)} requests")
        self.temperatures.append([t for t, _ in params])
        self.penalties.append([p for _, p in params])
        self.replies.append(answers)
        self.round += 1

    def _commit(self, executor: int) -> None:
        self.committed = executor
        values = self.values()[None, :]
        terms = rules.reward_terms(values, np.array([executor]), np.array([self.question.answer]))
        self.terms = {k: float(v[0]) for k, v in terms.items()}
        self.reward = float(rules.reward({k: v for k, v in terms.items()}, self.config.weights)[0])
        self.round += 1

    # -- what agents see ---------------------------------------------------------
    def values(self) -> np.ndarray:
        """The executors' final numbers so far (NaN: none yet, or no number)."""
        if not self.replies:
            return np.full(self.config.n_executors, np.nan)
        return np.array([math.nan if a.value is None else float(a.value) for a in self.replies[-1]])

    def observe(self, agent: str) -> dict[str, Any]:
        """``agent``'s observation: built once per step and shared (read-only: copy one before changing it)."""
        if not (isinstance(agent, str) and agent in self._observation_spaces):  # (the cache has other keys too)
            checked_agent(agent, self.possible_agents)
        cached = self._observations.get(agent)
        if cached is None:
            if not hasattr(self, "question"):
                raise before_reset("observe()")
            cached = self._observations[agent] = self._observe(agent)
        return cached

    def _observe(self, agent: str) -> dict[str, Any]:
        c, n = self.config, self.config.n_executors
        idle = int(self._idle(agent)) if self.agents else 1
        values, support = self._support()
        if agent == COORDINATOR:
            t_last = np.array(self.temperatures[-1]) if self.temperatures else np.full(n, c.temperature_min)
            span = max(c.temperature_max - c.temperature_min, 1e-12)
            features = np.empty(1 + 3 * n, np.float32)
            features[0] = self.question.difficulty
            features[1::3] = support / n
            features[2::3] = ~np.isnan(values)
            features[3::3] = np.clip((t_last - c.temperature_min) / span, 0, 1)
            mask = np.zeros(n, np.int8)
            if idle:
                mask[0] = 1
            else:  # any commitment is legal (one to no number scores 0); who gave a number is in the features
                mask[:] = 1
            return {
                "observation": features,
                "action_mask": mask,
                "idle": idle,
                "question": self._question_text,
                "transcript": self.transcript(),
                "replies": self._replies(),
                "answers": self.answers_text(),
            }
        obs: dict[str, Any] = {"observation": self._executor_features()[c.executors.index(agent)], "idle": idle}
        if c.action_space == "grid":
            mask = np.zeros(c.grid_size, np.int8)
            if idle:
                mask[0] = 1
            else:
                mask[:] = 1
            obs["action_mask"] = mask
            obs["grid"] = self._grid
        else:
            obs["ranges"] = self._ranges
        return obs

    def _executor_features(self) -> np.ndarray:
        """Every executor's observation vector this step (N, 5): built once, shared by their observations."""
        cached = self._observations.get(" features")  # (a key no agent has: cleared with the observations)
        if cached is None:
            values = self.values()[None, :] if self.replies else None
            c = self.config
            features = rules.executor_features(
                np.array([self.question.difficulty]), c.n_executors, c.rounds, self.round, values
            )[0]
            cached = self._observations[" features"] = {"features": features}
        return cached["features"]  # type: ignore[no-any-return]

    def _support(self) -> tuple[np.ndarray, np.ndarray]:
        cached = self._observations.get("")  # (under a key no agent has: cleared with the observations)
        if cached is None:
            values = self.values()
            cached = self._observations[""] = {"values": values, "support": rules.support(values[None, :])[0]}
        return cached["values"], cached["support"]

    def _replies(self) -> tuple[str, ...]:
        """Each executor's last reply as the coordinator sees it: its last 600 characters, in the charset."""
        if not self.replies:
            return ("",) * self.config.n_executors
        out = []
        for a in self.replies[-1]:
            body = "(no reply: the answerer failed)" if a.failed else a.text
            if len(body) > REPLY_CHARS:  # keep the end: a reply's final answer is its last line
                body = "[...] " + body[-(REPLY_CHARS - 6) :]
            out.append(ascii_text(body, REPLY_CHARS))
        return tuple(out)

    def answers_text(self) -> str:
        """The number each executor's last reply commits to, as the environment scores it: lines ``i: N``
        (``i: none`` for no number), N exact (``repr``). What a coordinator should map a commitment with,
        rather than reading numbers out of the replies, which an executor writes."""
        if not self.replies:
            return ""
        return "".join(
            f"{i}: {'none' if a.value is None else show_number(a.value)}\n" for i, a in enumerate(self.replies[-1])
        )

    def transcript(self) -> str:
        """The executors' last replies as one text, a header line before each."""
        if not self.replies:
            return ""
        blocks = []
        for i, body in enumerate(self._replies()):
            t, p = self.temperatures[-1][i], self.penalties[-1][i]
            blocks.append(f"[executor {i}] T={t:.2f} p={p:.2f}\n{body}\n")
        return "".join(blocks)

    def state(self) -> np.ndarray:
        """The global state, in ``state_space``: the coordinator's features and the round (after the end: zeros
        and the round)."""
        if not hasattr(self, "question"):
            raise before_reset("state()")
        features = (
            self.observe(COORDINATOR)["observation"] if self.agents else np.zeros(1 + 3 * self.config.n_executors)
        )
        return np.concatenate([np.asarray(features, np.float32), np.array([self.round], np.float32)])

    def render(self) -> str | np.ndarray | None:
        """The question, every executor's settings and answer, and the commitment: as text (``"ansi"``), printed
        (``"human"``, returning None) or as a picture (``"rgb_array"``: :mod:`eq_env.core.render`; a frame's
        height grows with the executors and rounds of the configuration, never within it)."""
        if self.render_mode is None:
            return None
        return rendered(self._render_text(), self.render_mode, *self.frame_grid)

    @property
    def frame_grid(self) -> tuple[int, int]:
        """An ``"rgb_array"`` frame's characters (rows, columns): a row per executor and round, and room for the
        question's wrapped text."""
        return 8 + self.config.rounds * self.config.n_executors, 120

    def _render_text(self) -> str:
        q = getattr(self, "question", None)
        if q is None:
            return "belief coordination: call reset()"
        lines = [f"question {q.qid} (difficulty {q.difficulty:.2f}, answer {q.answer:g}): {q.text}"]
        for r, replies in enumerate(self.replies):
            for i, a in enumerate(replies):
                shown = "no number" if a.value is None else f"{a.value:g}"
                lines.append(
                    f"  round {r + 1} executor {i}: T={self.temperatures[r][i]:.2f} "
                    f"p={self.penalties[r][i]:.2f} -> {shown} ({a.completion_tokens} tokens)"
                )
        if self.committed is not None:
            t = self.terms
            lines.append(
                f"  committed executor {self.committed}: TS={t['ts']:.0f} AL={t['al']:.2f} "
                f"CC={t['cc']:.2f} reward {self.reward:.3f}"
            )
        return "\n".join(lines)

    def close(self) -> None:
        pass


def _index(action: Any, n: int) -> int | None:
    """``action`` as an index in [0, n) — an int, a numpy integer or a 0-d integer array, as a Discrete space
    takes them — or None."""
    if isinstance(action, np.ndarray) and action.ndim == 0 and action.dtype.kind in "iu":
        action = action.item()
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) or not 0 <= action < n:
        return None
    return int(action)


class raw_env(parallel_to_aec_wrapper):  # type: ignore[misc]  # noqa: N801 - PettingZoo's name
    """The AEC environment: PettingZoo's standard conversion of the parallel one, which also refuses an action
    outside the acting agent's space when it is given (the conversion alone would only find out at the end of
    the step), and exposes ``config``."""

    def __init__(
        self,
        config: BeliefCoordinationConfig | None = None,
        preset: str | None = None,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(BeliefCoordinationParallelEnv(config, preset, render_mode, **kwargs))

    @property
    def config(self) -> BeliefCoordinationConfig:
        return self.env.config  # type: ignore[no-any-return]

    def step(self, action: Any) -> None:
        if not hasattr(self, "agent_selection") or (not self.env.agents and not self.agents):
            raise ValueError("the episode is over (or not started); call reset()")
        agent = self.agent_selection
        if not (self.terminations.get(agent) or self.truncations.get(agent)):
            self.env.check_action(agent, action)
        elif action is not None:  # (the conversion would fail on a bare assertion)
            raise ValueError(f"{agent} is done (terminated or truncated): its only action is None, got {action!r}")
        super().step(action)

    def observe(self, agent: str) -> Any:
        agent = checked_agent(agent, self.possible_agents)
        if not hasattr(self, "_observations"):
            raise before_reset("observe()")
        return super().observe(agent)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not hasattr(self, "agent_selection"):
            raise before_reset("last()")
        if not self.agents:  # (every agent has stepped out: the conversion's last would fail on a KeyError)
            raise RuntimeError("the episode is over (every agent is done); call reset() to start the next one")
        return super().last(observe)  # type: ignore[no-any-return]
