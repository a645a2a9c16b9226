"""Fine-tuning demonstrations: the oracle planner's games, as chat-format JSONL.

``eq-env einstein demos --out demos.jsonl`` plays, for each object count, puzzle and communication mode, the
oracle's shortest joint plan (:func:`~eq_env.einstein_puzzle.planner.oracle_plan`) through the environment,
and writes one line per decision of either seat::

    {"messages": [{"role": "system", ...}, {"role": "user", ...}, {"role": "assistant", "content": "share 2"}],
     "meta": {"split": "train", "source": "generated", "n": 5, "comm_mode": "provide_only", "seed": 0,
              "episode": 3, "turn": 4, "player": 0, "agent": "player_0", "outcome": "accepted",
              "rational": true, "reason": "", "plan_length": 10, "prompt_version": "v1",
              "puzzle": {...}}}

The system and user messages are exactly the prompt an LLM player gets at that turn
(``eq_env.agents.einstein_puzzle.prompt.render_messages(observation["text"], version)``, the observation taken
from the environment itself), and the assistant message is the oracle's action in the action grammar
(:meth:`Action.text`), so the file goes as it is to the usual fine-tuning tools (OpenAI's and Hugging
Face's chat format: the ``messages`` key; tools that refuse extra keys: drop ``meta``).

Splits (the paper's: train on 4-6 objects, test on 7-8, out of distribution):

* ``train`` (default): ``--n`` (default 4-6) generated puzzles, episode 0, 1, ... of ``--seed`` — the very
  puzzles ``reset(seed=S, options={"episode": i})`` plays (:func:`~eq_env.einstein_puzzle.env.episode_puzzle`)
  — skipping any that is also a puzzle of the frozen suite, so no training puzzle is a test puzzle;
* ``test``: ``--test-n`` (default 7-8) sizes, the first ``--episodes`` (at most 300) puzzles of the frozen
  suite (``einstein-suite-v1``, what the paper-test preset plays; the seed is not used);
* ``both``: the two, in ``OUT_train.jsonl`` and ``OUT_test.jsonl`` beside ``--out``.

Each puzzle is played in every ``--comm-mode`` (the same puzzle, one game per mode). The oracle may wait: its
plans may pass while its partner must act first, or fill the wait with an ask, and the reasoning verifier
allows a pass only when nothing else is rational. The plan is kept as it is; ``meta.rational`` says whether
the reasoning verifier (:func:`~eq_env.einstein_puzzle.verifiers.rational_reason`) accepts the action and
``meta.reason`` why not, so such lines can be filtered out. In ``none`` mode the oracle's guesses (moves
into a goal bin the mover cannot infer) are always right, since it reads the goal; ``meta.guess`` marks
them, so a user can drop them rather than teach a model guesses that never fail. A game the planner cannot
finish within the step limit (or its expansion budget) is skipped and counted, never written in part.

The same flags always write the same file (the planner's budget is in expansions, not seconds).
:func:`demonstrations` yields the same dicts from Python.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from eq_env.core.cli import MAX_SEED, episodes_arg, new_file, seed_arg
from eq_env.einstein_puzzle.rules import COMMON, Move
from eq_env.studies.einstein_puzzle.flags import comm_modes, object_counts

__all__ = [
    "SPLITS",
    "TEST_SIZES",
    "TRAIN_SIZES",
    "DemoStats",
    "add_arguments",
    "demonstration_games",
    "demonstrations",
    "run",
    "split_paths",
]

SPLITS = ("train", "test", "both")
TRAIN_SIZES = (4, 5, 6)  # the paper trains on 4-6 objects ...
TEST_SIZES = (7, 8)  # ... and tests on 7-8, out of distribution
MAX_EXPANSIONS = 1_000_000  # the planner's budget per game (a count, so the output is deterministic)


class DemoStats:
    """What a :func:`demonstrations` run did: games written, lines, games skipped (and why), suite
    collisions skipped in the train split, test sizes clipped to the suite."""

    def __init__(self) -> None:
        self.games = 0
        self.lines = 0
        self.irrational = 0
        self.skipped: list[tuple[int, str, int, str]] = []  # (n, comm mode, episode, why)
        self.suite_collisions = 0

    def summary(self) -> str:
        text = f"{self.games} games, {self.lines} lines ({self.irrational} not accepted by the reasoning verifier)"
        if self.suite_collisions:
            text += f"; {self.suite_collisions} generated puzzle(s) skipped: in the suite"
        if self.skipped:
            text += f"; {len(self.skipped)} game(s) skipped: no plan within the step limit or the budget"
        return text


@lru_cache(maxsize=1)
def _suite_keys() -> frozenset[str]:
    from eq_env.einstein_puzzle.suite import load_suite

    return frozenset(json.dumps(p.to_dict(), sort_keys=True) for ps in load_suite().values() for p in ps)


def _puzzle_indices(split: str, n: int, episodes: int, seed: int, stats: DemoStats) -> Iterator[int]:
    """The episode indices the split plays for ``n`` objects: the suite's first ``episodes`` (test), or the
    first ``episodes`` generated ones of ``seed`` that are not suite puzzles (train)."""
    from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
    from eq_env.einstein_puzzle.env import episode_puzzle
    from eq_env.einstein_puzzle.suite import SUITE_SIZE

    if split == "test":
        yield from range(min(episodes, SUITE_SIZE))
        return
    config, found, i = EinsteinPuzzleConfig(n=n), 0, 0
    while found < episodes:
        if json.dumps(episode_puzzle(config, seed, i).to_dict(), sort_keys=True) in _suite_keys():
            stats.suite_collisions += 1
        else:
            found += 1
            yield i
        i += 1


def _game_lines(
    split: str, n: int, mode: str, seed: int, episode: int, prompt_version: str, max_expansions: int
) -> list[dict[str, Any]] | str:
    """The lines of one oracle game, or why there are none."""
    from eq_env.agents.einstein_puzzle.prompt import render_messages
    from eq_env.einstein_puzzle import spaces as codec
    from eq_env.einstein_puzzle.env import PLAYERS, raw_env
    from eq_env.einstein_puzzle.planner import PlannerBudgetExceeded, oracle_plan
    from eq_env.einstein_puzzle.suite import SUITE
    from eq_env.einstein_puzzle.verifiers import rational_reason

    env = raw_env(n=n, comm_mode=mode, puzzles="suite" if split == "test" else "generated")
    env.reset(seed=seed, options={"episode": episode})
    game = env.game
    assert game is not None
    try:
        plan = oracle_plan(game, max_expansions=max_expansions)
    except PlannerBudgetExceeded as err:
        return str(err)
    if plan is None:
        return "no plan within the step limit"
    puzzle = game.puzzle.to_dict()
    lines = []
    for action in plan:
        agent = env.agent_selection
        player = PLAYERS.index(agent)
        messages = render_messages(env.observe(agent)["text"], prompt_version)
        reason = rational_reason(game, action)
        # a move into a goal bin (or across) the mover cannot infer: in `none` mode the oracle's guesses are
        # lucky by construction (it reads the goal), which no player could count on
        guess = isinstance(action, Move) and action.dst != COMMON and game.knowledge(player).goal(action.obj) is None
        turn = game.turn
        env.step(codec.action_index(action, n))
        outcome = env.infos[agent]["last_action"]["outcome"]
        messages.append({"role": "assistant", "content": action.text()})
        meta = {
            "split": split,
            "source": SUITE if split == "test" else "generated",
            "n": n,
            "comm_mode": mode,
            "seed": None if split == "test" else seed,
            "episode": episode,
            "turn": turn,
            "player": player,
            "agent": agent,
            "outcome": outcome,
            "rational": not reason,
            "reason": reason,
            "guess": guess,
            "plan_length": len(plan),
            "prompt_version": prompt_version,
            "puzzle": puzzle,
        }
        lines.append({"messages": messages, "meta": meta})
    if not game.success:  # (the planner's plans are checked in its tests; a broken one is a bug, not data)
        raise AssertionError(f"the oracle's plan did not win n={n} {mode} episode {episode}")
    return lines


def demonstrations(
    sizes: Sequence[int] | None = None,
    comm_modes: Sequence[str] | None = None,
    episodes: int = 100,
    seed: int = 0,
    *,
    split: str = "train",
    prompt_version: str | None = None,
    max_expansions: int = MAX_EXPANSIONS,
    stats: DemoStats | None = None,
) -> Iterator[dict[str, Any]]:
    """The demonstration lines (dicts, as written to the JSONL file; see the module docstring), game by game:
    for each size in ``sizes`` (default: 4-6 for train, 7-8 for test), each of ``episodes`` puzzles of the
    ``split`` (``"train"``: generated from ``seed``, suite puzzles skipped; ``"test"``: the frozen suite's
    first ``episodes``, at most 300, n in 4-8), each comm mode (default: all four), every decision of the
    oracle's game, both seats.

    ``stats`` (a :class:`DemoStats`) is filled as it goes. ``prompt_version`` defaults to the prompt's
    current one. ValueError for a bad split, size, mode or count.
    """
    for lines in demonstration_games(
        sizes,
        comm_modes,
        episodes,
        seed,
        split=split,
        prompt_version=prompt_version,
        max_expansions=max_expansions,
        stats=stats,
    ):
        yield from lines


def demonstration_games(
    sizes: Sequence[int] | None = None,
    comm_modes: Sequence[str] | None = None,
    episodes: int = 100,
    seed: int = 0,
    *,
    split: str = "train",
    prompt_version: str | None = None,
    max_expansions: int = MAX_EXPANSIONS,
    stats: DemoStats | None = None,
) -> Iterator[list[dict[str, Any]]]:
    """:func:`demonstrations` game by game: one list of lines per game (empty for a skipped game)."""
    from eq_env.agents.einstein_puzzle.prompt import PROMPT_VERSION
    from eq_env.einstein_puzzle.rules import COMM_MODES
    from eq_env.einstein_puzzle.suite import SUITE_SIZES

    modes = list(COMM_MODES) if comm_modes is None else list(comm_modes)
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' (write both with two calls), got {split!r}")
    bad = [m for m in modes if m not in COMM_MODES]
    if bad or not modes:
        raise ValueError(f"comm_modes must be among {COMM_MODES}, got {modes!r}")
    sizes = list(sizes) if sizes is not None else list(TEST_SIZES if split == "test" else TRAIN_SIZES)
    low, high = (SUITE_SIZES[0], SUITE_SIZES[-1]) if split == "test" else (4, 16)
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or not low <= n <= high for n in sizes):
        raise ValueError(f"sizes for the {split} split must be integers in [{low}, {high}], got {list(sizes)!r}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, {MAX_SEED}], got {seed!r}")
    version = prompt_version or PROMPT_VERSION
    stats = stats if stats is not None else DemoStats()
    for n in sizes:
        for episode in _puzzle_indices(split, n, episodes, seed, stats):
            for mode in modes:
                lines = _game_lines(split, n, mode, seed, episode, version, max_expansions)
                if isinstance(lines, str):
                    stats.skipped.append((n, mode, episode, lines))
                    yield []
                    continue
                stats.games += 1
                stats.lines += len(lines)
                stats.irrational += sum(not line["meta"]["rational"] for line in lines)
                yield lines


# -- the command --------------------------------------------------------------------------------------


def _version_arg(text: str) -> str:
    from eq_env.agents.einstein_puzzle.prompt import PROMPT_DIR

    versions = sorted(p.stem.removeprefix("player_") for p in PROMPT_DIR.glob("player_*.txt"))
    if text not in versions:
        raise argparse.ArgumentTypeError(f"unknown prompt version {text!r}; choose from {', '.join(versions)}")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's flags."""
    parser.add_argument(
        "--out",
        type=new_file,
        required=True,
        help="the JSONL file to write (with --split both: OUT_train.jsonl and OUT_test.jsonl)",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default="train",
        help="train (default): generated puzzles of --n objects, none from the suite; test: the "
        "frozen suite's puzzles of --test-n objects; both: the two files. Defaults give the "
        "paper's split: train on 4-6 objects, test on 7-8, out of distribution",
    )
    parser.add_argument(
        "--n",
        type=object_counts,
        default=None,
        dest="sizes",
        help="object counts of the train split: 4, 4,6 or 4-6 (default 4-6)",
    )
    parser.add_argument(
        "--test-n",
        type=object_counts,
        default=None,
        dest="test_sizes",
        help="object counts of the test split, 4-8 (the suite's sizes; default 7-8)",
    )
    parser.add_argument(
        "--comm-mode",
        type=comm_modes,
        default=None,
        dest="comm_modes",
        help="comm modes, comma-separated, or all (default): each puzzle is played in each",
    )
    parser.add_argument(
        "--episodes",
        type=episodes_arg,
        default=100,
        help="puzzles per object count (default 100; the test split takes at most the suite's 300)",
    )
    parser.add_argument(
        "--seed",
        type=seed_arg,
        default=0,
        help="the train split's seed: episodes 0, 1, ... of it, as reset(seed=...) plays (default 0)",
    )
    parser.add_argument(
        "--prompt-version",
        type=_version_arg,
        default=None,
        help="the prompt template version (default: the current one, v1)",
    )


def split_paths(out: Path, split: str) -> dict[str, Path]:
    """Where each split goes: ``out`` itself for one split; ``<stem>_train<suffix>`` and ``<stem>_test<suffix>``
    beside it for both."""
    if split != "both":
        return {split: out}
    suffix = out.suffix or ".jsonl"
    return {s: out.with_name(f"{out.stem}_{s}{suffix}") for s in ("train", "test")}


def _error(message: str) -> int:
    print(f"eq-env einstein demos: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Write the demonstration file(s); 0 on success, 2 on a bad flag (one line naming it)."""
    from tqdm import tqdm

    from eq_env.einstein_puzzle.rules import COMM_MODES
    from eq_env.einstein_puzzle.suite import SUITE_SIZE, SUITE_SIZES

    modes = list(COMM_MODES) if args.comm_modes is None else list(args.comm_modes)
    if args.split == "train" and args.test_sizes is not None:  # (a flag that would change nothing is refused)
        return _error("argument --test-n: it sizes the test split; add --split test or --split both")
    if args.split == "test" and args.sizes is not None:
        return _error("argument --n: it sizes the train split; use --test-n with --split test")
    args.sizes = list(TRAIN_SIZES) if args.sizes is None else args.sizes
    args.test_sizes = list(TEST_SIZES) if args.test_sizes is None else args.test_sizes
    if args.split in ("test", "both"):
        bad = [n for n in args.test_sizes if n not in SUITE_SIZES]
        if bad:
            return _error(
                f"argument --test-n: the suite has puzzles of {SUITE_SIZES[0]} to {SUITE_SIZES[-1]} "
                f"objects, not {', '.join(map(str, bad))}"
            )
    paths = split_paths(args.out, args.split)
    for path in paths.values():
        if path.is_dir():
            return _error(f"argument --out: {path} is a directory; expected a file name")
    for split, path in paths.items():
        sizes = args.test_sizes if split == "test" else args.sizes
        episodes = min(args.episodes, SUITE_SIZE) if split == "test" else args.episodes
        if split == "test" and args.episodes > SUITE_SIZE:
            print(f"note: the test split has the suite's {SUITE_SIZE} puzzles per size", file=sys.stderr)
        stats = DemoStats()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            f = path.open("w", encoding="utf-8")
        except OSError as err:
            return _error(f"argument --out: cannot write {path}: {err.strerror}")
        with f, tqdm(total=len(sizes) * episodes * len(modes), desc=f"demos {split}", unit="game", disable=None) as bar:
            for lines in demonstration_games(
                sizes, modes, episodes, args.seed, split=split, prompt_version=args.prompt_version, stats=stats
            ):
                f.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
                f.flush()
                bar.update(1)
        print(f"wrote {path}: {stats.summary()}", file=sys.stderr)
    return 0
