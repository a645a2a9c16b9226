"""Play the Einstein puzzle yourself: one seat in the terminal, a policy in the other.

For example `eq-env einstein play` (you are player_0, at the bottom, moving
first; the planner is player_1), `eq-env einstein play --human player_1
--partner oracle --seed 3` (the partner moves first), `eq-env einstein play
--n 5 --comm-mode seek_only --episodes 2`, or `eq-env einstein play --partner
llm --model gpt-4.1` (any registered partner spec, LLMs included).

After every turn the board is drawn with the last event. On your turn you are
shown your text observation (what an LLM player is told: your constraints,
what you were told, the board and the history), then your legal actions in
the action grammar (`move 3 from common to top_left`, `share 2`, `ask 5`,
`answer 5 bottom_right`, `pass`). Type one action and press Enter. A line
that is not an action of the grammar, or an action not legal now, is refused
with the reason in one line and you are asked again: no turn is spent. A
legal placement into a wrong goal bin is played and rejected, as in the game.
`help` prints the grammar again; `quit` (or end of input, Ctrl-D) ends the
session cleanly, exit status 0. At the end: success, steps and objects placed
per episode.

The partner is any policy spec of the game (`eq-env policies --env
einstein-puzzle` lists them; default planner): a plain policy (`act`), a
privileged one (`act_privileged(observation, env)`: the oracle, verified
policies) or a waiting one (`aact`, `aact_privileged`: LLM policies), asked
as the runner asks it, in one event loop, and reset with the seed the runner
would give its seat. The game parameters are the flags of `eq-env play`
(--preset, --n, --comm-mode, --max-steps, ...); episode i of seed s is the
runner's puzzle for that episode and seed.

`play_human` is the session without the command line: its input function and
output stream are arguments, so a script (or a test) can play.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.env import PLAYERS, SEED_STREAMS
from eq_env.einstein_puzzle.grammar import GRAMMAR, GrammarError, parse_action
from eq_env.einstein_puzzle.spaces import action_index, actions

__all__ = ["QUIT_WORDS", "EpisodeResult", "Session", "add_arguments", "legal_texts", "play_human", "run"]

QUIT_WORDS = ("quit", "exit")
HELP_WORDS = ("help", "?")
_SIDE = {"player_0": "bottom", "player_1": "top"}


@dataclass(frozen=True)
class EpisodeResult:
    """How one finished episode ended (the environment's end-of-episode infos)."""

    episode: int
    success: bool
    steps: int
    placed: int
    n: int


@dataclass
class Session:
    """What :func:`play_human` played: the finished episodes, and whether the person quit before the end."""

    results: list[EpisodeResult] = field(default_factory=list)
    quit: bool = False


class _QuitError(Exception):
    """The person typed ``quit`` or the input ended."""


def _other(agent: str) -> str:
    return PLAYERS[1 - PLAYERS.index(agent)]


def legal_texts(mask: Any, n: int) -> list[str]:
    """The text forms of the actions the action mask marks legal, in index order."""
    table = actions(n)
    return [table[i].text() for i in range(len(table)) if mask[i]]


def play_human(
    config: EinsteinPuzzleConfig,
    *,
    human: str = "player_0",
    partner: Any = "planner",
    seed: int = 0,
    episodes: int = 1,
    input_fn: Callable[[str], str] = input,
    out: TextIO | None = None,
    env: Any = None,
) -> Session:
    """Play ``episodes`` episodes of seed ``seed`` of ``config`` with a person in seat ``human``.

    ``partner`` is a policy spec (``"planner"``, ``"oracle"``, ``"llm:..."``) or a policy object for the other
    seat. ``input_fn(prompt)`` returns one line (``input`` by default; an ``EOFError`` ends the session like
    ``quit``); everything is written to ``out`` (default ``sys.stdout``). ``env`` is the AEC environment to
    play in (default: a new one of ``config`` with ``render_mode="ansi"``); it is reset to episode i of the
    seed for each episode. Returns the finished episodes and whether the person quit.
    """
    if human not in PLAYERS:
        raise ValueError(f"human must be one of {', '.join(PLAYERS)}, got {human!r}")
    from eq_env.core.policy import make_policy
    from eq_env.core.runner import policy_seed

    role = _other(human)
    try:
        policy = make_policy(partner, role, "einstein-puzzle")
    except ValueError as err:
        raise ValueError(f"argument --partner: {err}") from None
    policy.reset(seed=policy_seed(seed, SEED_STREAMS[role]))
    if env is None:
        from eq_env import einstein_puzzle_v0

        env = einstein_puzzle_v0.env(config=config, render_mode="ansi")
    stream = sys.stdout if out is None else out
    return asyncio.run(_Game(env, policy, human, input_fn, stream).run(seed, episodes))


class _Game:
    """The turn loop of a session (one event loop for every episode, so async partners keep their clients)."""

    def __init__(self, env: Any, policy: Any, human: str, input_fn: Callable[[str], str], out: TextIO) -> None:
        self.env = env
        self.policy = policy
        self.human = human
        self.input_fn = input_fn
        self.out = out

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    async def run(self, seed: int, episodes: int) -> Session:
        session = Session()
        check = getattr(self.policy, "check", None)
        if callable(check):
            result = check()
            if inspect.isawaitable(result):
                await result
        role = _other(self.human)
        self.say(f"You are {self.human} ({_SIDE[self.human]} row); your partner {role} is {self.policy!r}.")
        self.say("Type one action per turn; 'help' shows the grammar, 'quit' ends the game.")
        try:
            for episode in range(episodes):
                session.results.append(await self.episode(seed, episode, episodes))
        except _QuitError:
            session.quit = True
            self.say("Quit: the game ended here, unfinished.")
        self.summary(session, episodes)
        return session

    async def episode(self, seed: int, episode: int, episodes: int) -> EpisodeResult:
        env = self.env
        env.reset(seed=seed, options={"episode": episode})
        game = env.unwrapped.game
        n = game.puzzle.n
        self.say(
            f"\n=== episode {episode + 1} of {episodes} (seed {seed}): {n} objects, "
            f"{game.comm_mode}, at most {game.max_steps} turns ==="
        )
        self.say(self._render())
        end: dict[str, Any] = {}
        for agent in env.agent_iter():
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                end = end or dict(info)  # (both agents end together, with the same success, turns and placed)
                env.step(None)
                continue
            if agent == self.human:
                action = self.ask(observation, n)
            else:
                action = await self.partner(observation)
            env.step(action)
            self.say(self._render())
        result = EpisodeResult(episode, bool(end["success"]), int(end["turns"]), int(end["placed"]), n)
        verdict = "solved" if result.success else "not solved (step limit reached)"
        self.say(f"Episode {episode + 1}: {verdict}; steps {result.steps}; placed {result.placed}/{n}.")
        return result

    def _render(self) -> str:
        text = self.env.render()
        if not isinstance(text, str):  # (an environment made without render_mode="ansi")
            from eq_env.einstein_puzzle.text import render_board

            text = render_board(self.env.unwrapped.game)
        return "\n" + text.rstrip("\n")

    async def partner(self, observation: Any) -> int:
        """The partner policy's action: forced, privileged, waiting or plain, as the runner asks it."""
        from eq_env.core.runner import decide, forced_action

        forced = forced_action(observation)
        if forced is not None:
            return forced
        action, _ = await decide(self.policy, observation, self.env)
        return int(action)

    def ask(self, observation: Any, n: int) -> int:
        """The person's action: lines are read until one is a legal action (``help`` and refusals spend no turn)."""
        game = self.env.unwrapped.game
        mask = observation["action_mask"]
        player = PLAYERS.index(self.human)
        self.say("\n--- your observation ---")
        self.say(str(observation["text"]).rstrip("\n"))
        self.say("--- your legal actions ---")
        for text in legal_texts(mask, n):
            self.say(f"  {text}")
        while True:
            try:
                line = self.input_fn(f"{self.human}> ")
            except EOFError:
                self.say("\n(end of input)")
                raise _QuitError from None
            word = line.strip().lower()
            if word in QUIT_WORDS:
                raise _QuitError
            if word in HELP_WORDS:
                self.say(f"Actions: {GRAMMAR}. Also: help, quit.")
                continue
            try:
                action = parse_action(line, n)
            except GrammarError as err:
                self.say(f"Not an action: {err}")
                continue
            try:
                index = action_index(action, n)
            except ValueError:  # (a move from a bin to itself parses but is no action of the space)
                index = -1
            if index < 0 or not mask[index]:
                why = game.check(action, player) or "the rules do not allow it now"
                self.say(f"Not legal now: {action.text()}: {why}. Try again ('help' for the grammar).")
                continue
            return index

    def summary(self, session: Session, episodes: int) -> None:
        results = session.results
        if not results:
            self.say("No episode finished.")
            return
        won = sum(r.success for r in results)
        for r in results:
            self.say(
                f"episode {r.episode + 1}: success {'yes' if r.success else 'no'}, steps {r.steps}, "
                f"placed {r.placed}/{r.n}"
            )
        self.say(
            f"{won} of {len(results)} finished episode(s) solved"
            + (f" ({episodes} planned)" if len(results) < episodes else "")
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``eq-env einstein play``: the seat, the partner, seeds and episodes, the game parameters
    (as ``eq-env play``'s) and the LLM flags (for an ``llm`` partner)."""
    from eq_env.core.cli import add_config_flags, add_flag_groups, episodes_arg, seed_arg

    parser.add_argument(
        "--human",
        choices=PLAYERS,
        default="player_0",
        help="your seat (default player_0, who moves first; player_1: the partner starts)",
    )
    parser.add_argument(
        "--partner",
        default="planner",
        help="the other seat's policy spec (default planner; eq-env policies --env einstein-puzzle lists them)",
    )
    parser.add_argument("--seed", type=seed_arg, default=0, help="the seed of the puzzles (default 0)")
    parser.add_argument("--episodes", type=episodes_arg, default=1, help="episodes to play (default 1)")
    add_config_flags(parser, EinsteinPuzzleConfig)
    add_flag_groups(parser, ".eq_env_cache/llm", ["--partner"])


def run(args: argparse.Namespace) -> int:
    """Run ``eq-env einstein play``: 0 when the session ends (finished or quit), 1 when the partner fails."""
    from eq_env.core.cli import config_from_args, configure_flag_groups, dry_run, fill_spec
    from eq_env.core.policy import PolicyError
    from eq_env.core.spec import env_spec

    config = config_from_args(args, EinsteinPuzzleConfig)
    spec = fill_spec(args.partner, args)
    role = _other(args.human)
    if getattr(args, "dry_run", False):
        return dry_run(env_spec("einstein-puzzle"), config, {role: [spec]})
    configure_flag_groups(args, Path(".eq_env_cache/llm"))
    try:
        play_human(config, human=args.human, partner=spec, seed=args.seed, episodes=args.episodes)
    except PolicyError as err:
        print(f"eq-env einstein play: the partner ({spec}) failed: {err}", file=sys.stderr)
        return 1
    return 0
