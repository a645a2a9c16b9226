"""Multi-agent PPO with action masks, environment and learner under one ``jit`` (the PureJaxRL / JaxMARL style).

Needs the ``jax`` extra (``pip install 'eq-env[jax]'``). It knows no game: it trains on any JaxMARL
``MultiAgentEnv`` whose ``get_avail_actions`` gives each agent's legal actions (the games' JAX engines:
``eq_env.exchange_audit.jax_engine.ExchangeAuditJax``).

* **Who learns**: ``learners`` names the agents that learn; every other agent is played by its ``partners``
  function ``(key, state, obs, avail) -> action`` (a scripted policy written in JAX, e.g. the exchange–audit rule
  validator, :func:`eq_env.exchange_audit.jax_engine.rule_validator`), unbatched (it is vmapped over the
  environments). ``shared=True``: the learners share one actor and one critic (parameter sharing; their
  observations and action spaces must be the same size); else each has its own (independent PPO).
* **Masks**: the actor's logits of illegal actions are set to a large negative number before the softmax, so an
  illegal action is never sampled and an agent with one legal action (a turn-based game's idle agent) learns
  nothing from that step (its log-probability is 0 whatever the weights).
* **One jit**: :func:`make_train` returns ``train(key) -> TrainResult``; ``jax.jit(train)`` runs the whole
  training (rollouts with ``lax.scan``, GAE, epochs of minibatch updates) as one XLA program, and
  ``jax.vmap(train)`` trains several seeds at once.

The result's ``params`` are plain arrays: :func:`eq_env.baselines.jax_policy.save` writes them, and
:class:`~eq_env.baselines.jax_policy.JaxPPOPolicy` plays them in numpy (no JAX needed to play a trained policy).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from eq_env.baselines.jax_policy import MASKED, _mlp, mlp_logits

__all__ = ["PPOConfig", "TrainResult", "Trained", "config_dict", "make_train", "run_training"]
Partner = Callable[[jax.Array, Any, dict[str, jax.Array], dict[str, jax.Array]], jax.Array]


@dataclass(frozen=True)
class PPOConfig:
    """PPO's hyperparameters. ``total_timesteps`` counts environment steps summed over the environments."""

    total_timesteps: int = 200_000
    num_envs: int = 256
    num_steps: int = 8  # steps per environment per update
    update_epochs: int = 4
    num_minibatches: int = 4
    lr: float = 3e-3
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: tuple[int, ...] = (64, 64)

    def __post_init__(self) -> None:
        for name in ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PPOConfig.{name} must be a positive integer, got {value!r}")
        for name in ("lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef", "max_grad_norm"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise ValueError(f"PPOConfig.{name} must be a finite number >= 0, got {value!r}")
        if not 0 < self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError(f"PPOConfig: gamma must be in (0, 1] and gae_lambda in [0, 1] ({self.gamma}, "
                             f"{self.gae_lambda})")  # fmt: skip
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"PPOConfig: num_envs * num_steps ({self.num_envs * self.num_steps}) must divide into "
                f"num_minibatches ({self.num_minibatches})"
            )
        if self.updates < 1:
            raise ValueError(
                f"PPOConfig.total_timesteps ({self.total_timesteps}) is less than one update "
                f"(num_envs * num_steps = {self.num_envs * self.num_steps})"
            )

    @property
    def updates(self) -> int:
        return self.total_timesteps // (self.num_envs * self.num_steps)


class TrainResult(NamedTuple):
    """``params``: per learner (or ``"shared"``) its actor's and critic's layers; ``returns``: per update, the mean
    return of the episodes that ended in it, per learner (NaN where none ended)."""

    params: dict[str, Any]
    returns: dict[str, jax.Array]


def _init_mlp(key: jax.Array, sizes: Sequence[int], last_scale: float) -> list[dict[str, jax.Array]]:
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        scale = last_scale if i == len(sizes) - 2 else float(np.sqrt(2))
        w = jax.nn.initializers.orthogonal(scale)(keys[i], (n_in, n_out), jnp.float32)
        layers.append({"w": w, "b": jnp.zeros(n_out, jnp.float32)})
    return layers


def _sample(key: jax.Array, logp: jax.Array) -> jax.Array:
    """One action per row from its log-probabilities by the inverse of the cumulative distribution: one uniform
    per row (``jax.random.categorical`` draws a Gumbel per action, 648 per proposer step, which was most of a
    rollout's time on a CPU). A masked action has probability 0 and is never drawn."""
    cdf = jax.lax.associative_scan(jnp.add, jnp.exp(logp), axis=-1)  # (XLA's CPU cumsum is quadratic: 2x slower)
    u = jax.random.uniform(key, (*logp.shape[:-1], 1)) * cdf[..., -1:]
    legal = logp > MASKED / 2
    index = jnp.sum(cdf <= u, axis=-1)
    last = logp.shape[-1] - 1 - jnp.argmax(legal[..., ::-1], axis=-1)  # (rounding at the top: the last legal one)
    return jnp.minimum(index, last).astype(jnp.int32)


class _Transition(NamedTuple):
    obs: Any
    mask: Any
    action: Any
    logp: Any
    value: Any
    reward: Any
    done: Any


def make_train(
    env: Any,
    config: PPOConfig,
    learners: Sequence[str] | None = None,
    partners: Mapping[str, Partner] | None = None,
    *,
    shared: bool = False,
) -> Callable[[jax.Array], TrainResult]:
    """PPO on ``env`` (a JaxMARL ``MultiAgentEnv``): ``train(key) -> TrainResult``, pure, for ``jax.jit``/``vmap``.

    ``learners``: the agents that learn (default: all); ``partners``: a function per other agent. ``shared``: one
    network for all learners."""
    learners = list(env.agents if learners is None else learners)
    partners = dict(partners or {})
    unknown = [a for a in (*learners, *partners) if a not in env.agents]
    if unknown:
        raise ValueError(f"no agent {unknown[0]!r} in {env.name} (its agents: {', '.join(env.agents)})")
    both = sorted(set(learners) & set(partners))
    if both:
        raise ValueError(f"{both[0]!r} is both a learner and a partner")
    missing = [a for a in env.agents if a not in learners and a not in partners]
    if missing:
        raise ValueError(f"agent {missing[0]!r} neither learns nor has a partner policy (partners={{...}})")
    if not learners:
        raise ValueError("no agent learns (learners is empty)")
    sizes = {a: (int(np.prod(env.observation_space(a).shape)), int(env.action_space(a).n)) for a in learners}
    if shared and len(set(sizes.values())) > 1:
        raise ValueError(f"shared=True needs the learners' observation and action sizes to be equal, got {sizes}")
    nets = ["shared"] if shared else learners
    net_of = {a: ("shared" if shared else a) for a in learners}
    c = config
    batch = c.num_envs * c.num_steps  # (each network's batch is split into num_minibatches, whatever its size)

    def schedule(count: jax.Array) -> jax.Array:
        frac = 1.0 - (count // (c.num_minibatches * c.update_epochs)) / c.updates
        return c.lr * frac if c.anneal_lr else jnp.asarray(c.lr)

    tx = optax.chain(optax.clip_by_global_norm(c.max_grad_norm), optax.adam(schedule, eps=1e-5))

    def init(key: jax.Array) -> dict[str, Any]:
        out = {}
        for i, net in enumerate(nets):
            n_obs, n_act = sizes[learners[0] if shared else net]
            ka, kc = jax.random.split(jax.random.fold_in(key, i))
            out[net] = {
                "actor": _init_mlp(ka, (n_obs, *c.hidden, n_act), 0.01),
                "critic": _init_mlp(kc, (n_obs, *c.hidden, 1), 1.0),
            }
        return out

    def loss(params: Any, t: _Transition, advantages: jax.Array, targets: jax.Array) -> jax.Array:
        logits = mlp_logits(params, t.obs, t.mask, jnp)
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, t.action[:, None], axis=1)[:, 0]
        entropy = -jnp.sum(jnp.where(t.mask, jnp.exp(logp_all) * logp_all, 0.0), axis=1)
        value = _mlp(params["critic"], t.obs, jnp)[:, 0]
        v_clipped = t.value + jnp.clip(value - t.value, -c.clip_eps, c.clip_eps)
        v_loss = 0.5 * jnp.maximum((value - targets) ** 2, (v_clipped - targets) ** 2).mean()
        ratio = jnp.exp(logp - t.logp)
        adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c.clip_eps, 1 + c.clip_eps) * adv).mean()
        return pg + c.vf_coef * v_loss - c.ent_coef * entropy.mean()

    def gae(t: _Transition, last_value: jax.Array) -> tuple[jax.Array, jax.Array]:
        def back(carry: Any, x: _Transition) -> Any:
            next_adv, next_value = carry
            nonterminal = 1.0 - x.done
            delta = x.reward + c.gamma * next_value * nonterminal - x.value
            adv = delta + c.gamma * c.gae_lambda * nonterminal * next_adv
            return (adv, x.value), adv

        _, adv = jax.lax.scan(back, (jnp.zeros_like(last_value), last_value), t, reverse=True)
        return adv, adv + t.value

    def train(key: jax.Array) -> TrainResult:
        k_init, k_env, k_loop = jax.random.split(key, 3)
        params = init(k_init)
        opt = {net: tx.init(params[net]) for net in nets}
        obs, state = jax.vmap(env.reset)(jax.random.split(k_env, c.num_envs))
        running = {a: jnp.zeros(c.num_envs) for a in learners}

        def env_step(carry: Any, key: jax.Array) -> Any:
            params, obs, state, running = carry
            avail = jax.vmap(env.get_avail_actions)(state)
            keys = jax.random.split(key, len(env.agents) + 1)
            actions, out = {}, {}
            for i, agent in enumerate(env.agents):
                if agent in partners:
                    fn = partners[agent]
                    actions[agent] = jax.vmap(fn)(jax.random.split(keys[i], c.num_envs), state, obs, avail).astype(
                        jnp.int32
                    )
                    continue
                p = params[net_of[agent]]
                logits = mlp_logits(p, obs[agent], avail[agent], jnp)
                logp_all = jax.nn.log_softmax(logits)
                action = _sample(keys[i], logp_all)
                logp = jnp.take_along_axis(logp_all, action[:, None], axis=1)[:, 0]
                out[agent] = (obs[agent], avail[agent], action, logp, _mlp(p["critic"], obs[agent], jnp)[:, 0])
                actions[agent] = action
            next_obs, state, rewards, dones, _ = jax.vmap(env.step)(
                jax.random.split(keys[-1], c.num_envs), state, actions
            )
            done = dones["__all__"]
            trans, ended = {}, {}
            for agent in learners:
                o, m, a, lp, v = out[agent]
                trans[agent] = _Transition(o, m, a, lp, v, rewards[agent], done.astype(jnp.float32))
                total = running[agent] + rewards[agent]
                ended[agent] = (jnp.where(done, total, 0.0).sum(), done.sum())
                running = {**running, agent: jnp.where(done, 0.0, total)}
            return (params, next_obs, state, running), (trans, ended)

        def update(carry: Any, key: jax.Array) -> Any:
            params, opt, obs, state, running = carry
            k_roll, k_epochs = jax.random.split(key)
            (params, obs, state, running), (trans, ended) = jax.lax.scan(
                env_step, (params, obs, state, running), jax.random.split(k_roll, c.num_steps)
            )
            data: dict[str, Any] = {}
            for agent in learners:
                p = params[net_of[agent]]
                adv, targets = gae(trans[agent], _mlp(p["critic"], obs[agent], jnp)[:, 0])
                flat = jax.tree.map(lambda x: x.reshape(batch, *x.shape[2:]), (trans[agent], adv, targets))
                data.setdefault(net_of[agent], []).append(flat)
            for net in nets:  # (shared: every learner's samples in one batch)
                parts = data[net]
                data[net] = jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts) if len(parts) > 1 else parts[0]

            def epoch(carry: Any, key: jax.Array) -> Any:
                params, opt = carry
                new_params, new_opt = dict(params), dict(opt)
                for i, net in enumerate(nets):
                    t, adv, targets = data[net]
                    n = adv.shape[0]
                    perm = jax.random.permutation(jax.random.fold_in(key, i), n)
                    mb = n // c.num_minibatches
                    shuffled = jax.tree.map(
                        lambda x, perm=perm, mb=mb: x[perm].reshape(c.num_minibatches, mb, *x.shape[1:]),
                        (t, adv, targets),
                    )

                    def minibatch_step(carry: Any, b: Any) -> Any:
                        p, o = carry
                        grads = jax.grad(loss)(p, *b)
                        updates, o = tx.update(grads, o)
                        return (optax.apply_updates(p, updates), o), None

                    (new_params[net], new_opt[net]), _ = jax.lax.scan(minibatch_step, (params[net], opt[net]), shuffled)
                return (new_params, new_opt), None

            (params, opt), _ = jax.lax.scan(epoch, (params, opt), jax.random.split(k_epochs, c.update_epochs))
            returns = {a: ended[a][0].sum() / ended[a][1].sum() for a in learners}  # NaN: no episode ended
            return (params, opt, obs, state, running), returns

        (params, *_), returns = jax.lax.scan(
            update, (params, opt, obs, state, running), jax.random.split(k_loop, c.updates)
        )
        return TrainResult(params, returns)

    return train


class Trained(NamedTuple):
    """:func:`run_training`'s result: the networks as numpy arrays, each learner's returns per update (None where
    no episode ended), and the seconds spent tracing and compiling and training."""

    params: dict[str, Any]
    returns: dict[str, list[float | None]]
    compile_seconds: float
    train_seconds: float


def run_training(train: Callable[[jax.Array], TrainResult], seed: int) -> Trained:
    """Compile ``train`` (from :func:`make_train`) and run it from ``PRNGKey(seed)``, timing each part."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an integer in [0, 2**32), got {seed!r}")
    import time

    start = time.perf_counter()
    compiled = jax.jit(train).lower(jax.random.PRNGKey(seed)).compile()
    compiled_at = time.perf_counter()
    result = jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
    done = time.perf_counter()
    returns = {a: [None if not np.isfinite(x) else float(x) for x in np.asarray(r)] for a, r in result.returns.items()}
    return Trained(jax.tree.map(np.asarray, result.params), returns, compiled_at - start, done - compiled_at)


def config_dict(config: PPOConfig) -> dict[str, Any]:
    """The hyperparameters as JSON values."""
    out = asdict(config)
    out["hidden"] = list(config.hidden)
    return out
