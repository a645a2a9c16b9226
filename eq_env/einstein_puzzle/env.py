"""
# The collaborative Einstein puzzle

| Import               | `from eq_env import einstein_puzzle_v0`                                    |
|----------------------|----------------------------------------------------------------------------|
| Registered ids       | `"eq_env/einstein-puzzle-v0"` (`pettingzoo.make("aec"` or `"parallel", …)`) |
| Actions              | Discrete(48·n + 1): moves, shares, asks, answers, pass                     |
| Parallel API         | Yes (turn-taking: each step plays the action of the agent whose turn it is) |
| Manual control       | No                                                                         |
| Agents               | `agents = ['player_0', 'player_1']`                                        |
| Number of agents     | 2                                                                          |
| Action mask          | the acting agent's legal actions, under `"action_mask"` (only `pass` for the other) |
| Observation          | Dict: `"observation"` Box(0, 1, float32), `"action_mask"` Box(0, 1, int8), `"text"` Text |

Two players sort n objects (4–8 in the paper; up to 16 here) into the four
goal bins of a 2×2 grid. Neither can see the whole solution: the constraints
that fix each object's goal bin are split between them, and each reaches only
its own row. They must talk (share constraints, ask for goal bins) and hand
objects across through a common bin. The game is that of Peng et al.,
"Communication and Verification in LLM Agents towards Collaboration under
Information Asymmetry" (arXiv 2510.25595); the rules are in
`eq_env.einstein_puzzle.rules`, the spaces in `eq_env.einstein_puzzle.spaces`,
the paper's text observation in `eq_env.einstein_puzzle.text`.

```python
from eq_env import einstein_puzzle_v0

env = einstein_puzzle_v0.env(n=5, comm_mode="provide_and_seek", render_mode="ansi")
env.reset(seed=0)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        action = env.action_space(agent).sample(observation["action_mask"])
    env.step(action)
print(env.render())
print(observation["text"])   # what an LLM player is told
```

## The board

Four goal bins on a 2×2 grid — `top_left`, `top_right`, `bottom_left`,
`bottom_right` (diagonals: top_left–bottom_right and top_right–bottom_left) —
a start bin per player and one `common` bin. `player_0` sits at the bottom and
reaches `bottom_left`, `bottom_right`, `bottom_start` and `common`;
`player_1` sits at the top and reaches `top_left`, `top_right`, `top_start`
and `common`. The common bin is the only way across. Every object starts in a
start bin (an even split; odd n: one player has one more), has one goal bin,
and all four goal bins are used. The game is won when every object is in its
goal bin. Only an object's goal bin or the common bin takes it: any other
placement is **rejected** (the board is unchanged; the turn is spent). Both
players see the whole board.

## Constraints and their split

A puzzle has n constraints: one grounding ("object a goes in bin b",
constraint 0) and n − 1 relations forming a tree over the objects ("a and b go
in the same bin / the same row, different columns / the same column,
different rows / diagonal bins"), so the goal is unique. The grounding goes
to both players; each relation goes to `player_0` only, `player_1` only or
both, all three kinds present. A player infers goal bins from what it holds,
what it was told and the public placements and rejections (the relations
compose by XOR: row∘column = diagonal, …; `rules.Knowledge`).

Puzzles: `puzzles="generated"` (default) draws episode i of seed s with
`generator.generate(n, generator.puzzle_rng(s, i), private_share=…,
max_depth=…)`; `puzzles="suite"` plays the frozen test suite's puzzle
`i mod 300` of n objects (`suite.load_suite(n)`; the seed is ignored), or with `suite_stride=k` puzzle
`(s·k + i) mod 300` of seed s (seeds then play disjoint slices of the suite when k ≥ the episodes per seed).

## Turns and communication modes

The players strictly alternate, `player_0` first; every turn costs one step,
whatever the action. `comm_mode`:

| mode               | moves | shares | asks | answers |
|--------------------|-------|--------|------|---------|
| `provide_and_seek` | yes   | yes    | yes  | yes     |
| `provide_only`     | yes   | yes    | no   | no      |
| `seek_only`        | yes   | only right after the partner's ask, of a constraint about the object asked | yes | yes |
| `none`             | yes   | no     | no   | no      |

Pass is always allowed. A share must be of one's own constraint, not shared
before; an ask must be about an object not in a goal bin; an answer comes on
the turn right after the partner's ask about that object and gives the goal
bin the answerer can infer (so answers are always true).

## Actions

`Discrete(48·n + 1)`, the same object every call; `spaces.actions(n)[a]`
decodes index `a` (`spaces.action_index(action, n)` encodes):

| indices           | action (text form)                         |
|-------------------|--------------------------------------------|
| `0 … 42n − 1`     | `move O from A to B` (object, from-bin, to-bin ≠ from-bin) |
| `42n … 43n − 1`   | `share K` (constraint K)                   |
| `43n … 44n − 1`   | `ask O`                                    |
| `44n … 48n − 1`   | `answer O BIN`                             |
| `48n`             | `pass`                                     |

The action mask marks the legal actions of the agent to act: moves between
two bins it reaches of an object in the from-bin, and the shares, asks and
answers its mode allows now (`State.check`). A legal move into a wrong goal
bin is legal — the mask does not reveal goals — and is rejected when played.

An index **outside** the space (or anything that is not an integer) raises a
`ValueError` naming the agent and the space; nothing is played. An index in
the space that is **not legal** (mask 0) is played as a failed turn, as in
the paper's environment: the board is unchanged, the turn is spent,
`illegal_penalty` is charged, and the history marks it with its reason. LLM
players make such moves; the text observation shows them what went wrong.
After each of its steps, `infos[agent]["last_action"]` holds `{"action":
text, "outcome": "accepted" | "rejected" | "illegal", "reason": why it
failed or ""}` (it stays until the agent acts again).

## Observation

A Dict of three entries, built for the agent asked:

* `"observation"`: the numeric view, a `Box(0, 1, (spaces.layout(n).size,),
  float32)` of blocks — side, progress, the comm mode, the board (one-hot bin
  per object), the goal bins still possible for each object given what the
  agent knows (the closure of `rules.Knowledge`),
  the constraints (flags; contents only for those it knows), the object the
  partner just asked about, the last four turns (see
  `eq_env.einstein_puzzle.spaces` for the layout);
* `"action_mask"`: `int8`, 1 = legal; the acting agent's legal actions; for
  the agent not to act, and for both once the game is over, only `pass` (an
  agent with nothing to decide has exactly one legal no-op, in every game of
  eq_env: samplers that batch masks, TorchRL's, fail on a mask of zeros);
  what the waiting agent sends is ignored;
* `"text"`: the paper's text observation (`text.describe(state, player)`):
  the side and reachable bins, the mode and the actions it allows in the
  action grammar (`move 3 from common to top_left`, `share 2`, `ask 5`,
  `answer 5 bottom_right`, `pass`), turn k of the limit, the explicit
  knowledge (groundings, then relations, each numbered; "(shared by your
  partner)" on received ones), the answers received, the whole board and the
  full action history with failed actions marked and their reason. Its space
  is a `Text` of every character it can hold (`text.CHARSET`), at most
  `text.max_text_length(n, step_limit)` long.

Observations are read-only arrays, built once per turn and shared: copy one
before changing it. The game itself is `env.unwrapped.game` (a
`rules.State`: location, knowledge, history…), for scripted policies and
records. `state()` is a numeric global state: each object's bin (one-hot),
each object's goal bin (one-hot), the progress and the player to act.

## Rewards

One team reward, the same for both agents on every step:

| event                              | reward                  |
|------------------------------------|-------------------------|
| the last object reaches its goal   | `+success_reward` (1.0) |
| a rejected placement               | `−rejection_penalty` (0.1, the paper's code) |
| an illegal action                  | `−illegal_penalty` (0.0) |
| a pass                             | `−pass_penalty` (0.0)   |

Nothing else is rewarded unless `shaping` is set (default 0: no shaping).

**Shaping** (`shaping = w > 0`, for learners; Ng, Harada & Russell 1999): every
step also pays `Φ(s′) − Φ(s)`, a potential on what the team has established,

    Φ(s) = w · (placed + placeable) / (2n),

`placed` the objects in their goal bins, `placeable` those whose goal the
player of the goal's row (the only one who can put it there) can infer; the
potential of the end of the episode (success or the step limit) is 0. The game
is undiscounted, so the shaping of an episode adds up to `−Φ(s₀)` whatever is
played: every policy's return changes by the same constant, and the optimal
policies are those of the unshaped game. What changes is the signal along the
way: a share that lets the partner infer a goal, or a correct placement, pays
at once, and the end takes it back.

**Strict mask** (`strict_mask=True`): the action mask also leaves out the
moves that can only fail or undo progress — into a start bin (always
rejected), out of a goal bin (only correct placements are accepted, so the
object is where it belongs) and into a goal bin the player knows is not the
object's. The rules are unchanged: such a move, played anyway, is played as
the rules say.

## Termination and truncation

The episode terminates when every object is in its goal bin (a win on the
last allowed step is a win) and is truncated after `step_limit` turns without
it (`max_steps`; auto: 30 turns, the paper's human study, 40 for 8 objects,
5n beyond). Either way both agents end together, and each then takes its
`step(None)` as usual in PettingZoo. At the end `infos[agent]` holds
`{"success": …, "turns": …, "placed": …}` (objects in their goal bins) for
both agents. Infos are deterministic (no times).

## Arguments and seeds

`einstein_puzzle_v0.env(config=None, *, preset=None, render_mode=None,
observation_mode="text", **overrides)`: `observation_mode="numeric"` gives the
numeric observation mode (see the version history; `eq_env.core.numeric`).
`config` is an `EinsteinPuzzleConfig`; otherwise the preset
(default `"paper"`; `"paper_test"`: the suite; `"eight"`: 8 objects) with
`overrides` (any of its fields: `n`, `comm_mode`, `max_steps`, `puzzles`,
`private_share`, `max_depth`, `rejection_penalty`, `illegal_penalty`,
`pass_penalty`, `success_reward`, `shaping`, `strict_mask`). Invalid values raise `ValueError`.
`render_mode`: `"ansi"` (`render()` returns a drawing of the board and the
last event), `"human"` (prints it) or `"rgb_array"` (that drawing as a picture,
one shape for every frame: `eq_env.core.render`). An unknown keyword is a
`TypeError`.

`reset(seed=s)` starts episode 0 of seed `s`; each later `reset()` the next
episode; `reset(seed=s, options={"episode": i})` jumps to episode `i`
(`"episode"` is the only option). A first `reset()` without a seed draws one
from the operating system. Episode i of seed s is the same puzzle under every
mode, step limit and reward, so conditions compare on the same puzzles.

## The original code's bugs, fixed

The research code's game loop had bugs; this environment does what the
paper says (each has a test):

* a win on exactly the last step counted as a loss — here it is a win;
* every pass was penalised — here a pass costs `pass_penalty`, 0 by default;
* a lucky correct guess (no-communication mode) was marked as failed — here
  it is accepted and counts;
* the communication verifier accepted every ask — here an ask about an
  object already in a goal bin is illegal;
* the reasoning verifier rejected answers in seek-only mode — here answers
  are legal there (`eq_env.einstein_puzzle.verifiers`).

## Version history

* v0: first version (eq_env 0.1.0).
* v0: the mask of the player not to act (and of both after the end) allows `pass` only, not
  nothing; play is unchanged (that player's action was and is ignored).
* v0: the numeric observation mode, `observation_mode="numeric"`: `Dict(observation, action_mask
  int8)` and `Discrete(48·n + 1)`, the player not to act (or both, once the game is over) allowed only `pass`,
  numeric infos of fixed keys (`eq_env.einstein_puzzle.numeric`); text mode is unchanged.
* v0: `suite_stride` (default 0: unchanged), so that seeds can play disjoint slices of the frozen
  suite (`eq-env bench`).
* v0, unchanged results: `render_mode="rgb_array"` (the board as a picture, one shape for every
  frame); an unknown keyword is a `TypeError` (also a `ValueError`, as before).
* v0: `shaping` (potential-based reward shaping) and `strict_mask` (a mask without the moves that can only
  fail or undo progress), both off by default (unchanged, and left out of a configuration's keys when off), for
  self-play learners (`eq-env train --env einstein-puzzle --partner self`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from eq_env.core.api import checked_actions, checked_agent, checked_episode, checked_options, checked_seed
from eq_env.core.render import RENDER_MODES, rendered
from eq_env.einstein_puzzle import spaces as codec
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.generator import generate, puzzle_rng
from eq_env.einstein_puzzle.rules import (
    GOAL_BINS,
    ILLEGAL,
    N_BINS,
    REJECTED,
    Move,
    Pass,
    Puzzle,
    State,
    goal_row_player,
    new_game,
)
from eq_env.einstein_puzzle.text import CHARSET, Describer, event_line, max_text_length, render_board

__all__ = [
    "PLAYERS",
    "ROLES",
    "SEED_STREAMS",
    "EinsteinPuzzleParallelEnv",
    "episode_puzzle",
    "raw_env",
    "resolve_config",
]

PLAYERS = ("player_0", "player_1")  # player_0 sits at the bottom and moves first
ROLES = {agent: (agent,) for agent in PLAYERS}  # role -> its agents: each role is one player
SEED_STREAMS = {"player_0": 50, "player_1": 51}  # role -> the stream its policy's seed is drawn on
_INDEX = {agent: i for i, agent in enumerate(PLAYERS)}
_PLAIN_INTS = (int, np.int64)  # (what policies and Discrete.sample give)
FRAME_GRID = (28, 120)  # an "rgb_array" frame's characters (rows, columns): the board and its lines, wrapped
RESET_OPTIONS = ("episode",)
METADATA: dict[str, Any] = {
    "name": "einstein_puzzle_v0",
    "render_modes": list(RENDER_MODES),
    "is_parallelizable": False,  # turn-taking: use parallel_env()
    "render_fps": 1,
}


def resolve_config(
    config: EinsteinPuzzleConfig | None, preset: str | None, overrides: dict[str, Any]
) -> EinsteinPuzzleConfig:
    """The configuration an environment plays (:meth:`~eq_env.core.config.GameConfig.resolve`)."""
    return EinsteinPuzzleConfig.resolve(config, preset, overrides)


def episode_puzzle(config: EinsteinPuzzleConfig, seed: int, episode: int) -> Puzzle:
    """The puzzle of episode ``episode`` of seed ``seed`` under ``config`` (the suite's: puzzle
    ``(seed·suite_stride + episode) mod 300``, so the seed matters only with a stride)."""
    if config.puzzles == "suite":
        from eq_env.einstein_puzzle import suite  # (the frozen test suite: loaded only when asked for)

        puzzles = suite.load_suite(config.n)
        return puzzles[(seed * config.suite_stride + episode) % len(puzzles)]  # type: ignore[no-any-return]
    return generate(config.n, puzzle_rng(seed, episode), private_share=config.private_share, max_depth=config.max_depth)


def _checked_episode(options: Any) -> int | None:
    """The ``"episode"`` option, if given; options that are not a dict, and unknown options, are refused
    rather than ignored."""
    return checked_episode(checked_options(options, RESET_OPTIONS, config=EinsteinPuzzleConfig))


@lru_cache(maxsize=32)
def _action_texts(n: int) -> tuple[str, ...]:
    return tuple(a.text() for a in codec.actions(n))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """The collaborative Einstein puzzle as a PettingZoo AEC environment (see the module docstring)."""

    metadata = METADATA

    def __init__(
        self,
        config: EinsteinPuzzleConfig | None = None,
        *,
        preset: str | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.config = resolve_config(config, preset, overrides)
        self.render_mode = render_mode
        n = self.config.n
        self.n_actions = codec.n_actions(n)
        self._actions = codec.actions(n)
        self._texts = _action_texts(n)
        size = codec.layout(n).size
        text_length = max_text_length(n, self.config.step_limit)
        self.possible_agents = list(PLAYERS)
        self.agents: list[str] = []
        self.action_spaces = {a: spaces.Discrete(self.n_actions) for a in PLAYERS}
        self.observation_spaces = {a: self._observation_space(size, text_length) for a in PLAYERS}
        self.state_space = spaces.Box(0.0, 1.0, ((N_BINS + 4) * n + 2,), np.float32)
        # the player not to act (both, once the game is over) has one legal action, pass: the convention of every
        # game here (an agent with nothing to decide has exactly one legal no-op), which batching samplers need
        only_pass = np.zeros(self.n_actions, np.int8)
        only_pass[-1] = 1
        self._no_moves = _read_only(only_pass)
        self.game: State | None = None  # the game in play (rules.State), for policies and records
        self.episode_seed: int | None = None  # the seed whose stream is played
        self.episode_index = -1  # the index of the episode in play in that stream
        self._describer: Describer | None = None
        self._encoder: codec.ObservationEncoder | None = None
        self._observations: list[tuple[int, dict[str, Any]] | None] = [None, None]
        self._end_info: dict[str, Any] = {}
        self._over = False
        self._potential = 0.0  # the shaping potential of the game now (0 without shaping)

    # -- spaces ---------------------------------------------------------------------------------------
    def _observation_space(self, size: int, text_length: int) -> spaces.Dict:
        return spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (size,), np.float32),
                "action_mask": spaces.Box(0, 1, (self.n_actions,), np.int8),
                "text": spaces.Text(text_length, min_length=1, charset=CHARSET),
            }
        )

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[checked_agent(agent, PLAYERS)]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[checked_agent(agent, PLAYERS)]

    # -- episodes -------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        seed = checked_seed(seed)
        index = _checked_episode(options)
        if seed is not None:
            self.episode_seed, self.episode_index = seed, -1
        elif self.episode_seed is None:  # unseeded: a seed from the operating system, then its stream
            self.episode_seed = int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
        self.episode_index = self.episode_index + 1 if index is None else index
        puzzle = episode_puzzle(self.config, self.episode_seed, self.episode_index)
        self.game = new_game(puzzle, self.config.comm_mode, self.config.step_limit)
        self._describer = Describer(self.game)
        self._encoder = codec.ObservationEncoder(self.game)
        self._observations = [None, None]
        self._end_info = {}
        self._over = False
        self._potential = self._potential_now()
        self.agents = list(PLAYERS)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self.agent_selection = PLAYERS[0]
        self._skip_agent_selection = None

    def _game(self, what: str) -> State:
        if self.game is None:
            raise RuntimeError(f"{what} before reset(): call env.reset(seed=...) first")
        return self.game

    # -- observations ---------------------------------------------------------------------------------
    def observe(self, agent: str) -> dict[str, Any]:
        player = _INDEX[checked_agent(agent, PLAYERS)]
        game = self.game
        if game is None:
            raise RuntimeError("observe() before reset(): call env.reset(seed=...) first")
        cached = self._observations[player]
        if cached is None or cached[0] != game.turn:
            cached = (game.turn, self._observation(game, player))
            self._observations[player] = cached
        return dict(cached[1])

    def _observation(self, game: State, player: int) -> dict[str, Any]:
        encoder = self._encoder
        assert self._describer is not None and encoder is not None
        acting = game.current == player and not self._over
        mask = encoder.action_mask(self.config.strict_mask) if acting else self._no_moves
        return {
            "observation": encoder(player),  # (read-only: made from bytes)
            "action_mask": mask,
            "text": self._describer(player),
        }

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self.agents:  # before reset, or every agent has stepped out: AECEnv.last would fail on a KeyError
            self._game("last()")
            raise RuntimeError("the episode is over (every agent is done); call reset() to start the next one")
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def state(self) -> np.ndarray:
        """The global state: each object's bin (one-hot, 7 per object), its goal bin (one-hot, 4 per object),
        turns played / step limit, and the player to act (0 or 1)."""
        game = self._game("state()")
        n = game.puzzle.n
        out = np.zeros(self.state_space.shape, np.float32)
        out[np.arange(n) * N_BINS + np.asarray(game.location)] = 1.0
        out[N_BINS * n + np.arange(n) * 4 + np.asarray(game.puzzle.goal)] = 1.0
        out[-2] = min(game.turn / game.max_steps, 1.0)
        out[-1] = game.current
        return out

    # -- a turn ---------------------------------------------------------------------------------------
    def _index(self, action: Any, agent: str) -> int:
        """``action`` as an index of the action space, or a ValueError naming the agent and the space."""
        if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
            index = int(action)
        elif isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
            index = int(action)
        else:
            index = -1
        if not 0 <= index < self.n_actions:
            raise ValueError(
                f"{agent}: action {action!r} is not in its action space Discrete({self.n_actions}) "
                f"(an index 0-{self.n_actions - 1}: see eq_env.einstein_puzzle.spaces)"
            )
        return index

    def step(self, action: Any) -> None:
        game = self.game
        if game is None or not self.agents:  # (the order-enforcing wrapper warns instead, and never gets here)
            self._game("step()")
            raise RuntimeError("step() after the episode ended; call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) in _PLAIN_INTS and 0 <= action < self.n_actions:  # (the usual case, checked inline)
            index = int(action)
        else:
            index = self._index(action, agent)
        move = self._actions[index]
        self._cumulative_rewards[agent] = 0.0
        event = game.play(move)
        config, outcome, won = self.config, event.outcome, False
        if outcome == REJECTED:
            reward = 0.0 - config.rejection_penalty
        elif outcome == ILLEGAL:
            reward = 0.0 - config.illegal_penalty
        elif type(move) is Pass:
            reward = 0.0 - config.pass_penalty
        else:
            won = type(move) is Move and move.dst in GOAL_BINS and game.success  # (only a placement can win)
            reward = config.success_reward if won else 0.0
        if config.shaping:
            potential = 0.0 if won or game.turn >= game.max_steps else self._potential_now()
            reward += potential - self._potential
            self._potential = potential
        self.rewards = dict.fromkeys(self.agents, reward)
        self.infos[agent] = {"last_action": {"action": self._texts[index], "outcome": outcome, "reason": event.reason}}
        if won or game.turn >= game.max_steps:
            self._over = True
            self._end_info = {"success": won, "turns": game.turn, "placed": game.placed_count()}
            for a in self.agents:
                self.infos[a] = {**self.infos[a], **self._end_info}
                self.terminations[a] = won
                self.truncations[a] = not won
        self.agent_selection = PLAYERS[game.current]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _potential_now(self) -> float:
        """The shaping potential Φ of the game now (see Rewards; 0 without shaping)."""
        w = self.config.shaping
        game, encoder = self.game, self._encoder
        if not w or game is None or encoder is None:
            return 0.0
        goal, location = game.puzzle.goal, game.location
        known = (encoder.possible(0), encoder.possible(1))
        placed = sum(loc == g for loc, g in zip(location, goal, strict=True))
        placeable = sum(known[goal_row_player(g)][obj] == 1 << g for obj, g in enumerate(goal))
        return w * (placed + placeable) / (2 * len(goal))

    # -- rendering ------------------------------------------------------------------------------------
    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn(f"render() called without a render_mode; pass one of {RENDER_MODES}")
            return None
        if self.game is None:
            text = "(no game yet: call reset())\n"
        else:
            history = self.game.history
            last = event_line(history[-1]).removeprefix("- ") if history else "no turn played yet"
            text = f"{render_board(self.game)}  last: {last}\n"
        return rendered(text, self.render_mode, *FRAME_GRID)

    def close(self) -> None:
        pass

    def __getstate__(self) -> dict[str, Any]:
        # cached observations are rebuilt after unpickling (read-only flags do not survive pickling); the
        # action tables are the process's shared ones (rebuilding 48n + 1 actions costs most of an unpickling)
        state = {**self.__dict__, "_observations": [None, None]}
        del state["_actions"], state["_texts"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._actions = codec.actions(self.config.n)
        self._texts = _action_texts(self.config.n)


class EinsteinPuzzleParallelEnv(ParallelEnv):
    """The collaborative Einstein puzzle under PettingZoo's parallel API (the same arguments as :class:`raw_env`).

    The game is turn-taking: each ``step(actions)`` plays the action of the agent whose turn it is
    (``actions``, a dict keyed by this game's agents, must hold it; an unknown agent's key is refused); the
    other agent's entry may be omitted or anything, and is ignored. Both
    agents receive the team reward; ``infos`` holds the acting agent's ``"last_action"`` and, at the end, both
    agents' ``success``, ``turns`` and ``placed``.
    """

    metadata = METADATA

    def __init__(
        self,
        config: EinsteinPuzzleConfig | None = None,
        *,
        preset: str | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self._aec = raw_env(config, preset=preset, render_mode=render_mode, **overrides)
        self.config = self._aec.config
        self.render_mode = render_mode
        self.possible_agents = list(PLAYERS)
        self.agents: list[str] = []
        self.observation_spaces = self._aec.observation_spaces
        self.action_spaces = self._aec.action_spaces
        self.state_space = self._aec.state_space

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._aec.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._aec.action_space(agent)

    @property
    def game(self) -> State | None:
        """The game in play (a ``rules.State``)."""
        return self._aec.game

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._aec.reset(seed, options)
        self.agents = list(PLAYERS)
        return {a: self._aec.observe(a) for a in PLAYERS}, {a: {} for a in PLAYERS}

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        if not self.agents:
            raise RuntimeError("step() outside an episode: call reset() first (and again after an episode ends)")
        acting = self._aec.agent_selection
        checked_actions(actions, self.agents, ())  # (a dict keyed by this game's agents)
        if acting not in actions:
            raise ValueError(f"it is {acting}'s turn: actions must include {acting!r}")
        aec = self._aec
        aec.step(actions[acting])
        rewards = dict(aec.rewards)
        terminations, truncations = dict(aec.terminations), dict(aec.truncations)
        infos: dict[str, dict[str, Any]] = {a: dict(aec._end_info) for a in PLAYERS}
        infos[acting] = dict(aec.infos[acting])
        observations = {a: aec.observe(a) for a in PLAYERS}
        if any(terminations.values()) or any(truncations.values()):
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def idle(self, agent: str) -> bool:
        """Whether ``agent`` has nothing to decide in this step: it is not its turn, or the game is over (its mask
        allows only ``pass``, and its action is ignored)."""
        agent = checked_agent(agent, PLAYERS)
        return not self.agents or agent != self._aec.agent_selection

    def state(self) -> np.ndarray:
        return self._aec.state()

    def render(self) -> str | np.ndarray | None:
        return self._aec.render()

    def close(self) -> None:
        self._aec.close()
