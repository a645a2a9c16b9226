"""The puzzle generator (seeded, unique goals, knobs) and the frozen benchmark suite."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from eq_env.einstein_puzzle import suite
from eq_env.einstein_puzzle.generator import generate, puzzle_rng
from eq_env.einstein_puzzle.rules import BOTH, BOTTOM_START, TOP_START, Puzzle


def count_solutions(p: Puzzle, stop: int = 2) -> list[tuple[int, ...]]:
    """Every goal assignment the constraints allow (up to ``stop``), by backtracking over objects in index
    order and checking each constraint once all its objects have a bin: independent of the generator's
    tree and of the union-find the rules infer with."""
    by_last: dict[int, list] = {i: [] for i in range(p.n)}
    for c in p.constraints:
        by_last[max(c.objects())].append(c)
    found: list[tuple[int, ...]] = []
    goal = [0] * p.n

    def extend(i: int) -> None:
        if len(found) >= stop:
            return
        if i == p.n:
            found.append(tuple(goal))
            return
        for b in range(4):
            goal[i] = b
            if all(c.holds(goal) for c in by_last[i]):
                extend(i + 1)

    extend(0)
    return found


def tree_depth(p: Puzzle) -> int:
    root = p.constraints[0].a
    edges: dict[int, list[int]] = {i: [] for i in range(p.n)}
    for c in p.constraints[1:]:
        edges[c.a].append(c.b)  # type: ignore[arg-type]
        edges[c.b].append(c.a)  # type: ignore[index]
    depth, frontier, seen = 0, [root], {root}
    while frontier:
        nxt = [m for o in frontier for m in edges[o] if m not in seen]
        seen.update(nxt)
        if nxt:
            depth += 1
        frontier = nxt
    return depth


@pytest.mark.parametrize("n", range(4, 13))
def test_generated_puzzles_are_valid_with_one_solution(n: int) -> None:
    for seed in range(25 if n <= 8 else 8):
        p = generate(n, puzzle_rng(seed, 0))
        p.validate()  # structure: grounding + spanning tree, all four bins, split, every constraint true
        assert count_solutions(p) == [p.goal]


def test_the_solver_finds_several_solutions_when_a_relation_is_missing() -> None:
    p = generate(6, puzzle_rng(1, 0))
    loose = Puzzle(p.start, p.goal, p.constraints[:-1], p.holders[:-1])
    assert len(count_solutions(loose, stop=10)) == 4  # one relation less: its subtree may take any offset


def test_same_seed_same_puzzle_and_streams_differ() -> None:
    assert generate(8, puzzle_rng(5, 3)) == generate(8, puzzle_rng(5, 3))
    assert generate(8, puzzle_rng(5, 3)) != generate(8, puzzle_rng(5, 4))
    assert generate(8, puzzle_rng(5, 3)) != generate(8, puzzle_rng(5, 3, stream=1))


def test_starts_are_split_evenly_and_odd_n_goes_either_way() -> None:
    extra = set()
    for seed in range(40):
        p = generate(5, puzzle_rng(seed, 0))
        assert sorted((p.start.count(BOTTOM_START), p.start.count(TOP_START))) == [2, 3]
        extra.add(p.start.count(BOTTOM_START))
    assert extra == {2, 3}


@pytest.mark.parametrize(("share", "n", "private"), [(0.0, 8, 2), (2 / 3, 7, 4), (1.0, 8, 6), (0.5, 9, 4)])
def test_private_share_sets_how_many_relations_are_private(share: float, n: int, private: int) -> None:
    for seed in range(10):
        p = generate(n, puzzle_rng(seed, 0), private_share=share)
        relations = p.holders[1:]
        assert sum(h != BOTH for h in relations) == private  # bounded so all three kinds stay present
        assert {0, 1, BOTH} <= set(relations) and abs(relations.count(0) - relations.count(1)) <= 1
        assert p.holders[0] == BOTH


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_max_depth_caps_the_constraint_tree(depth: int) -> None:
    depths = {tree_depth(generate(10, puzzle_rng(s, 0), max_depth=depth)) for s in range(20)}
    assert max(depths) <= depth and depth in depths
    assert max(tree_depth(generate(10, puzzle_rng(s, 0))) for s in range(20)) > 3  # uncapped: deeper trees


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n": 3}, "n must be"), ({"n": 17}, "n must be"), ({"n": 4.0}, "n must be"),
     ({"n": 6, "private_share": 1.5}, "private_share"), ({"n": 6, "max_depth": 0}, "max_depth")],
)  # fmt: skip
def test_bad_knobs_are_refused(kwargs: dict, message: str) -> None:
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=message):
        generate(n, np.random.default_rng(0), **kwargs)


def test_goal_bins_are_not_biased_toward_one_bin() -> None:
    counts = np.zeros(4)
    for seed in range(300):
        for g in generate(8, puzzle_rng(seed, 0)).goal:
            counts[g] += 1
    assert counts.min() / counts.max() > 0.85


# -- the frozen suite --------------------------------------------------------------------------------------
@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_the_suite_has_300_valid_unique_puzzles_per_size() -> None:
    everything = suite.load_suite()
    assert sorted(everything) == [4, 5, 6, 7, 8]
    for n, puzzles in everything.items():
        assert len(puzzles) == 300 and all(p.n == n for p in puzzles)
        assert len(set(puzzles)) == 300
        for p in puzzles:
            assert count_solutions(p) == [p.goal]


def test_the_generator_still_rebuilds_the_shipped_suite() -> None:
    text = suite.build_suite()
    assert hashlib.sha256(text.encode()).hexdigest() == suite.SUITE_SHA256
    assert suite.main(["--check"]) == 0


def test_the_suite_is_not_the_environments_training_stream() -> None:
    test = set(suite.load_suite(6))
    train = {generate(6, puzzle_rng(seed, i)) for seed in range(3) for i in range(300)}
    assert not test & train


def test_a_tampered_or_missing_suite_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = suite._suite_path().read_text().splitlines()
    line = json.loads(source[5])
    line["goal"][0] = (line["goal"][0] + 1) % 4
    tampered = tmp_path / suite.SUITE_FILE
    tampered.write_text("\n".join([*source[:5], json.dumps(line), *source[6:]]) + "\n")
    suite._load.cache_clear()
    monkeypatch.setattr(suite, "_suite_path", lambda: tampered)
    with pytest.raises(ValueError, match="not the published einstein-suite-v1"):
        suite.load_suite(4)
    # with the checksum of the tampered file, the bad line itself is named
    monkeypatch.setattr(suite, "SUITE_SHA256", hashlib.sha256(tampered.read_bytes()).hexdigest())
    suite._load.cache_clear()
    with pytest.raises(ValueError, match=r"line 6: constraint \d+ .* false of the goal|line 6: goal"):
        suite.load_suite(4)
    monkeypatch.setattr(suite, "_suite_path", lambda: tmp_path / "missing.jsonl")
    suite._load.cache_clear()
    with pytest.raises(ValueError, match="cannot read the puzzle suite"):
        suite.load_suite()
    suite._load.cache_clear()


def test_load_suite_refuses_sizes_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="4 to 8 objects"):
        suite.load_suite(9)


def test_independent_solver_agrees_with_brute_force() -> None:
    p = generate(5, puzzle_rng(2, 0))
    brute = [g for g in itertools.product(range(4), repeat=5) if all(c.holds(g) for c in p.constraints)]
    assert brute == count_solutions(p, stop=99)
