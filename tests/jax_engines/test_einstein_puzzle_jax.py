"""The Einstein puzzle's JAX engine against the PettingZoo environment, step by step, on every configuration of the
conformance battery and the options it leaves out (the strict mask, shaping, 12 objects, shallow trees); its puzzle
generator against the numpy one; its JaxMARL interface."""

from __future__ import annotations

import numpy as np
import pytest
from jax_need import need

need("jax", "jaxmarl", "optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from eq_env import einstein_puzzle_v0  # noqa: E402
from eq_env.einstein_puzzle import jax_engine  # noqa: E402
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig  # noqa: E402
from eq_env.einstein_puzzle.env import resolve_config  # noqa: E402
from eq_env.einstein_puzzle.generator import generate  # noqa: E402
from eq_env.einstein_puzzle.numeric import INFO_KEYS  # noqa: E402
from eq_env.einstein_puzzle.rules import Constraint, Puzzle  # noqa: E402
from eq_env.einstein_puzzle.spec import CONFORMANCE  # noqa: E402

AGENTS = jax_engine.AGENTS
EPISODES = 2000
# beyond the battery: the options self-play trains with, the largest size asked for, and the generator's knobs
EXTRA = {
    "strict-mask-shaping": {"strict_mask": True, "shaping": 1.0},
    "twelve-objects-seek-only-strict": {"n": 12, "comm_mode": "seek_only", "strict_mask": True},
    "six-objects-shallow-private": {"n": 6, "max_depth": 1, "private_share": 1.0, "shaping": 2.0},
}


def _config(kwargs: dict) -> EinsteinPuzzleConfig:
    kwargs = {k: v for k, v in kwargs.items() if k != "observation_mode"}
    preset = kwargs.pop("preset", None)
    return resolve_config(None, preset, kwargs)


CONFIGS = {name: _config(kw) for name, kw in {**CONFORMANCE, **EXTRA}.items()}


def _choose(rng: np.random.Generator, mask: np.ndarray, game: object, n: int) -> int:
    """A random player that finishes many games and breaks every rule now and then: 10% any index of the space
    (illegal ones included), 40% a legal move of an object towards its goal (its goal bin, or the common bin on the
    way), else any legal action."""
    u = rng.random()
    legal = np.flatnonzero(mask)
    if u < 0.1:
        return int(rng.integers(0, len(mask)))
    if u < 0.5:
        goal, location = game.puzzle.goal, game.location  # type: ignore[attr-defined]
        good = []
        for i in legal[legal < 42 * n]:
            o, r = divmod(int(i), 42)
            s, d = divmod(r, 6)
            d = d if d < s else d + 1
            if d == goal[o] or (d == 6 and location[o] >= 4 and s != 6):
                good.append(int(i))
        if good:
            return int(rng.choice(good))
    return int(rng.choice(legal))


def _play_pettingzoo(config: EinsteinPuzzleConfig, seed: int, episodes: int) -> tuple[list[dict], np.ndarray]:
    """Episodes 0.. of ``seed`` in the numeric parallel environment, played by :func:`_choose` (the idle player
    sends a random index, which is ignored): each step's observations, masks, rewards, terminations,
    truncations and infos, and the actions, padded with passes to the step limit."""
    env = einstein_puzzle_v0.parallel_env(config=config, observation_mode="numeric")
    rng = np.random.default_rng(seed)
    n, limit = config.n, config.step_limit
    actions = np.full((episodes, limit, 2), 48 * n, np.int64)
    records = []
    for e in range(episodes):
        obs, infos = env.reset(seed=seed) if e == 0 else env.reset()
        rec: dict[str, list] = {key: [] for key in ("obs", "mask", "info", "reward", "term", "trunc")}

        def seen(obs: dict, infos: dict, rec: dict = rec) -> None:
            rec["obs"].append([obs[a]["observation"] for a in AGENTS])
            rec["mask"].append([obs[a]["action_mask"].astype(bool) for a in AGENTS])
            rec["info"].append([[infos[a][k] for k in INFO_KEYS] for a in AGENTS])

        seen(obs, infos)
        t = 0
        while env.agents:
            game = env.env.game
            p = game.current
            actions[e, t, p] = _choose(rng, obs[AGENTS[p]]["action_mask"], game, n)
            actions[e, t, 1 - p] = rng.integers(0, 48 * n + 1)
            obs, rewards, terms, truncs, infos = env.step({a: int(actions[e, t, i]) for i, a in enumerate(AGENTS)})
            seen(obs, infos)
            for key, values in (("reward", rewards), ("term", terms), ("trunc", truncs)):
                rec[key].append([values[a] for a in AGENTS])
            t += 1
        records.append({key: np.asarray(v) for key, v in rec.items()})
    return records, actions


def _play_jax(config: EinsteinPuzzleConfig, seed: int, actions: np.ndarray) -> dict[str, np.ndarray]:
    """The same episodes in the JAX engine: the environment's puzzles, the recorded actions (a game that is over
    stays as it is), every step's numbers, stacked (episode, step, agent, ...)."""
    params = jax_engine.params_from_config(config)
    puzzles = jax_engine.numpy_puzzles(config, seed, len(actions))

    def seen(obs: dict, state: jax_engine.State) -> tuple:
        masks = jax_engine.avail_actions(state, params)
        infos = jax_engine.infos(state, params)
        return (
            jnp.stack([obs[a] for a in AGENTS]),
            jnp.stack([masks[a] for a in AGENTS]),
            jnp.stack([infos[k] for k in INFO_KEYS], axis=1),
        )

    def episode(puzzle: jax_engine.PuzzleArrays, acts: jax.Array) -> dict:
        obs, state = jax_engine.reset_from_puzzle(puzzle, params)
        first = seen(obs, state)

        def turn(state: jax_engine.State, a: jax.Array) -> tuple:
            obs, state, rewards, dones, infos = jax_engine.step_env(None, state, a, params)
            won = infos["success"][0] > 0
            done = jnp.stack([dones[x] for x in AGENTS])
            reward = jnp.stack([rewards[x] for x in AGENTS])
            return state, (*seen(obs, state), reward, done & won, done & ~won)

        _, steps = jax.lax.scan(turn, state, acts)
        return {
            "obs": jnp.concatenate([first[0][None], steps[0]]),
            "mask": jnp.concatenate([first[1][None], steps[1]]),
            "info": jnp.concatenate([first[2][None], steps[2]]),
            "reward": steps[3],
            "term": steps[4],
            "trunc": steps[5],
        }

    out = jax.jit(jax.vmap(episode))(puzzles, jnp.asarray(actions))
    return {k: np.asarray(v) for k, v in out.items()}


def _compare(name: str, records: list[dict], got: dict[str, np.ndarray], exact: bool = True) -> None:
    for e, rec in enumerate(records):
        steps = len(rec["reward"])
        for key, ref in rec.items():
            mine = got[key][e, : len(ref)]
            if key == "reward" and not exact:
                ok = np.allclose(mine, ref, rtol=0, atol=1e-6)
            else:
                ok = mine.shape == ref.shape and np.array_equal(mine, ref)
            assert ok, f"{name}: episode {e} ({steps} steps): {key} differs at {np.argwhere(mine != ref)[:3].tolist()}"


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_equal_to_the_pettingzoo_environment(name: str) -> None:
    config = CONFIGS[name]
    seed = 7
    records, actions = _play_pettingzoo(config, seed, EPISODES)
    with jax.enable_x64(True):
        got = _play_jax(config, seed, actions)
    _compare(name, records, got)
    # the random players reached what the comparison should cover: wins (but for a 3-turn limit) and step limits,
    # accepted, rejected and illegal turns, and each kind of message the mode allows
    won = sum(bool(r["term"][-1][0]) for r in records)
    assert won < EPISODES and (won > 0 or config.step_limit < 2 * config.n)
    outcomes = np.concatenate([r["info"][1:, :, 0].max(axis=1) for r in records])
    assert {1, 2, 3} <= set(outcomes.tolist())
    n = config.n
    accepted = [
        int(acts[t, t % 2])
        for r, acts in zip(records, actions, strict=True)
        for t in range(len(r["reward"]))
        if r["info"][t + 1, t % 2, 0] == 1
    ]
    kinds = {"share": (42 * n, 43 * n), "ask": (43 * n, 44 * n), "answer": (44 * n, 48 * n)}
    said = {kind for kind, (lo, hi) in kinds.items() if any(lo <= a < hi for a in accepted)}
    allowed = {
        "provide_and_seek": {"share", "ask", "answer"},
        "provide_only": {"share"},
        "seek_only": {"share", "ask", "answer"},  # (a share answers an ask)
        "none": set(),
    }[config.comm_mode]
    assert said == allowed or (config.step_limit < 5 and said <= allowed), (said, allowed)


def test_float32_gives_the_same_observations_and_masks() -> None:
    """In JAX's default precision the observations, masks, terminations and infos are the same and the rewards
    equal to float32's precision."""
    config = CONFIGS["penalties"]
    records, actions = _play_pettingzoo(config, 3, 500)
    got = _play_jax(config, 3, actions)
    assert got["obs"].dtype == np.float32 and got["reward"].dtype == np.float32
    _compare("penalties (float32)", records, got, exact=False)


def _as_puzzle(p: jax_engine.PuzzleArrays, i: int) -> Puzzle:
    a, b, code = (np.asarray(x[i]).tolist() for x in (p.a, p.b, p.code))
    return Puzzle(
        tuple(np.asarray(p.start[i]).tolist()),
        tuple(np.asarray(p.goal[i]).tolist()),
        tuple(Constraint(x, None if y < 0 else y, c) for x, y, c in zip(a, b, code, strict=True)),
        tuple(np.asarray(p.holders[i]).tolist()),
    )


def _depth(p: Puzzle) -> int:
    """The constraint tree's depth from the grounded object."""
    edges = [(c.a, c.b) for c in p.constraints[1:]]
    depth, frontier = {p.constraints[0].a: 0}, [p.constraints[0].a]
    while frontier:
        x = frontier.pop()
        for a, b in edges:
            for u, v in ((a, b), (b, a)):
                if u == x and v not in depth:
                    depth[v] = depth[x] + 1
                    frontier.append(v)
    return max(depth.values())


@pytest.mark.parametrize(("n", "private_share", "max_depth"), [(4, 2 / 3, None), (7, 2 / 3, None), (12, 0.0, 2)])
def test_drawn_puzzles_are_valid_and_distributed_as_the_generators(
    n: int, private_share: float, max_depth: int
) -> None:
    """Every drawn puzzle passes ``check_puzzle`` (unique goal, even split, all three kinds of holders...), and the
    statistics the generator's steps fix match the numpy generator's over 3,000 puzzles each."""
    count = 3000
    keys = jax.random.split(jax.random.PRNGKey(n), count)
    drawn = jax.jit(jax.vmap(lambda k: jax_engine.draw_puzzle(k, n, private_share, max_depth)))(keys)
    ours = [_as_puzzle(drawn, i) for i in range(count)]
    for p in ours:
        p.validate()
    rng = np.random.default_rng(0)
    theirs = [generate(n, rng, private_share=private_share, max_depth=max_depth) for _ in range(count)]

    def stats(ps: list[Puzzle]) -> dict[str, np.ndarray]:
        return {
            "depth": np.array([_depth(p) for p in ps], float),
            "goal 0": np.array([p.goal.count(0) for p in ps], float),
            "bottom first": np.array([p.start.count(4) > p.start.count(5) for p in ps], float),
            "player 0 private": np.array([p.holders.count(0) for p in ps], float),
            "grounded object": np.array([p.constraints[0].a for p in ps], float),
        }

    mine, ref = stats(ours), stats(theirs)
    for key in mine:
        se = np.sqrt((mine[key].var() + ref[key].var()) / count) + 1e-9
        assert abs(mine[key].mean() - ref[key].mean()) < 4 * se, (key, mine[key].mean(), ref[key].mean())
    if max_depth is not None:
        assert mine["depth"].max() == max_depth
    for bad in ({"n": 3}, {"n": 17}, {"n": 5, "private_share": 1.5}, {"n": 5, "max_depth": 0}):
        with pytest.raises(ValueError, match=r"n must be|private_share|max_depth"):
            jax_engine.draw_puzzle(jax.random.PRNGKey(0), **bad)


def test_jaxmarl_interface_and_auto_reset() -> None:
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    from jaxmarl.wrappers.baselines import LogWrapper

    config = EinsteinPuzzleConfig(n=5, strict_mask=True)
    env = jax_engine.EinsteinPuzzleJax(config)
    assert isinstance(env, MultiAgentEnv)
    assert env.agents == list(AGENTS) and env.num_agents == 2
    size = einstein_puzzle_v0.parallel_env(config=config, observation_mode="numeric").observation_space("player_0")
    assert env.observation_space("player_1").shape == size["observation"].shape
    assert env.action_space("player_0").n == 48 * 5 + 1
    wrapped = LogWrapper(env)
    n, steps = 128, 120
    obs, state = jax.vmap(wrapped.reset)(jax.random.split(jax.random.PRNGKey(0), n))
    assert bool(jnp.all(jax.vmap(env.observation_space("player_0").contains)(obs["player_0"])))

    def turn(state: object, key: jax.Array) -> tuple:
        k1, k2 = jax.random.split(key)
        masks = jax.vmap(env.get_avail_actions)(state.env_state)  # type: ignore[attr-defined]
        acts = {
            a: jax.vmap(jax_engine.random_legal)(jax.random.split(jax.random.fold_in(k1, i), n), masks[a])
            for i, a in enumerate(AGENTS)
        }
        legal = jnp.stack([jnp.take_along_axis(masks[a], acts[a][:, None], 1)[:, 0] for a in AGENTS])
        _, state, rewards, dones, infos = jax.vmap(wrapped.step)(jax.random.split(k2, n), state, acts)
        return state, (rewards["player_0"], dones["__all__"], infos, legal, state.env_state.turn)

    _, (rewards, dones, infos, legal, turns) = jax.jit(
        lambda s: jax.lax.scan(turn, s, jax.random.split(jax.random.PRNGKey(1), steps))
    )(state)
    assert bool(jnp.all(legal))  # random_legal draws only legal actions
    assert 0 < int(dones.sum()) < n * steps
    # JaxMARL's auto-reset: a finished game is a new one at turn 0; LogWrapper's returns are the episodes' rewards
    assert bool(jnp.all(jnp.where(dones, turns == 0, turns > 0)))
    returns = np.asarray(infos["returned_episode_returns"][:, :, 0])
    totals = np.cumsum(np.asarray(rewards), axis=0)
    env_0 = np.flatnonzero(np.asarray(dones[:, 0]))
    assert len(env_0) >= 2
    assert np.isclose(returns[env_0[1], 0], totals[env_0[1], 0] - totals[env_0[0], 0], atol=1e-5)
    assert np.asarray(infos["success"]).shape == (steps, n, 2)


def test_one_compiled_function_plays_every_comm_mode() -> None:
    """Params are arrays: a vmap over the four comm modes' params equals each mode played alone."""
    configs = [EinsteinPuzzleConfig(comm_mode=m) for m in ("provide_and_seek", "provide_only", "seek_only", "none")]
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[jax_engine.params_from_config(c) for c in configs])
    puzzle = jax_engine.PuzzleArrays(*(x[0] for x in jax_engine.numpy_puzzles(configs[0], 0, 1)))

    def masks(params: jax_engine.Params) -> jax.Array:
        _, state = jax_engine.reset_from_puzzle(puzzle, params)
        return jax_engine.avail_actions(state, params)["player_0"]

    together = np.asarray(jax.jit(jax.vmap(masks))(stacked))
    alone = [np.asarray(masks(jax_engine.params_from_config(c))) for c in configs]
    assert np.array_equal(together, np.stack(alone))
    assert len({m.tobytes() for m in alone}) == 4  # (shares and asks, shares, asks, neither)


def test_outside_the_space_and_after_the_end() -> None:
    """A jitted step cannot raise: an index beyond the space plays ``pass`` (the last index), one below plays index
    0; a game that is over stays as it is, with no reward."""
    config = EinsteinPuzzleConfig(max_steps=2)
    params = jax_engine.params_from_config(config)
    _, start = jax_engine.reset(jax.random.PRNGKey(5), params)

    def after(action: int) -> jax_engine.State:
        return jax_engine.step_env(None, start, jnp.array([action, 0]), params)[1]

    for outside, inside in ((10_000, 48 * 4), (-3, 0)):
        got, want = jax.tree.leaves(after(outside)), jax.tree.leaves(after(inside))
        assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    state = after(48 * 4)
    _, state, rewards, dones, _ = jax_engine.step_env(None, state, jnp.array([0, 48 * 4]), params)
    assert bool(dones["__all__"]) and int(state.turn) == 2
    _, again, rewards, dones, infos = jax_engine.step_env(None, state, jnp.array([0, 0]), params)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(again), jax.tree.leaves(state), strict=True))
    assert float(rewards["player_0"]) == 0.0 and bool(dones["__all__"]) and float(infos["turns"][0]) == 2
    with pytest.raises(TypeError, match="EinsteinPuzzleConfig"):
        jax_engine.params_from_config({"n": 4})  # type: ignore[arg-type]
