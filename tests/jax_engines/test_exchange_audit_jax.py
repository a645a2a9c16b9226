"""The exchange–audit JAX engine against the PettingZoo environment, episode by episode, on every configuration
of the conformance battery it plays; its JaxMARL interface; its rule validator against the numpy batch engine's."""

from __future__ import annotations

import numpy as np
import pytest
from jax_need import need

need("jax", "jaxmarl", "optax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from eq_env import exchange_audit_v0  # noqa: E402
from eq_env.core.policy import make_policy  # noqa: E402
from eq_env.exchange_audit import jax_engine  # noqa: E402
from eq_env.exchange_audit.batch import simulate  # noqa: E402
from eq_env.exchange_audit.config import ExchangeAuditConfig  # noqa: E402
from eq_env.exchange_audit.env import resolve_config  # noqa: E402
from eq_env.exchange_audit.features import all_artifacts, artifact_submissions  # noqa: E402
from eq_env.exchange_audit.spec import CONFORMANCE  # noqa: E402

EPISODES = 2000
AGENTS = jax_engine.AGENTS


def _split(kwargs: dict) -> tuple[ExchangeAuditConfig, str]:
    kwargs = {k: v for k, v in kwargs.items() if k != "observation_mode"}
    reward_mode = kwargs.pop("reward_mode", "welfare")
    preset = kwargs.pop("preset", None)
    return resolve_config(None, preset, kwargs), reward_mode


PLAYED = {name: _split(kw) for name, kw in CONFORMANCE.items() if _split(kw)[0].claim_schema == "paper"}
REFUSED = {name: _split(kw) for name, kw in CONFORMANCE.items() if _split(kw)[0].claim_schema != "paper"}


def _play_pettingzoo(config: ExchangeAuditConfig, reward_mode: str, seed: int, actions: np.ndarray) -> dict:
    """Episodes 0.. of ``seed`` in the numeric parallel environment with these (episode, step, agent) actions:
    every step's observations, masks, rewards, terminations, truncations and infos, stacked."""
    env = exchange_audit_v0.parallel_env(config=config, reward_mode=reward_mode, observation_mode="numeric")
    out: dict[str, list] = {}

    def keep(key: str, value: object) -> None:
        out.setdefault(key, []).append(value)

    for e in range(len(actions)):
        obs, infos = env.reset(seed=seed) if e == 0 else env.reset()
        for t in range(3):
            for a in AGENTS:
                keep(f"obs{t}/{a}", obs[a]["observation"])
                keep(f"mask{t}/{a}", obs[a]["action_mask"].astype(bool))
            if t == 2:
                break
            assert env.agents == list(AGENTS)
            obs, rewards, terms, truncs, infos = env.step({a: int(actions[e, t, i]) for i, a in enumerate(AGENTS)})
            for a in AGENTS:
                keep(f"reward{t}/{a}", rewards[a])
                keep(f"term{t}/{a}", terms[a])
                keep(f"trunc{t}/{a}", truncs[a])
                for k, v in infos[a].items():
                    keep(f"info{t}/{a}/{k}", v)
        assert not env.agents  # every episode is the proposal and the decision
    return {k: np.asarray(v) for k, v in out.items()}


def _play_jax(config: ExchangeAuditConfig, reward_mode: str, seed: int, actions: np.ndarray) -> dict:
    params = jax_engine.params_from_config(config, reward_mode)
    draws = jax_engine.numpy_draws(config, seed, len(actions))

    def episode(d: jax_engine.Draws, acts: jax.Array) -> dict:
        obs, state = jax_engine.reset_from_draws(d, params)
        rec = {}
        for t in range(3):
            masks = jax_engine.avail_actions(state, params)
            for a in AGENTS:
                rec[f"obs{t}/{a}"] = obs[a]
                rec[f"mask{t}/{a}"] = masks[a]
            if t == 2:
                break
            obs, state, rewards, dones, infos = jax_engine.step_env(None, state, acts[t], params)
            for a in AGENTS:
                rec[f"reward{t}/{a}"] = rewards[a]
                rec[f"term{t}/{a}"] = dones[a]
                rec[f"trunc{t}/{a}"] = jnp.zeros((), dtype=bool)
                for k, v in infos.items():
                    rec[f"info{t}/{a}/{k}"] = v
        return rec

    return {k: np.asarray(v) for k, v in jax.jit(jax.vmap(episode))(draws, jnp.asarray(actions)).items()}


def _random_actions(seed: int, episodes: int) -> np.ndarray:
    """(episode, step, agent): any artifact and any decision at every step, the idle agent's included (it is not
    played), so approvals after a NO_TRADE (illegal) come up too."""
    rng = np.random.default_rng(seed)
    acts = np.zeros((episodes, 2, 2), dtype=np.int64)
    acts[:, :, 0] = rng.integers(0, 648, (episodes, 2))
    acts[:, :, 1] = rng.integers(0, 2, (episodes, 2))
    return acts


@pytest.mark.parametrize("name", sorted(PLAYED))
def test_equal_to_the_pettingzoo_environment(name: str) -> None:
    config, reward_mode = PLAYED[name]
    seed = 11
    actions = _random_actions(seed, EPISODES)
    ref = _play_pettingzoo(config, reward_mode, seed, actions)
    with jax.enable_x64(True):
        got = _play_jax(config, reward_mode, seed, actions)
    assert sorted(got) == sorted(ref)
    for key in ref:
        diff = np.flatnonzero(np.any((ref[key] != got[key]).reshape(EPISODES, -1), axis=1))
        assert not len(diff), f"{name}: {key} differs in {len(diff)} episodes, first {diff[0]}"
    # the random actions reached every outcome the comparison should cover
    assert 0 < ref["info1/validator_0/illegal_action"].sum() < EPISODES
    assert 0 < ref["info1/validator_0/approved"].sum() < EPISODES


def test_float32_agrees_to_float32_precision() -> None:
    """In JAX's default precision the numbers agree to float32's and the outcomes are the same but for episodes at
    a limit's edge (none here in 2000)."""
    config, reward_mode = PLAYED["paper"]
    actions = _random_actions(5, EPISODES)
    ref = _play_pettingzoo(config, reward_mode, 5, actions)
    got = _play_jax(config, reward_mode, 5, actions)
    assert got["obs1/validator_0"].dtype == np.float32
    for key in ref:
        np.testing.assert_allclose(got[key].astype(np.float64), ref[key].astype(np.float64), atol=2e-5, err_msg=key)
    for key in ("info1/validator_0/approved", "info1/validator_0/audited", "info1/validator_0/compliant"):
        assert np.array_equal(got[key], ref[key])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_other_claim_schemas_are_refused(name: str) -> None:
    config, _ = REFUSED[name]
    with pytest.raises(ValueError, match=r"paper's claim schema only \(claim_schema='rich'\)"):
        jax_engine.params_from_config(config)
    with pytest.raises(ValueError, match="reward_mode must be one of"):
        jax_engine.params_from_config(ExchangeAuditConfig(), "shared")


class _Artifacts:
    """A batchable proposer sending given artifacts (rows of choices), one per episode, in order."""

    role = "proposer"

    def __init__(self, choices: np.ndarray) -> None:
        self.choices = choices

    def reset(self, seed: int | None = None) -> None:
        pass

    def act_batch(self, views):  # type: ignore[no-untyped-def]
        return artifact_submissions(views, self.choices[: views.n])


@pytest.mark.parametrize(
    "config",
    [
        ExchangeAuditConfig(),
        ExchangeAuditConfig(q=1.0, B=1),
        ExchangeAuditConfig(q=0.6, audit_delayed=True),
        ExchangeAuditConfig(ambiguous_rate=1.0, regime="text_only"),
    ],
    ids=["paper", "spot-check", "delayed", "ambiguous-text-only"],
)
def test_rule_validator_equals_the_batch_engines(config: ExchangeAuditConfig) -> None:
    """The JAX rule validator playing random artifacts decides as the numpy batch engine's rule engine, and the
    payoffs are the batch engine's (the JAX engine against the numpy batch engine, episode by episode)."""
    n = 3000
    index = np.random.default_rng(2).integers(0, 648, n)
    cols = simulate(config, _Artifacts(all_artifacts()[index]), make_policy("rule", "validator"), episodes=n, seed=4)

    def episode(d: jax_engine.Draws, artifact: jax.Array) -> tuple:
        params = jax_engine.params_from_config(config, "individual")  # (float64: made under enable_x64)
        _, state = jax_engine.reset_from_draws(d, params)
        _, state, *_ = jax_engine.step_env(None, state, jnp.stack([artifact, 0]), params)
        decision = jax_engine.rule_validator(state, params)
        _, state, *_ = jax_engine.step_env(None, state, jnp.stack([0, decision]), params)
        return state.approved, state.proposer_payoff, state.validator_payoff

    with jax.enable_x64(True):
        approved, proposer, validator = jax.jit(jax.vmap(episode))(
            jax_engine.numpy_draws(config, 4, n), jnp.asarray(index)
        )
    assert np.array_equal(np.asarray(approved), cols["approved"])
    assert np.array_equal(np.asarray(proposer), cols["proposer_payoff"])
    assert np.array_equal(np.asarray(validator), cols["validator_payoff"])
    assert 0 < cols["approved"].mean() < 1


def test_jaxmarl_interface() -> None:
    from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    from jaxmarl.wrappers.baselines import LogWrapper

    env = jax_engine.ExchangeAuditJax(ExchangeAuditConfig(q=0.5), reward_mode="individual")
    assert isinstance(env, MultiAgentEnv)
    assert env.agents == list(AGENTS) and env.num_agents == 2
    assert env.action_space("proposer_0").n == 648 and env.action_space("validator_0").n == 2
    assert env.observation_space("validator_0").shape == (20,)
    assert env.agent_classes == {"proposer": ["proposer_0"], "validator": ["validator_0"]}
    wrapped = LogWrapper(env)
    n = 64
    keys = jax.random.split(jax.random.PRNGKey(0), n)
    obs, state = jax.vmap(wrapped.reset)(keys)
    assert obs["proposer_0"].shape == (n, 16)
    for space_agent in AGENTS:
        assert bool(jnp.all(jax.vmap(env.observation_space(space_agent).contains)(obs[space_agent])))

    @jax.jit
    def two_steps(state, key):  # type: ignore[no-untyped-def]
        k1, k2, k3 = jax.random.split(key, 3)
        masks = jax.vmap(env.get_avail_actions)(state.env_state)
        assert masks["proposer_0"].shape == (n, 648)
        acts = {"proposer_0": jax.random.randint(k1, (n,), 0, 648), "validator_0": jnp.zeros(n, jnp.int32)}
        _, state, rewards, dones, infos = jax.vmap(wrapped.step)(jax.random.split(k2, n), state, acts)
        acts = {"proposer_0": jnp.zeros(n, jnp.int32), "validator_0": jnp.ones(n, jnp.int32)}
        _, state, rewards, dones, infos = jax.vmap(wrapped.step)(jax.random.split(k3, n), state, acts)
        return state, rewards, dones, infos

    state, rewards, dones, infos = two_steps(state, jax.random.PRNGKey(1))
    assert bool(jnp.all(dones["__all__"]))
    # JaxMARL's auto-reset: every environment is back in a new episode's proposal phase
    assert bool(jnp.all(state.env_state.phase == 0))
    # LogWrapper's episode returns are the payoffs of the episodes just played
    assert np.allclose(np.asarray(infos["returned_episode_returns"][:, 0]), np.asarray(rewards["proposer_0"]))
    assert bool(jnp.all(infos["returned_episode"]))


def test_same_key_same_episodes_and_vmap_over_configurations() -> None:
    params = jax_engine.params_from_config(ExchangeAuditConfig())
    key = jax.random.PRNGKey(3)
    a, b = jax_engine.reset(key, params)[1], jax_engine.reset(key, params)[1]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(jax_engine.reset(jax.random.PRNGKey(4), params)[1].true_risk, a.true_risk)
    # several audit intensities in one vmap equal each played alone
    qs = [0.0, 0.3, 1.0]
    stacked = jax.tree.map(
        lambda *xs: jnp.stack(xs), *[jax_engine.params_from_config(ExchangeAuditConfig(q=q)) for q in qs]
    )
    draws = jax_engine.numpy_draws(ExchangeAuditConfig(), 1, 1)
    one = jax_engine.Draws(*(d[0] for d in draws))

    def audited(p: jax_engine.Params) -> jax.Array:
        _, s = jax_engine.reset_from_draws(one, p)
        _, s, *_ = jax_engine.step_env(None, s, jnp.array([647, 0]), p)
        return s.outcome

    together = jax.vmap(audited)(stacked)
    alone = [audited(jax_engine.params_from_config(ExchangeAuditConfig(q=q))) for q in qs]
    assert np.array_equal(np.asarray(together), np.asarray(alone))


def test_actions_outside_their_spaces() -> None:
    """A jitted step cannot raise: a proposer action beyond the artifact space plays its last artifact (clipped),
    one below plays the first; a validator action other than 1 blocks."""
    params = jax_engine.params_from_config(ExchangeAuditConfig(q=0.0))
    _, start = jax_engine.reset(jax.random.PRNGKey(5), params)

    def submitted(artifact: int) -> jax_engine.State:
        return jax_engine.step_env(None, start, jnp.array([artifact, 0]), params)[1]

    for outside, inside in ((10_000, 647), (-3, 0)):
        assert all(np.array_equal(a, b) for a, b in zip(submitted(outside), submitted(inside), strict=True))
    proposed = submitted(647)  # a REQUEST_APPROVAL
    for decision, approved in ((7, False), (-1, False), (1, True)):
        state = jax_engine.step_env(None, proposed, jnp.array([0, decision]), params)[1]
        assert bool(state.approved) is approved and not bool(state.illegal)
