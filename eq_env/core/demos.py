"""What the games' role demonstrations share (the exchange–audit and belief-coordination ``demos`` modules):
the checks of a request's roles, size, seed and split, and the account of what a run wrote.

A game's demonstrations module subclasses :class:`RoleDemoStats` with its roles and the words of its account,
and calls :func:`check_request` before anything is played.
"""

from __future__ import annotations

from collections.abc import Sequence

from eq_env.core.cli import MAX_SEED

__all__ = ["SPLITS", "RoleDemoStats", "check_request"]

SPLITS = ("train", "test")


class RoleDemoStats:
    """What a demonstrations run did: lines per role, lines the game's checks flag (``unverified``, per role),
    train states skipped as the bench's (``bench_collisions``), decisions not asked (``not_asked``), requests
    with the same prompt merged into one line (``merged``), whether the test split was clipped to the bench's
    states. A game sets :attr:`ROLES` and the words of its :meth:`summary`."""

    ROLES: tuple[str, ...] = ()
    NOT_ASKED = "decision(s) not asked"
    MERGED = "request(s) with the same prompt merged"
    COLLISIONS = "train state(s) skipped: the bench's"
    CLIPPED = "test split clipped to the bench's states per seed"

    def __init__(self) -> None:
        self.lines: dict[str, int] = dict.fromkeys(self.ROLES, 0)
        self.unverified: dict[str, int] = dict.fromkeys(self.ROLES, 0)
        self.bench_collisions = 0
        self.not_asked = 0
        self.merged = 0
        self.test_clipped = False

    @property
    def total(self) -> int:
        return sum(self.lines.values())

    def summary(self) -> str:
        """One line: ``N lines: ROLE n (k not verified), ...; ...``."""
        parts = [
            f"{role} {self.lines[role]} ({self.unverified[role]} not verified)"
            for role in self.ROLES
            if self.lines[role]
        ]
        text = f"{self.total} lines: " + (", ".join(parts) or "none")
        for count, words in (
            (self.not_asked, self.NOT_ASKED),
            (self.merged, self.MERGED),
            (self.bench_collisions, self.COLLISIONS),
        ):
            if count:
                text += f"; {count} {words}"
        if self.test_clipped:
            text += f"; {self.CLIPPED}"
        return text


def check_request(
    roles: Sequence[str] | None, all_roles: tuple[str, ...], episodes: int, max_episodes: int, seed: int, split: str
) -> tuple[str, ...]:
    """The roles asked for, once each in ``all_roles``' order (all when ``roles`` is None); a ValueError naming
    a bad argument: a split not in :data:`SPLITS`, unknown roles, ``episodes`` outside [1, ``max_episodes``],
    ``seed`` outside [0, MAX_SEED]."""
    if split not in SPLITS:
        raise ValueError(f"split must be 'train' or 'test' (write both with two calls), got {split!r}")
    if isinstance(roles, str):
        raise ValueError(f"roles must be a sequence of role names (e.g. [{all_roles[0]!r}]), got the string {roles!r}")
    wanted = list(all_roles if roles is None else roles)
    bad = [r for r in wanted if r not in all_roles]
    if bad or not wanted:
        raise ValueError(f"roles must be among {', '.join(all_roles)} (at least one), got {wanted!r}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or not 1 <= episodes <= max_episodes:
        raise ValueError(f"episodes must be an integer in [1, {max_episodes}], got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer in [0, {MAX_SEED}], got {seed!r}")
    return tuple(r for r in all_roles if r in wanted)
