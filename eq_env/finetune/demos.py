"""Demonstrations for every LLM role of every game, in one command (``eq-env finetune demos --env G``).

Each game's demonstrations are its own module's (the user turn exactly the player's prompt, the assistant turn
the reply of a player that cannot do better, ``meta`` saying where the line comes from and whether the game's
verifiers accept it):

=========================  =======================================  ==============================================
game                       roles                                    module (the demonstrator; the split)
=========================  =======================================  ==============================================
``einstein-puzzle``        player_0, player_1                       :mod:`eq_env.studies.einstein_puzzle.demos`
                                                                    (the oracle planner; train on generated 4–6
                                                                    object puzzles, never a suite puzzle)
``exchange-audit``         proposer, validator                      :mod:`eq_env.studies.exchange_audit.demos`
``belief-coordination``    coordinator, executor (the answerer)     :mod:`eq_env.studies.belief_coordination.demos`
=========================  =======================================  ==============================================

The ``train`` split never holds a state the bench's test sets play; ``test`` is the bench's own states. The
same arguments write the same file, byte for byte. Filter the lines the verifiers flag with ``eq-env finetune
sft --verified-only``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["GAMES", "demonstrations", "write"]

GAMES = {
    "einstein-puzzle": "eq_env.studies.einstein_puzzle.demos",
    "exchange-audit": "eq_env.studies.exchange_audit.demos",
    "belief-coordination": "eq_env.studies.belief_coordination.demos",
}


def demonstrations(
    game: str,
    *,
    split: str = "train",
    episodes: int = 100,
    seed: int | None = None,
    roles: Sequence[str] | None = None,
    sizes: Any = None,
    comm_modes: Any = None,
    stats: Any = None,
) -> Iterator[dict[str, Any]]:
    """The demonstration lines of ``game`` (see the module docstring); ValueError for a bad argument."""
    if game not in GAMES:
        raise ValueError(f"no demonstrations for {game!r}; games: {', '.join(GAMES)}")
    module = importlib.import_module(GAMES[game])
    if game == "einstein-puzzle":
        from eq_env.studies.einstein_puzzle.flags import comm_modes as read_modes
        from eq_env.studies.einstein_puzzle.flags import object_counts

        if roles is not None and set(roles) - {"player_0", "player_1"}:
            raise ValueError(f"roles: the Einstein puzzle's LLM roles are player_0 and player_1, got {list(roles)}")
        n = object_counts(sizes) if isinstance(sizes, str) else sizes
        modes = read_modes(comm_modes) if isinstance(comm_modes, str) else comm_modes
        for line in module.demonstrations(n, modes, episodes, seed or 0, split=split, stats=stats):
            if roles is None or line["meta"]["agent"] in roles:
                yield line
        return
    if sizes is not None or comm_modes is not None:
        raise ValueError(f"--n and --comm-mode are the Einstein puzzle's; {game} takes neither")
    given = {} if seed is None else {"seed": seed}  # (each game's default train seed is clear of its bench)
    yield from module.demonstrations(split=split, episodes=episodes, roles=roles, stats=stats, **given)


def write(game: str, out: Path, **kwargs: Any) -> str:
    """Write :func:`demonstrations` to ``out`` as JSONL (line by line, flushed); returns a summary line."""
    module = importlib.import_module(GAMES[game]) if game in GAMES else None
    stats = module.DemoStats() if module is not None else None
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    with out.open("w", encoding="utf-8") as f:
        for line in demonstrations(game, stats=stats, **kwargs):
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
            lines += 1
    return stats.summary() if stats is not None and hasattr(stats, "summary") else f"{lines} lines"
