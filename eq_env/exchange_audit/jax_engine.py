"""The exchange–audit game as pure JAX functions that jit and vmap, with JaxMARL's ``MultiAgentEnv`` interface.

Needs the ``jax`` extra (``pip install 'eq-env[jax]'``: JAX, JaxMARL, optax); ``import eq_env`` does not import it.

================  ==========================================================================================
agents            ``proposer_0``, ``validator_0`` (two steps per episode: the proposal, then the decision)
observations      the numeric observation mode's features: ``Box(16)`` for the proposer, ``Box(20)`` for the
                  validator (:mod:`eq_env.exchange_audit.features`), float32
actions           ``Discrete(648)`` for the proposer (the artifact space, numbered in C order), ``Discrete(2)``
                  for the validator (0 block, 1 approve)
action masks      :func:`avail_actions` (JaxMARL's ``get_avail_actions``): the agent whose phase it is not
                  has only its no-op, 0; the validator may approve only a REQUEST_APPROVAL
rewards           at the decision: both the welfare (``reward_mode="welfare"``) or each its own payoff
                  (``"individual"``); an approval after a NO_TRADE ends the episode as the PettingZoo
                  environment's ``illegal_actions="terminate"`` does (validator −1, proposer 0, infos of the
                  blocked NO_TRADE, ``illegal_action`` 1)
================  ==========================================================================================

The functions are the game's rules, nothing else::

    params = params_from_config(ExchangeAuditConfig(q=0.3))     # a pytree of arrays: vmap over it too
    obs, state = reset(key, params)
    obs, state, rewards, dones, infos = step_env(key, state, actions, params)   # actions: [proposer, validator]

:class:`ExchangeAuditJax` wraps them in JaxMARL's ``MultiAgentEnv`` (``reset(key)``, ``step(key, state, actions)``
with JaxMARL's auto-reset, ``get_avail_actions``, ``observation_space``/``action_space``), so JaxMARL's wrappers
and baselines run on it.

**Equal to the PettingZoo environment.** :func:`reset_from_draws` takes an episode's chance outcomes as the
numpy environment draws them (:class:`~eq_env.exchange_audit.rules.DrawStream`: 8 state uniforms, 4 noise
normals, 5 audit uniforms, and the noisy audits' 4 check uniforms); given those and the same actions, the
observations, masks, rewards, terminations and infos equal ``exchange_audit_v0.parallel_env(
observation_mode="numeric")``'s, episode by episode (``tests/jax``, thousands of random episodes per
configuration). Bit for bit with ``jax.config.update("jax_enable_x64", True)`` (the numpy engine computes in
float64); in JAX's default float32 the same arithmetic rounds differently, so a number may differ in its last
float32 digits and, rarely, an episode at a limit's edge (an ambiguous position is within 8% of it) may be
judged the other way. :func:`reset` draws its own chance outcomes from ``key`` with ``jax.random``: the same
distribution, not the numpy stream.

What it plays: the paper's claim schema, every audit intensity and budget, noisy and delayed audits, the
free-text regimes, both cost models, ``reveal_compliance``. Refused with a ValueError naming the field: other
claim schemas (their artifact spaces are larger; the PettingZoo environment plays them). A jitted function cannot
raise: a proposer action outside ``[0, 648)`` is clipped into it and a validator action other than 1 blocks, where
the PettingZoo environment raises.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from eq_env.core.jax_support import jaxmarl_base
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.features import ARTIFACT_NVEC, ARTIFACT_WORDS, N_ARTIFACTS, SHADE
from eq_env.exchange_audit.rules import (
    AMBIGUOUS_HEDGE_SIZE,
    AMBIGUOUS_MARGIN,
    HEDGE_DELTA_SD,
    HEDGE_HEDGE_SIZE,
    HEDGE_RISK,
    N_AUDIT_UNIFORMS,
    N_CHECK_UNIFORMS,
    N_NOISE_NORMALS,
    N_STATE_UNIFORMS,
    SPECULATE_DELTA_MAX,
    SPECULATE_DELTA_MEAN,
    SPECULATE_DELTA_SD,
    SPECULATE_HEDGE_SIZE,
    SPECULATE_RISK,
    DrawStream,
)
from eq_env.exchange_audit.spaces import NUMBER_BOUNDS

__all__ = [
    "AGENTS",
    "REWARD_MODES",
    "Draws",
    "ExchangeAuditJax",
    "Params",
    "State",
    "avail_actions",
    "draw",
    "numpy_draws",
    "observations",
    "params_from_config",
    "reset",
    "reset_from_draws",
    "rule_validator",
    "step_env",
]

AGENTS = ("proposer_0", "validator_0")
REWARD_MODES = ("welfare", "individual")
PROPOSAL, DECISION, DONE = 0, 1, 2  # the phases, as the PettingZoo environment numbers them
SKIPPED, PASS, FAIL, INCONCLUSIVE = 0, 1, 2, 3  # AuditOutcome
HEDGE, SPECULATE = 0, 1  # Intent
ABSENT = -1  # a claim not made (else its value: the intent's code, or 0/1)
N_PROPOSER_FEATURES, N_VALIDATOR_FEATURES = 16, 20
_REGIMES = {"artifacts": 0, "text_only": 1, "action_only": 2}
_NVEC = np.array(ARTIFACT_NVEC)
_RADIX = np.array([int(np.prod(ARTIFACT_NVEC[i + 1 :])) for i in range(len(ARTIFACT_NVEC))])


class Params(NamedTuple):
    """One configuration as arrays (a pytree: jit once, vmap over several). Made by :func:`params_from_config`."""

    q: Any
    checks: Any  # the audit budget capped at the pool (ExchangeAuditConfig.checks_per_audit), int
    V: Any
    L: Any
    alpha: Any
    audit_cost: Any
    max_words: Any  # int
    ambiguous_rate: Any
    noise_sd: Any
    delta_limit: Any
    risk_limit_low: Any
    risk_limit_high: Any
    safe_margin: Any
    no_trade_payoff: Any
    bad_approval_loss: Any
    cost_in_tokens: Any  # bool
    reveal_compliance: Any  # bool
    false_fail: Any  # (4,) per checkable claim
    miss: Any  # (4,)
    audit_delayed: Any  # bool
    regime: Any  # int: 0 artifacts, 1 text_only, 2 action_only
    individual: Any  # bool: reward_mode == "individual"


def params_from_config(config: ExchangeAuditConfig | None = None, reward_mode: str = "welfare") -> Params:
    """The :class:`Params` of ``config`` (default: the paper's) and ``reward_mode`` (``"welfare"`` or
    ``"individual"``, as the PettingZoo environment's)."""
    config = ExchangeAuditConfig() if config is None else config
    if not isinstance(config, ExchangeAuditConfig):
        raise TypeError(f"config must be an ExchangeAuditConfig, got {type(config).__name__}")
    if config.claim_schema != "paper":
        raise ValueError(
            f"the JAX engine plays the paper's claim schema only (claim_schema={config.claim_schema!r}); "
            "the PettingZoo environment plays any"
        )
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
    f = partial(jnp.asarray, dtype=float)
    return Params(
        q=f(config.q),
        checks=jnp.asarray(config.checks_per_audit, dtype=jnp.int32),
        V=f(config.V),
        L=f(config.L),
        alpha=f(config.alpha),
        audit_cost=f(config.audit_cost),
        max_words=jnp.asarray(config.max_words, dtype=jnp.int32),
        ambiguous_rate=f(config.ambiguous_rate),
        noise_sd=f(config.noise_sd),
        delta_limit=f(config.delta_limit),
        risk_limit_low=f(config.risk_limit_low),
        risk_limit_high=f(config.risk_limit_high),
        safe_margin=f(config.safe_margin),
        no_trade_payoff=f(config.no_trade_payoff),
        bad_approval_loss=f(config.bad_approval_loss),
        cost_in_tokens=jnp.asarray(config.cost_model == "tokens"),
        reveal_compliance=jnp.asarray(config.reveal_compliance),
        false_fail=f(config.false_fail_rates),
        miss=f(config.miss_rates),
        audit_delayed=jnp.asarray(config.audit_delayed),
        regime=jnp.asarray(_REGIMES[config.regime], dtype=jnp.int32),
        individual=jnp.asarray(reward_mode == "individual"),
    )


class Draws(NamedTuple):
    """An episode's chance outcomes, as :class:`~eq_env.exchange_audit.rules.DrawStream` draws them."""

    u: Any  # (8,) state uniforms
    z: Any  # (4,) noise normals
    a: Any  # (5,) audit uniforms: audited, then a sort key per checkable claim
    c: Any  # (4,) noisy audits' check uniforms


def draw(key: jax.Array, noisy: bool = True) -> Draws:
    """An episode's chance outcomes from ``key`` (``jax.random``: the numpy stream's distribution). ``noisy``
    (static): draw the noisy audits' check uniforms; without, they are zeros (as the numpy engines leave them
    unread), which saves a fifth of the draws."""
    n = N_STATE_UNIFORMS + N_NOISE_NORMALS + N_AUDIT_UNIFORMS + (N_CHECK_UNIFORMS if noisy else 0)
    # one call for every number (each split and each call hashes again: threefry is most of a reset's time)
    v = jax.random.uniform(key, (n,), dtype=float)
    u, rest = v[:N_STATE_UNIFORMS], v[N_STATE_UNIFORMS:]
    w, rest = rest[:N_NOISE_NORMALS], rest[N_NOISE_NORMALS:]
    # normals as jax.random.normal makes them: sqrt(2) erfinv of a uniform on (-1, 1)
    lo = jnp.nextafter(jnp.asarray(-1.0, dtype=w.dtype), jnp.asarray(0.0, dtype=w.dtype))
    z = jnp.sqrt(2.0).astype(w.dtype) * jax.scipy.special.erfinv(jnp.maximum(lo, 2.0 * w - 1.0))
    a = rest[:N_AUDIT_UNIFORMS]
    c = rest[N_AUDIT_UNIFORMS:] if noisy else jnp.zeros(N_CHECK_UNIFORMS, dtype=v.dtype)
    return Draws(u, z, a, c)


def numpy_draws(config: ExchangeAuditConfig, seed: int, episodes: int) -> Draws:
    """Episodes ``0..episodes-1`` of ``seed`` as the PettingZoo environment and the numpy batch engine draw them
    (arrays with a leading episode axis; the check uniforms are zeros unless ``config``'s audits are noisy, as the
    numpy engines read them only then)."""
    stream = DrawStream(seed)
    u, z, a = stream.batch(episodes)
    c = stream.check_noise(0, episodes) if config.noisy_audits else np.zeros((episodes, N_CHECK_UNIFORMS))
    return Draws(u, z, a, c)


class State(NamedTuple):
    """One episode: the position, the submission, the audit and the outcome (every field an array)."""

    phase: Any
    ambiguous: Any
    intent: Any
    risk_limit: Any
    true_risk: Any
    true_net_delta: Any
    hedge_size: Any
    observed: Any  # (3,) observed risk, net delta, hedge size, clipped as the observation space clips them
    audit_u: Any  # (5,)
    check_u: Any  # (4,)
    submitted: Any  # bool: the proposer has sent its submission
    request: Any
    reported_intent: Any
    reported: Any  # (3,) reported risk, net delta, hedge size
    claims: Any  # (3,) intent, risk_within_limit, net_delta_bounded: ABSENT or the value
    words: Any
    tokens: Any
    outcome: Any  # the audit's outcome (what happened, whether or not the validator sees it yet)
    checked: Any  # (4,)
    failed: Any  # (4,)
    revealed: Any  # ABSENT, 0 or 1
    approved: Any
    illegal: Any
    proposer_payoff: Any
    validator_payoff: Any


def _uniform(lo: float, hi: float, u: jax.Array) -> jax.Array:
    return lo + (hi - lo) * u  # the numpy engine's expression, operation for operation


def reset_from_draws(draws: Draws, params: Params) -> tuple[dict[str, jax.Array], State]:
    """The episode of these chance outcomes (the numpy engine's arithmetic, in its order): observations and state."""
    u, z, a, c = (jnp.asarray(x, dtype=float) for x in draws)
    dl = params.delta_limit
    ambiguous = u[0] < params.ambiguous_rate
    risk_limit = params.risk_limit_low + (params.risk_limit_high - params.risk_limit_low) * u[1]
    hedge_intent = u[2] < 0.5
    eps_r = u[6] * (AMBIGUOUS_MARGIN * risk_limit)
    eps_d = u[7] * (AMBIGUOUS_MARGIN * dl)
    sign = jnp.where(u[5] < 0.5, 1.0, -1.0)
    amb_risk, amb_delta = risk_limit - eps_r, sign * (dl - eps_d)
    h_delta = jnp.minimum(jnp.maximum(HEDGE_DELTA_SD * z[0], -dl), dl)
    s_delta = jnp.minimum(jnp.maximum(SPECULATE_DELTA_MEAN + SPECULATE_DELTA_SD * z[0], dl), SPECULATE_DELTA_MAX)
    true_risk = jnp.where(
        ambiguous, amb_risk, jnp.where(hedge_intent, _uniform(*HEDGE_RISK, u[3]), _uniform(*SPECULATE_RISK, u[3]))
    )
    true_delta = jnp.where(ambiguous, amb_delta, jnp.where(hedge_intent, h_delta, s_delta))
    hedge = jnp.where(
        ambiguous,
        _uniform(*AMBIGUOUS_HEDGE_SIZE, u[4]),
        jnp.where(hedge_intent, _uniform(*HEDGE_HEDGE_SIZE, u[4]), _uniform(*SPECULATE_HEDGE_SIZE, u[4])),
    )
    sd = params.noise_sd
    observed = jnp.stack(
        [jnp.maximum(0.0, true_risk + sd * z[1]), true_delta + sd * z[2], jnp.maximum(0.0, hedge + sd * z[3])]
    )
    low, high = (jnp.asarray(b, dtype=observed.dtype) for b in NUMBER_BOUNDS)  # (dtype given: see _submit)
    observed = jnp.minimum(jnp.maximum(observed, low), high)
    zero, no = jnp.zeros((), dtype=float), jnp.zeros((), dtype=bool)
    state = State(
        phase=jnp.int32(PROPOSAL),
        ambiguous=ambiguous,
        intent=jnp.where(ambiguous | hedge_intent, HEDGE, SPECULATE).astype(jnp.int32),
        risk_limit=risk_limit,
        true_risk=true_risk,
        true_net_delta=true_delta,
        hedge_size=hedge,
        observed=observed,
        audit_u=a,
        check_u=c,
        submitted=no,
        request=no,
        reported_intent=jnp.int32(HEDGE),
        reported=jnp.zeros(3, dtype=float),
        claims=jnp.full(3, ABSENT, dtype=jnp.int32),
        words=jnp.int32(0),
        tokens=jnp.int32(0),
        outcome=jnp.int32(SKIPPED),
        checked=jnp.zeros(4, dtype=bool),
        failed=jnp.zeros(4, dtype=bool),
        revealed=jnp.int32(ABSENT),
        approved=no,
        illegal=no,
        proposer_payoff=zero,
        validator_payoff=zero,
    )
    return observations(state, params), state


def reset(key: jax.Array, params: Params, noisy: bool = True) -> tuple[dict[str, jax.Array], State]:
    """A new episode drawn from ``key``: observations and state. ``noisy`` (static, :func:`draw`): False when no
    configuration played has noisy audits (``ExchangeAuditJax`` passes its configuration's)."""
    # (the barrier materialises the draws: without it XLA fuses the generator into each of their uses and runs
    # it several times over, which made a reset four times as slow)
    return reset_from_draws(jax.lax.optimization_barrier(draw(key, noisy)), params)


def _within(state: State, params: Params) -> tuple[jax.Array, jax.Array]:
    return state.true_risk <= state.risk_limit, jnp.abs(state.true_net_delta) <= params.delta_limit


def _submit(state: State, artifact: jax.Array, params: Params) -> State:
    """The proposer's artifact (an index of the artifact space) as its submission, withheld as the regime says,
    and the audit of it."""
    # (module-level numpy constants are converted with their dtype given: JAX caches a numpy constant's conversion
    # across jax.enable_x64 switches, and a float32 copy in a float64 program fails to compile)
    radix, nvec = jnp.asarray(_RADIX, dtype=jnp.int32), jnp.asarray(_NVEC, dtype=jnp.int32)
    c = (jnp.clip(artifact, 0, N_ARTIFACTS - 1).astype(jnp.int32) // radix) % nvec
    risk, delta, hedge = state.observed[0], state.observed[1], state.observed[2]
    inside = params.safe_margin + SHADE  # features.shaded_numbers
    sign = jnp.where(delta < 0, -1.0, 1.0)
    shaded_risk = jnp.maximum(0.0, jnp.minimum(risk, state.risk_limit - inside))
    shaded_delta = sign * jnp.maximum(0.0, jnp.minimum(jnp.abs(delta), params.delta_limit - inside))
    shaded = c[2] == 1
    reported = jnp.stack([jnp.where(shaded, shaded_risk, risk), jnp.where(shaded, shaded_delta, delta), hedge])

    def claim(code: jax.Array, favourable: Any, unfavourable: Any) -> jax.Array:
        return jnp.where(code == 0, ABSENT, jnp.where(code == 1, favourable, unfavourable))

    claims = jnp.stack([claim(c[3], HEDGE, SPECULATE), claim(c[4], 1, 0), claim(c[5], 1, 0)]).astype(jnp.int32)
    words = jnp.minimum(jnp.asarray(ARTIFACT_WORDS, dtype=jnp.int32)[c[6]], params.max_words).astype(jnp.int32)
    # rules.withhold: text_only drops the claims; action_only drops (and does not charge) the text too
    claims = jnp.where(params.regime == 0, claims, ABSENT)
    words = jnp.where(params.regime == 2, 0, words)
    tokens = (4 * words + 2) // 3  # rules.estimated_tokens
    state = state._replace(
        submitted=jnp.ones((), dtype=bool),
        request=c[0] == 1,
        reported_intent=jnp.where(c[1] == 1, HEDGE, state.intent).astype(jnp.int32),
        reported=reported,
        claims=claims,
        words=words,
        tokens=tokens,
    )
    return _audit(state, params)


def _audit(state: State, params: Params) -> State:
    """batch.run_audit_batch for one episode (the paper's pool: intent, risk_within_limit, net_delta_bounded,
    confidence; the artifact space never states a confidence, which an audit then passes)."""
    a, k = state.audit_u, params.checks
    audited = a[0] < params.q
    complete = jnp.all(state.claims != ABSENT)
    inconclusive = audited & ((k <= 0) | ~complete)
    runs = audited & ~inconclusive
    checked = (_ranks(a[1:5]) < k) & runs  # the k smallest keys
    risk_ok, delta_ok = _within(state, params)
    truth = jnp.stack([state.intent, risk_ok.astype(jnp.int32), delta_ok.astype(jnp.int32)])
    ok = jnp.concatenate([state.claims == truth, jnp.ones(1, dtype=bool)])
    made = jnp.array([True, True, True, False])  # (an absent confidence is not a claim: never flipped)
    rates = jnp.where(ok, params.false_fail, params.miss)
    flipped = checked & made & (state.check_u < rates)
    ok = ok != flipped
    compliant = (risk_ok != flipped[1]) & (delta_ok != flipped[2])
    failed = checked & ~ok
    fail = jnp.any(failed)
    outcome = jnp.where(inconclusive, INCONCLUSIVE, jnp.where(runs, jnp.where(fail, FAIL, PASS), SKIPPED))
    return state._replace(
        outcome=outcome.astype(jnp.int32),
        checked=checked,
        failed=failed,
        revealed=jnp.where(runs, compliant.astype(jnp.int32), ABSENT).astype(jnp.int32),
    )


def _ranks(keys: jax.Array) -> jax.Array:
    """Each key's place in ascending order, ties to the lower index (a stable argsort's inverse), by pairwise
    comparison: XLA's sort of four keys per episode cost ten times the rest of a step."""
    i = jnp.arange(keys.shape[-1])
    before = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (i[None, :] < i[:, None]))
    return before.sum(axis=1)


def _decide(state: State, approve: jax.Array, params: Params) -> State:
    """The validator's decision and the payoffs (batch.payoffs_batch); an approval of a NO_TRADE is illegal."""
    approve = approve == 1
    illegal = approve & ~state.request
    approved = approve & state.request
    risk_ok, delta_ok = _within(state, params)
    compliant = risk_ok & delta_ok
    ntp = params.no_trade_payoff
    no_trade = ~state.request
    proposer = jnp.where(no_trade, ntp, jnp.where(approved, params.V, 0.0))
    validator = jnp.where(
        no_trade, ntp, jnp.where(approved, jnp.where(compliant, params.V, -params.bad_approval_loss), 0.0)
    )
    proposer = proposer - params.alpha * jnp.where(params.cost_in_tokens, state.tokens, state.words)
    proposer = jnp.where(state.outcome == FAIL, proposer - params.L, proposer)
    validator = jnp.where(state.outcome != SKIPPED, validator - params.audit_cost, validator)
    return state._replace(
        phase=jnp.int32(DONE),
        approved=approved,
        illegal=illegal,
        proposer_payoff=proposer,
        validator_payoff=validator,
    )


def step_env(
    key: jax.Array, state: State, actions: Any, params: Params
) -> tuple[dict[str, jax.Array], State, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
    """One step: the proposer's artifact in the proposal phase, the validator's decision in the next; the action
    of the agent whose phase it is not is ignored (its mask allows only 0). ``actions``: a dict by agent or an
    array ``[proposer, validator]``. No auto-reset (:meth:`ExchangeAuditJax.step` adds JaxMARL's). ``key`` is
    unused: an episode's chance outcomes are all drawn at reset."""
    del key
    proposer_action, validator_action = (
        (actions[AGENTS[0]], actions[AGENTS[1]]) if isinstance(actions, dict) else (actions[0], actions[1])
    )
    proposed = _submit(state, jnp.asarray(proposer_action, dtype=jnp.int32), params)._replace(phase=jnp.int32(DECISION))
    decided = _decide(state, jnp.asarray(validator_action, dtype=jnp.int32), params)
    in_proposal, in_decision = state.phase == PROPOSAL, state.phase == DECISION
    new = jax.tree.map(
        lambda p, d, s: jnp.where(in_proposal, p, jnp.where(in_decision, d, s)), proposed, decided, state
    )
    ended = in_decision
    welfare = new.proposer_payoff + new.validator_payoff
    reward_p = jnp.where(new.illegal, 0.0, jnp.where(params.individual, new.proposer_payoff, welfare))
    reward_v = jnp.where(new.illegal, -1.0, jnp.where(params.individual, new.validator_payoff, welfare))
    zero = jnp.zeros((), dtype=float)
    rewards = {AGENTS[0]: jnp.where(ended, reward_p, zero), AGENTS[1]: jnp.where(ended, reward_v, zero)}
    done = new.phase == DONE
    dones = {AGENTS[0]: done, AGENTS[1]: done, "__all__": done}
    return observations(new, params), new, rewards, dones, infos(new, params)


def infos(state: State, params: Params) -> dict[str, jax.Array]:
    """The numeric mode's infos (:data:`eq_env.exchange_audit.numeric.INFO_KEYS`), 0 until the episode ends; the
    same for both agents. An illegal approval's are those of the blocked NO_TRADE."""
    done = state.phase == DONE
    risk_ok, delta_ok = _within(state, params)

    def final(x: Any) -> jax.Array:
        return jnp.where(done, jnp.asarray(x, dtype=float), 0.0)

    return {
        "welfare": final(state.proposer_payoff + state.validator_payoff),
        "proposer_payoff": final(state.proposer_payoff),
        "validator_payoff": final(state.validator_payoff),
        "approved": final(state.approved),
        "compliant": final(risk_ok & delta_ok),
        "audited": final(state.outcome != SKIPPED),
        "illegal_action": final(state.illegal),
    }


def _tri(code: jax.Array, favourable: int) -> jax.Array:
    return jnp.where(code == ABSENT, 0.0, jnp.where(code == favourable, 1.0, -1.0))


def observations(state: State, params: Params) -> dict[str, jax.Array]:
    """Both agents' features (float32), as ``features.proposer_features`` and ``validator_features`` compute them."""
    risk, delta, hedge = state.observed[0], state.observed[1], state.observed[2]
    risk_ok, delta_ok = _within(state, params)
    reveal = params.reveal_compliance
    checks = params.checks / 4
    proposer = jnp.stack(
        [
            (state.intent == HEDGE).astype(float),
            risk,
            delta,
            hedge,
            state.risk_limit - risk,
            params.delta_limit - jnp.abs(delta),
            jnp.where(reveal, jnp.where(risk_ok, 1.0, -1.0), 0.0),
            jnp.where(reveal, jnp.where(delta_ok, 1.0, -1.0), 0.0),
            params.q,
            checks,
            params.V,
            params.L,
            params.alpha * 10,
            params.no_trade_payoff,
            params.safe_margin * 10,
            params.noise_sd * 10,
        ]
    )
    # what the validator sees of the audit: nothing yet when the audit is delayed (and before the proposal)
    seen = state.submitted & ~params.audit_delayed
    outcome = jnp.where(seen, state.outcome, SKIPPED)
    revealed = jnp.where(seen, state.revealed, ABSENT)
    rep_risk, rep_delta = state.reported[0], state.reported[1]
    validator = jnp.stack(
        [
            state.request.astype(float),
            (state.reported_intent == HEDGE).astype(float),
            rep_risk,
            rep_delta,
            state.risk_limit - rep_risk,
            params.delta_limit - jnp.abs(rep_delta),
            _tri(state.claims[0], HEDGE),
            _tri(state.claims[1], 1),
            _tri(state.claims[2], 1),
            state.words.astype(float) / 60,
            (outcome != SKIPPED).astype(float),
            (outcome == PASS).astype(float),
            (outcome == FAIL).astype(float),
            (outcome == INCONCLUSIVE).astype(float),
            _tri(revealed, 1),
            state.ambiguous.astype(float),
            params.q,
            checks,
            params.V,
            params.bad_approval_loss / 10,
        ]
    )
    return {AGENTS[0]: proposer.astype(jnp.float32), AGENTS[1]: validator.astype(jnp.float32)}


def avail_actions(state: State, params: Params | None = None) -> dict[str, jax.Array]:
    """The legal actions (bool masks): the proposer's 648 artifacts in the proposal phase, the validator's
    approval only of a REQUEST_APPROVAL in the decision phase; otherwise each agent's no-op, 0, alone."""
    del params
    first = jnp.arange(N_ARTIFACTS) == 0
    proposer = jnp.where(state.phase == PROPOSAL, jnp.ones(N_ARTIFACTS, dtype=bool), first)
    approve = (state.phase == DECISION) & state.request
    return {AGENTS[0]: proposer, AGENTS[1]: jnp.stack([jnp.ones((), dtype=bool), approve])}


def rule_validator(state: State, params: Params) -> jax.Array:
    """The paper's rule engine as the validator's action (1 approve, 0 block): ``rules.rule_decision`` for one
    episode, read from the state as the scripted ``rule`` validator reads its observation (the audit as the
    validator sees it: skipped when delayed)."""
    seen = ~params.audit_delayed
    audited = seen & (state.outcome != SKIPPED)
    audited_ok = seen & (state.outcome == PASS) & (state.revealed == 1)
    rep_risk, rep_delta = state.reported[0], state.reported[1]
    comfortable = (
        (state.reported_intent == HEDGE)
        & ((state.risk_limit - rep_risk) > params.safe_margin)
        & ((params.delta_limit - jnp.abs(rep_delta)) > params.safe_margin)
    )
    within = (rep_risk <= state.risk_limit) & (jnp.abs(rep_delta) <= params.delta_limit)
    explained = jnp.any(state.claims != ABSENT) | (state.words > 0)
    asserts = (state.claims[0] == HEDGE) & (state.claims[1] == 1) & (state.claims[2] == 1)
    ambiguous_ok = (explained | comfortable) & jnp.where(audited, audited_ok, comfortable | asserts)
    normal_ok = jnp.where(audited, audited_ok, within)
    return (state.request & jnp.where(state.ambiguous, ambiguous_ok, normal_ok)).astype(jnp.int32)


_MultiAgentEnv, _spaces = jaxmarl_base()


class ExchangeAuditJax(_MultiAgentEnv):  # type: ignore[misc, valid-type]
    """The exchange–audit game as a JaxMARL ``MultiAgentEnv`` (see the module docstring).

    ``ExchangeAuditJax(config=None, reward_mode="welfare")``; ``env.params`` is the :class:`Params` it plays (the
    functions take others, for a vmap over configurations).
    """

    def __init__(self, config: ExchangeAuditConfig | None = None, reward_mode: str = "welfare") -> None:
        super().__init__(num_agents=2)
        self.config = ExchangeAuditConfig() if config is None else config
        self.params = params_from_config(self.config, reward_mode)
        self.reward_mode = reward_mode
        self.agents = list(AGENTS)
        bound = 1e6  # views.FEATURE_BOUND
        self.observation_spaces = {
            AGENTS[0]: _spaces.Box(-bound, bound, (N_PROPOSER_FEATURES,), jnp.float32),
            AGENTS[1]: _spaces.Box(-bound, bound, (N_VALIDATOR_FEATURES,), jnp.float32),
        }
        self.action_spaces = {AGENTS[0]: _spaces.Discrete(N_ARTIFACTS), AGENTS[1]: _spaces.Discrete(2)}

    def __repr__(self) -> str:
        return f"ExchangeAuditJax(config={self.config!r}, reward_mode={self.reward_mode!r})"

    @partial(jax.jit, static_argnums=(0,))
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], State]:
        return reset(key, self.params, self.config.noisy_audits)

    @partial(jax.jit, static_argnums=(0,))
    def step_env(
        self, key: jax.Array, state: State, actions: dict[str, jax.Array]
    ) -> tuple[dict[str, jax.Array], State, dict[str, jax.Array], dict[str, jax.Array], dict[str, jax.Array]]:
        return step_env(key, state, actions, self.params)

    def get_obs(self, state: State) -> dict[str, jax.Array]:
        return observations(state, self.params)

    @partial(jax.jit, static_argnums=(0,))
    def get_avail_actions(self, state: State) -> dict[str, jax.Array]:
        return avail_actions(state, self.params)

    @property
    def name(self) -> str:
        return "ExchangeAudit"

    @property
    def agent_classes(self) -> dict[str, list[str]]:
        return {"proposer": [AGENTS[0]], "validator": [AGENTS[1]]}
