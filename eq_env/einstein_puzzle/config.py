"""The Einstein puzzle's configuration: one validated, immutable value, with presets.

Every parameter is declared once (range or choices and documentation), so
errors, ``eq-env --env einstein-puzzle --n 6`` flags, sweep grids and the
manual's table all come from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from eq_env.core.config import GameConfig, choice, flag, number
from eq_env.einstein_puzzle.generator import MAX_OBJECTS, MIN_OBJECTS
from eq_env.einstein_puzzle.rules import COMM_MODES, default_max_steps

__all__ = ["PRESETS", "EinsteinPuzzleConfig"]


@dataclass(frozen=True)
class EinsteinPuzzleConfig(GameConfig):
    """The parameters of one Einstein puzzle environment (see ``eq_env.einstein_puzzle.env`` for the game)."""

    NAME: ClassVar[str] = "einstein-puzzle"

    n: int = number(4, MIN_OBJECTS, MAX_OBJECTS, "objects to sort", integer=True)
    comm_mode: str = choice("provide_and_seek", COMM_MODES, "what the players may say: shares, asks, both or nothing")
    max_steps: int | None = number(
        None, 1, 1000, "turns before truncation (auto: 30, 40 for 8 objects, 5n beyond)", integer=True, none="auto"
    )
    puzzles: str = choice(
        "generated", ("generated", "suite"), "generated: a new puzzle per episode; suite: the suite's puzzle i mod 300"
    )
    suite_stride: int = number(
        0,
        0,
        300,
        "suite puzzles: episode i of seed s plays puzzle (s·stride + i) mod 300 (0: i mod 300 whatever the seed)",
        integer=True,
    )
    private_share: float = number(2 / 3, 0.0, 1.0, "share of relations held by one player only (generated puzzles)")
    max_depth: int | None = number(
        None, 1, MAX_OBJECTS - 1, "cap on the constraint tree's depth (generated puzzles)", integer=True, none="any"
    )
    rejection_penalty: float = number(0.1, 0.0, 10.0, "team penalty for a rejected placement (the paper's code: 0.1)")
    illegal_penalty: float = number(0.0, 0.0, 10.0, "team penalty for an action the rules do not allow")
    pass_penalty: float = number(0.0, 0.0, 10.0, "team penalty for a pass (the original code's bug: always charged)")
    success_reward: float = number(1.0, 0.0, 100.0, "team reward when every object is in its goal bin")
    shaping: float = number(
        0.0,
        0.0,
        10.0,
        "weight of potential-based reward shaping on what the team has established (0: none; leaves the "
        "optimal policies unchanged)",
    )
    strict_mask: bool = flag(
        False, "the action mask also leaves out moves that can only be rejected or that undo a correct placement"
    )

    def validate(self) -> None:
        if self.puzzles == "suite" and not 4 <= self.n <= 8:
            raise ValueError(f"puzzles='suite' has puzzles of 4 to 8 objects, got n={self.n}")
        if self.suite_stride and self.puzzles != "suite":
            raise ValueError(
                f"suite_stride={self.suite_stride} applies to puzzles='suite' only, got puzzles={self.puzzles!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The fields; those added after results were first keyed (``suite_stride``, ``shaping``,
        ``strict_mask``) only when set, so a configuration without them keys its results as before they existed."""
        data = super().to_dict()
        for name in LATER_FIELDS:
            if data[name] == getattr(EinsteinPuzzleConfig, name):
                del data[name]
        return data

    @property
    def step_limit(self) -> int:
        """``max_steps``, or the paper's limit for ``n`` objects when it is ``None`` (auto)."""
        return self.max_steps if self.max_steps is not None else default_max_steps(self.n)


LATER_FIELDS = ("suite_stride", "shaping", "strict_mask")  # added after v0's first results: keyed only when set

PRESETS: dict[str, EinsteinPuzzleConfig] = {
    "paper": EinsteinPuzzleConfig(),
    "paper_test": EinsteinPuzzleConfig(puzzles="suite"),
    "eight": EinsteinPuzzleConfig(n=8),
}
EinsteinPuzzleConfig.PRESETS = PRESETS
EinsteinPuzzleConfig.DEFAULT_PRESET = "paper"
