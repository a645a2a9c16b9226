"""Single-agent Gymnasium views of the exchange–audit game, one per role, for RL.

``gymnasium.make("eq_env/ExchangeAuditProposer-v0", validator="rule", **config)``
plays the proposer against a fixed validator; ``gymnasium.make(
"eq_env/ExchangeAuditValidator-v0", proposer="honest", **config)`` plays the
validator against a fixed proposer. The other role is any policy (a spec or an
object: scripted, LLM, or a trained model via ``sb3:path=...``). Each step is
one whole episode of the game (it is one-shot), so every episode ends after
one step.

* Observations: the role's observation as a flat float32 vector
  (:func:`~eq_env.exchange_audit.features.proposer_features`,
  :func:`~eq_env.exchange_audit.features.validator_features`); the free text
  is left out.
* Proposer actions: the discrete artifact space of
  :mod:`eq_env.exchange_audit.features`, as ``MultiDiscrete([2,2,2,3,3,3,3])``
  (``action_encoding="multidiscrete"``, for PPO) or ``Discrete(648)``
  (``"discrete"``, for DQN).
* Validator actions: ``Discrete(2)`` (0 BLOCK, 1 APPROVE). Episodes where the
  proposer sends NO_TRADE leave nothing to decide and are skipped
  (``skip_no_trade=True``); with ``skip_no_trade=False`` they are shown and
  ``action_masks()`` forbids APPROVE (for sb3-contrib's MaskablePPO; plain PPO's
  APPROVE there counts as BLOCK, flagged ``illegal_action`` in the info).
* Rewards: ``reward_mode="individual"`` (default) the role's own payoff,
  ``"welfare"`` the joint welfare.
* ``audit_intensities=[...]`` draws the audit intensity q of each episode
  from that list (the observation shows it), to train one policy for many q.
  (``q_values``, its earlier name, still works and warns.)
* Info: the AEC environment's final info, the game's episode index under
  ``"episode_index"`` (``"episode"`` is what Gymnasium's
  ``RecordEpisodeStatistics`` and SB3's ``Monitor`` write their episode
  statistics under).
* ``render_mode``: ``"ansi"`` (the episode as text), ``"human"`` (printed) or
  ``"rgb_array"`` (that text as a picture, one shape for every frame:
  :mod:`eq_env.core.render`, for ``RecordVideo``). Under ``"ansi"`` and
  ``"rgb_array"`` a view keeps its fast path (below) and builds the picture
  only when ``render()`` is called: it replays the current episode (its
  stream's seed, or the entropy an unseeded run drew once, the episode index,
  the partner as it stood, the actions so far) in an AEC environment of its
  own, so the frame is the AEC path's. SB3's ``make_vec_env(id)``, which asks
  for ``"rgb_array"``, so steps as fast as with ``render_mode=None``
  (``benchmarks/view_step.py``: 1.03-1.10x). ``"human"`` prints on every step
  (the AEC environment's own render), so it plays through the AEC environment.
* An unknown keyword (``gymnasium.make(id, frameskip=1)``) is a ``TypeError``;
  a bad value a ``ValueError``. A view pickles (``AsyncVectorEnv`` with
  ``context="spawn"``: give its workers ``gymnasium.make("eq_env:<id>")`` or
  the ``EnvSpec``, since a spawned process starts without the registrations).

Train with one torch thread on a small machine: torch's default, a thread per
core, makes each update of SB3's small networks contend (``eq-env train`` sets
one; ``benchmarks/torch_threads.py`` measures the cost)::

    import torch
    from stable_baselines3 import PPO
    torch.set_num_threads(1)
    model = PPO("MlpPolicy", gymnasium.make("eq_env/ExchangeAuditProposer-v0"))

Speed: with a scripted partner (the rule, approve and block validators; the
honest, silent and strategic proposers) a view does not drive the AEC
environment. It draws its episodes in blocks from the same seeded streams and
works them out with the batch engine's arithmetic
(:mod:`eq_env.exchange_audit.batch`); the proposer's step then plays the
audit, the partner's decision and the payoffs on plain Python numbers, and
the validator's step only picks the payoff of its decision (what the proposer
sends does not depend on it). Observations, rewards and infos equal those of
the AEC-driven play episode by episode, for the same seed (a test compares
them). Any other partner (an LLM, a trained model, a policy of your own), or
``render_mode="human"``, or noisy or delayed audits (``miss_<claim>``,
``false_fail_<claim>``, ``audit_delayed``), or a claim schema other than the
paper's (``claim_schema``: the proposer's artifact space then has a component
per claim the schema adds, :func:`~eq_env.exchange_audit.features.artifact_nvec`),
plays through the AEC environment as before (``view.fast`` says which). :mod:`eq_env.exchange_audit.vector` steps many
episodes at once.

Version history (both views):

* v0: first version (eq_env 0.1.0).
* v0, before its first release: the game's episode index moved from ``info["episode"]`` to
  ``info["episode_index"]`` (the repeated view's name), which broke ``RecordEpisodeStatistics`` and SB3 without
  ``Monitor``; ``render_mode`` takes ``"human"`` and ``"rgb_array"``; an unknown keyword is a ``TypeError``.
  A view under ``"ansi"`` (and ``"rgb_array"``) keeps its fast path, rendering by replay: the same results and
  frames. Kept as v0: no release carried the old key (eq_env 0.1.0 is unreleased), so no published result or
  trained model reads it; a v1 beside a v0 that never shipped would only add an id.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eq_env.core.policy import Policy, make_policy
from eq_env.core.render import RENDER_MODES, check_render_mode
from eq_env.core.runner import policy_seed
from eq_env.exchange_audit.batch import (
    ValidatorBatch,
    is_batchable,
    payoffs_batch,
    proposer_batch,
    run_audit_batch,
    sample_nature,
    withhold_batch,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import PROPOSER, SEED_STREAMS, VALIDATOR, raw_env, resolve_config
from eq_env.exchange_audit.features import (
    ARTIFACT_NVEC,
    ARTIFACT_WORDS,
    N_ARTIFACTS,
    PROPOSER_FEATURES,
    SHADE,
    VALIDATOR_FEATURES,
    all_artifacts,
    artifact_nvec,
    artifact_submission,
    proposer_features,
    proposer_features_batch,
    validator_features,
    validator_features_batch,
)
from eq_env.exchange_audit.rules import CHECKABLE_CLAIMS, AuditOutcome, DrawStream, ProposerAction
from eq_env.exchange_audit.spaces import (
    ActionError,
    decode_proposer_observation,
    decode_validator_observation,
    encode_submission,
)

__all__ = [
    "ExchangeAuditProposerEnv",
    "ExchangeAuditValidatorEnv",
    "NothingToLearnError",
    "audit_options",
    "exact_partner",
]

_ARTIFACTS = all_artifacts()
_ARTIFACT_ROWS: list[tuple[int, ...]] = [tuple(row) for row in _ARTIFACTS.tolist()]
FEATURE_BOUND = 1e6  # the configuration's own ranges keep every feature within it
_OUTCOME_NAMES = tuple(o.name for o in AuditOutcome)
_INTENT_NAMES = ("HEDGE", "SPECULATE")
_ACTION_NAMES = ("NO_TRADE", "REQUEST_APPROVAL")
_DECISION_NAMES = ("BLOCK", "APPROVE")
_SKIPPED, _PASS, _FAIL, _INCONCLUSIVE = (int(o) for o in AuditOutcome)
_FIRST_BLOCK, _LAST_BLOCK = 16, 1024  # episodes drawn at once: doubling from the first to the last


def exact_partner(policy: Any, role: str) -> bool:
    """Whether the views and the vectorised environments play ``policy`` (of ``role``, the view's other role)
    in bulk: a scripted policy of this package whose bulk decisions equal its one-by-one ones exactly.

    Others (an LLM, a trained model whose batched forward pass may differ in the last bit, a policy of your
    own) play through the AEC environment. A policy class of your own may opt in with a class attribute
    ``exact_batch = True`` when its ``act_batch`` equals its ``act`` episode for episode, as this package's
    scripted policies do (the vectorised environments then play it in bulk). The attribute is read from the
    class itself, not inherited: a subclass that changes a decision must not inherit the promise.
    """
    if getattr(policy, "role", None) != role or not is_batchable(policy):
        return False
    return type(policy).__dict__.get("exact_batch") is True


def audit_options(config: ExchangeAuditConfig) -> list[str]:
    """The fields of ``config`` that make its audits noisy or delayed, those not at their
    defaults; the views play such a configuration through the AEC environment, the vectorised ones refuse it."""
    from eq_env.exchange_audit.config import AUDIT_OPTIONS

    defaults = ExchangeAuditConfig()
    return [name for name in AUDIT_OPTIONS if getattr(config, name) != getattr(defaults, name)]


def _renamed(overrides: dict[str, Any], audit_intensities: Sequence[float] | None) -> Sequence[float] | None:
    """``q_values`` is ``audit_intensities``' earlier name (it read as RL Q-values): taken, with a warning."""
    if "q_values" not in overrides:
        return audit_intensities
    import warnings

    old = overrides.pop("q_values")
    if audit_intensities is not None:
        raise ValueError("give audit_intensities or its old name q_values, not both")
    warnings.warn("q_values is now audit_intensities", DeprecationWarning, stacklevel=4)
    return old  # type: ignore[no-any-return]


def _no_options(options: Any) -> None:
    """The views take no reset options: refuse any rather than ignore it (a game parameter belongs in the
    constructor: ``gymnasium.make(id, q=0.5)``)."""
    if options:
        raise ValueError(f"this view takes no reset options (game parameters go to gymnasium.make), got {options!r}")


class NothingToLearnError(RuntimeError, ValueError):
    """The other role never gives this one a decision to make (a proposer that never asks for approval)."""


# ---------------------------------------------------------------------------
# Episodes in blocks (the batch engine's arithmetic, the AEC environment's random numbers)
# ---------------------------------------------------------------------------
def _block_size(drawn: int) -> int:
    return min(_LAST_BLOCK, max(_FIRST_BLOCK, drawn))


class _ProposerEpisodes:
    """One configuration's episode stream (``DrawStream(seed)``, as the AEC environment reset with ``seed``),
    drawn in blocks: per episode its index, the proposer's features and the numbers the rest of it needs."""

    def __init__(self, config: ExchangeAuditConfig, seed: int | None) -> None:
        self.config = config
        self.draws = DrawStream(seed)
        self.rows: list[tuple[Any, ...]] = []
        self.features = np.zeros((0, len(PROPOSER_FEATURES)), dtype=np.float32)
        self.base = 0
        self.i = 0

    def _refill(self) -> None:
        self.base = self.draws.episodes_drawn
        n = _block_size(self.base)
        nature = sample_nature(self.config, *self.draws.batch(n))
        views = proposer_batch(nature, self.config)
        self.features = proposer_features_batch(views)
        cols = (
            nature.ambiguous,
            nature.intent,
            nature.risk_limit,
            nature.true_risk,
            nature.true_net_delta,
            nature.hedge_size,
            views.observed_risk,
            views.observed_net_delta,
            nature.risk_within_limit,
            nature.net_delta_bounded,
            nature.compliant,
            *nature.audit_u.T,
        )
        self.rows = list(zip(*(c.tolist() for c in cols), strict=True))
        self.i = 0

    def next(self) -> tuple[int, tuple[Any, ...], np.ndarray]:
        if self.i >= len(self.rows):
            self._refill()
        i = self.i
        self.i = i + 1
        return self.base + i, self.rows[i], self.features[i]


class _ValidatorEpisodes:
    """The validator view's episodes: the configurations' streams (``seed + k`` for configuration ``k``, as
    the AEC view resets its environments) in the order ``choose`` picks them, the proposer acting on them in
    bulk in that same order (so its own randomness lines up), each episode worked out for both decisions."""

    def __init__(
        self,
        configs: list[ExchangeAuditConfig],
        proposer: Any,
        seed: int | None,
        choose: Callable[[], int] | None,
        replayable: bool = False,
    ) -> None:
        self.configs = configs
        self.proposer = proposer
        #: keep each block's draws and the proposer as it was before them, for :meth:`proposer_before`
        self.replayable = replayable
        self.block: tuple[Any, ...] = ()
        self.streams = [DrawStream(None if seed is None else seed + k) for k in range(len(configs))]
        self.choose = choose
        self.cols: dict[str, list[Any]] = {}
        self.features = np.zeros((0, len(VALIDATOR_FEATURES)), dtype=np.float32)
        self.n = self.i = 0
        self.drawn = 0

    def _refill(self) -> None:
        n = _block_size(self.drawn)
        self.drawn += n
        if self.choose is None:
            ks = np.zeros(n, dtype=np.int64)
        else:
            ks = np.array([self.choose() for _ in range(n)], dtype=np.int64)
        u, z, a = np.empty((n, 8)), np.empty((n, 4)), np.empty((n, 5))
        index = np.empty(n, dtype=np.int64)
        for k, stream in enumerate(self.streams):
            mine = ks == k
            m = int(mine.sum())
            if m:
                index[mine] = stream.episodes_drawn + np.arange(m)
                u[mine], z[mine], a[mine] = stream.batch(m)
        if self.replayable:
            self.block = (copy.deepcopy(self.proposer), ks, u, z, a)
        parts = [self._work(config, *draws) for config, draws in self._runs(ks, u, z, a, n)]
        cols = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
        cols["k"], cols["episode"] = ks, index
        self.features = cols.pop("features")
        self.cols = {key: value.tolist() for key, value in cols.items()}
        self.n, self.i = n, 0

    def _runs(self, ks: np.ndarray, u: np.ndarray, z: np.ndarray, a: np.ndarray, n: int) -> list[tuple[Any, ...]]:
        """The first ``n`` episodes in runs of the same configuration, in order: the proposer's randomness is
        consumed episode by episode."""
        cuts = [0, *(np.flatnonzero(np.diff(ks[:n])) + 1).tolist(), n] if n else []
        return [(self.configs[int(ks[s])], (u[s:e], z[s:e], a[s:e])) for s, e in itertools.pairwise(cuts)]

    def proposer_before(self, i: int) -> Any:
        """A copy of the proposer as it stood before row ``i`` of the current block (``replayable`` only): the
        copy kept before the block, then the block's first ``i`` episodes acted on in bulk (``act_batch``
        consumes what ``act`` does, episode by episode: what playing it in bulk asks of a policy)."""
        proposer, ks, u, z, a = self.block
        proposer = copy.deepcopy(proposer)
        for config, (u_, z_, a_) in self._runs(ks, u, z, a, i):
            proposer.act_batch(proposer_batch(sample_nature(config, u_, z_, a_), config))
        return proposer

    def _work(self, config: ExchangeAuditConfig, u: np.ndarray, z: np.ndarray, a: np.ndarray) -> dict[str, Any]:
        nature = sample_nature(config, u, z, a)
        sub = withhold_batch(self.proposer.act_batch(proposer_batch(nature, config)), config)
        audit = run_audit_batch(sub, nature, config)
        views = ValidatorBatch(config, sub, audit, nature.ambiguous, nature.risk_limit)
        compliant = nature.compliant
        p_yes, v_yes = payoffs_batch(sub, sub.request, audit, compliant, config)
        p_no, v_no = payoffs_batch(sub, np.zeros(nature.n, dtype=bool), audit, compliant, config)
        return {
            "features": validator_features_batch(views),
            "request": np.asarray(sub.request, dtype=bool),
            "p_yes": p_yes,
            "v_yes": v_yes,
            "p_no": p_no,
            "v_no": v_no,
            "words": np.asarray(sub.words),
            "ambiguous": nature.ambiguous,
            "compliant": compliant,
            "intent": nature.intent,
            "risk_limit": nature.risk_limit,
            "true_risk": nature.true_risk,
            "true_net_delta": nature.true_net_delta,
            "hedge_size": nature.hedge_size,
            "outcome": audit.outcome,
            "checked": _bits(audit.checked),
            "failed": _bits(audit.failed),
            "revealed": audit.revealed_compliant,
            "delta_limit": np.full(nature.n, config.delta_limit),
        }

    def next(self) -> int:
        """The next episode's row in the current block (see :meth:`info`)."""
        if self.i >= self.n:
            self._refill()
        i = self.i
        self.i = i + 1
        return i

    def info(self, i: int, decision: int) -> tuple[float, float, dict[str, Any]]:
        """(proposer payoff, validator payoff, the AEC environment's final info) of row ``i`` decided so."""
        c = self.cols
        request = c["request"][i]
        p, v = (c["p_yes"][i], c["v_yes"][i]) if decision else (c["p_no"][i], c["v_no"][i])
        outcome = c["outcome"][i]
        revealed = c["revealed"][i]
        checked, failed = c["checked"][i], c["failed"][i]
        return (
            p,
            v,
            {
                "episode_index": c["episode"][i],
                "welfare": p + v,
                "proposer_payoff": p,
                "validator_payoff": v,
                "proposer_action": _ACTION_NAMES[request],
                "decision": _DECISION_NAMES[decision],
                "approved": request and decision == 1,
                "compliant": c["compliant"][i],
                "ambiguous": c["ambiguous"][i],
                "words": c["words"][i],
                "audit": {
                    "audited": outcome != _SKIPPED,
                    "outcome": _OUTCOME_NAMES[outcome],
                    "checked": [n for n, b in zip(CHECKABLE_CLAIMS, _BIT_ROWS[checked], strict=True) if b],
                    "failed": [n for n, b in zip(CHECKABLE_CLAIMS, _BIT_ROWS[failed], strict=True) if b],
                    "revealed_compliant": None if revealed < 0 else revealed == 1,
                },
                "state": {
                    "intent": _INTENT_NAMES[c["intent"][i]],
                    "risk_limit": c["risk_limit"][i],
                    "delta_limit": c["delta_limit"][i],
                    "true_risk": c["true_risk"][i],
                    "true_net_delta": c["true_net_delta"][i],
                    "hedge_size": c["hedge_size"][i],
                },
            },
        )


_BIT_ROWS = [tuple(bool(b >> j & 1) for j in range(4)) for b in range(16)]


def _bits(matrix: np.ndarray) -> np.ndarray:
    """(n, 4) booleans → n codes in [0, 16) (bit j: claim j of CHECKABLE_CLAIMS)."""
    return matrix.astype(np.int64) @ np.array([1, 2, 4, 8], dtype=np.int64)


# ---------------------------------------------------------------------------
# The proposer's episode on plain numbers (game.py's rules, operation for operation)
# ---------------------------------------------------------------------------
class _Rules:
    """One configuration's constants, and the rest of an episode after the proposer's artifact."""

    def __init__(self, config: ExchangeAuditConfig, validator: str) -> None:
        c = config
        self.q, self.checks = c.q, c.checks_per_audit
        self.dl, self.sm, self.inside = c.delta_limit, c.safe_margin, c.safe_margin + SHADE
        self.max_words, self.max_tokens = c.max_words, c.max_artifact_tokens
        self.V, self.L, self.alpha, self.cost = c.V, c.L, c.alpha, c.audit_cost
        self.ntp, self.bad = c.no_trade_payoff, c.bad_approval_loss
        self.tokens = c.cost_model == "tokens"
        self.regime = c.regime  # what of the artifact is sent (rules.withhold)
        self.validator = validator  # "rule", "approve" or "block"

    def play(self, index: int, row: tuple[Any, ...], choices: Sequence[int]) -> tuple[float, float, dict[str, Any]]:
        act, intent_mode, numbers_mode, ci, cr, cd, text = choices
        (
            ambiguous,
            intent,
            rl,
            true_risk,
            true_delta,
            hedge,
            risk,
            delta,
            risk_ok,
            delta_ok,
            compliant,
            a0,
            a1,
            a2,
            a3,
            a4,
        ) = row
        dl = self.dl
        if numbers_mode:  # features.shaded_numbers
            sign = -1.0 if delta < 0 else 1.0
            risk = max(0.0, min(risk, rl - self.inside))
            delta = sign * max(0.0, min(abs(delta), dl - self.inside))
        reported_intent = 0 if intent_mode else intent
        claim_intent = None if ci == 0 else ci - 1
        claim_risk = None if cr == 0 else cr == 1
        claim_delta = None if cd == 0 else cd == 1
        words = min(ARTIFACT_WORDS[text], self.max_words)
        tokens = (4 * words + 2) // 3
        if tokens > self.max_tokens:
            raise ActionError(
                f"{PROPOSER} action['token_count'] must be an integer in [0, {self.max_tokens}], "
                f"got {np.int64(tokens)!r}"
            )
        if self.regime != "artifacts":  # rules.withhold: the claims are not sent; action only, nor the text
            claim_intent = claim_risk = claim_delta = None
            if self.regime == "action_only":
                words = tokens = 0
        # the audit (game.run_audit)
        checked: tuple[str, ...] = ()
        failed: tuple[str, ...] = ()
        revealed = None
        if not a0 < self.q:
            outcome = _SKIPPED
        elif self.checks <= 0 or claim_intent is None or claim_risk is None or claim_delta is None:
            outcome = _INCONCLUSIVE
        else:
            k = self.checks
            if k >= 4:
                checked = CHECKABLE_CLAIMS
            else:
                keys = (a1, a2, a3, a4)
                order = sorted(range(4), key=keys.__getitem__)
                checked = tuple(CHECKABLE_CLAIMS[i] for i in sorted(order[:k]))
            truth = {
                "intent": claim_intent == intent,
                "risk_within_limit": claim_risk == risk_ok,
                "net_delta_bounded": claim_delta == delta_ok,
                "confidence": True,
            }
            failed = tuple(name for name in checked if not truth[name])
            outcome = _FAIL if failed else _PASS
            revealed = compliant
        audited = outcome != _SKIPPED
        # the partner (rules.rule_decision, or always approve / block)
        request = act == 1
        if not request or self.validator == "block":
            decision = 0
        elif self.validator == "approve":
            decision = 1
        else:
            audited_ok = 1 if outcome == _PASS and revealed else 0
            if ambiguous:
                comfortable = reported_intent == 0 and (rl - risk) > self.sm and (dl - abs(delta)) > self.sm
                explained = claim_intent is not None or claim_risk is not None or claim_delta is not None or words > 0
                if not explained and not comfortable:
                    decision = 0
                elif audited:
                    decision = audited_ok
                else:
                    asserts = claim_intent == 0 and claim_risk is True and claim_delta is True
                    decision = 1 if comfortable or asserts else 0
            elif audited:
                decision = audited_ok
            else:
                decision = 1 if risk <= rl and abs(delta) <= dl else 0
        # the payoffs (game.payoffs)
        if not request:
            p = v = self.ntp
        elif decision:
            p = self.V
            v = self.V if compliant else -self.bad
        else:
            p = v = 0.0
        p -= self.alpha * (tokens if self.tokens else words)
        if outcome == _FAIL:
            p -= self.L
        if audited:
            v -= self.cost
        return (
            p,
            v,
            {
                "episode_index": index,
                "welfare": p + v,
                "proposer_payoff": p,
                "validator_payoff": v,
                "proposer_action": _ACTION_NAMES[act],
                "decision": _DECISION_NAMES[decision],
                "approved": request and decision == 1,
                "compliant": compliant,
                "ambiguous": ambiguous,
                "words": words,
                "audit": {
                    "audited": audited,
                    "outcome": _OUTCOME_NAMES[outcome],
                    "checked": list(checked),
                    "failed": list(failed),
                    "revealed_compliant": revealed,
                },
                "state": {
                    "intent": _INTENT_NAMES[intent],
                    "risk_limit": rl,
                    "delta_limit": dl,
                    "true_risk": true_risk,
                    "true_net_delta": true_delta,
                    "hedge_size": hedge,
                },
            },
        )


def _validator_kind(policy: Any) -> str | None:
    """The rule the proposer view's fast path plays in the validator's stead: the class's own ``view_rule``
    (``"rule"``, ``"approve"`` or ``"block"``, as this package's scripted validators declare). None (a policy of
    the user's that opted in with ``exact_batch`` only): the view plays it through the AEC environment."""
    kind = type(policy).__dict__.get("view_rule")
    return kind if kind in ("rule", "approve", "block") else None


# ---------------------------------------------------------------------------
# The views
# ---------------------------------------------------------------------------
class _View(gymnasium.Env):
    """What both views share: configurations (one per q), the other role's policy, seeding."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's name
    _role_agent: str  # the AEC agent this view plays

    def __init__(
        self,
        role: str,
        other: Policy | str,
        config: ExchangeAuditConfig | None,
        preset: str | None,
        reward_mode: str,
        audit_intensities: Sequence[float] | None,
        render_mode: str | None,
        overrides: dict[str, Any],
    ) -> None:
        audit_intensities = _renamed(overrides, audit_intensities)
        if reward_mode not in ("individual", "welfare"):
            raise ValueError(f"reward_mode must be 'individual' or 'welfare', got {reward_mode!r}")
        check_render_mode(render_mode)
        base = resolve_config(config, preset, overrides)
        qs = [base.q] if audit_intensities is None else list(audit_intensities)
        if not qs:
            raise ValueError("audit_intensities must hold at least one audit intensity")
        self.configs = [base.replace(q=q) for q in qs]
        self.config = self.configs[0]
        self.reward_mode = reward_mode
        self.render_mode = render_mode
        self._other_role = "validator" if role == "proposer" else "proposer"
        self.other = make_policy(other, self._other_role)  # type: ignore[arg-type]
        #: the episodes are worked out in bulk (a scripted partner, exact audits), not through the AEC env; noisy or
        #: delayed audits and other claim schemas are played by the AEC environment only. "human" prints
        #: every step (the AEC environment's own render), so it drives the AEC environment anyway
        self.fast = render_mode != "human" and not audit_options(base) and exact_partner(self.other, self._other_role)
        self._aec: list[Any] | None = None
        # the fast path's render(): what the AEC environments should show, and what they show (see _replay)
        self._now: tuple[Any, ...] | None = None
        self._shown: tuple[Any, ...] | None = None
        self._k = 0  # the configuration of the current episode
        self._seeded = False
        self._fresh: set[int] = set()  # environments whose seeded first episode is not played yet

    # the AEC environments, one per configuration (built on first use: the fast path needs none)
    @property
    def _envs(self) -> list[Any]:
        if self._aec is None:
            self._aec = [
                raw_env(config=c, reward_mode=self.reward_mode, render_mode=self.render_mode) for c in self.configs
            ]
        return self._aec

    @property
    def _env(self) -> Any:
        return self._envs[self._k]

    def _choose(self) -> int:
        return int(self.np_random.integers(len(self.configs))) if len(self.configs) > 1 else 0

    def _reseed_other(self, seed: int | None) -> bool:
        """Reset the partner as the runner does; whether the episode streams start again."""
        if seed is not None:
            self.other.reset(seed=policy_seed(seed, SEED_STREAMS[self._other_role]))  # one source of truth
            self._seeded = True
            return True
        if not self._seeded:
            self.other.reset(seed=None)
            self._seeded = True
            return True
        return False

    def _no_episode(self) -> RuntimeError:
        """The error of a ``step()`` with no episode under way: before the first ``reset()``, or after the
        episode ended (every episode of these views is one step)."""
        return RuntimeError("the episode is over: call reset()" if self._seeded else "step() before reset()")

    def _decision(self, action: Any) -> int:
        """``int(action)``, or a ValueError naming the action and the space (``int("bad")`` or ``int(None)``
        would say only what ``int`` could not read)."""
        try:
            return int(action)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"action {action!r} is outside {self.action_space}") from None

    def _start_episode(self, seed: int | None) -> None:
        """The AEC path: start the next episode in the environment of a drawn configuration."""
        if seed is not None:
            for k, env in enumerate(self._envs):
                env.reset(seed=seed + k)
            self._fresh = set(range(len(self._envs)))
        self._reseed_other(seed)
        self._k = self._choose()
        if self._k in self._fresh:  # its seeded episode 0 is ready: play it
            self._fresh.discard(self._k)
        else:
            self._env.reset()

    def render(self) -> str | np.ndarray | None:
        """The current episode as the AEC environment renders it (``render_mode``: see the module docstring).

        The fast path builds it only here: it replays the current episode in an AEC environment of its own
        (:meth:`_replay`), so its frames equal the AEC path's and a view that is never rendered pays nothing."""
        if self.render_mode is None:
            gymnasium.logger.warn(f"render() called without a render_mode; pass one of {RENDER_MODES}")
            return None
        if self.fast and self._now is not None and self._now != self._shown:
            self._replay(self._now)
            self._shown = self._now
        return self._env.render()  # type: ignore[no-any-return]

    def _replay(self, now: tuple[Any, ...]) -> None:
        """Bring the AEC environment of the current configuration to ``now`` (what ``reset``/``step`` recorded)."""
        raise NotImplementedError

    def _seek(self, k: int, entropy: int, index: int) -> Any:
        """Start episode ``index`` of the stream ``DrawStream(entropy)`` in configuration ``k``'s AEC environment
        (an unseeded run's stream drew its entropy once: replayable as any seed). The draws are skipped forward
        from where the environment stands (cheap for renders in order), with no bound on ``index``, which
        ``reset(options={"episode": i})`` has."""
        self._k = k
        env = self._env
        episode = env._episode  # (the AEC environment's episode: its draw stream)
        if episode.draws.entropy != entropy or episode.draws.episodes_drawn > index:
            episode.draws = DrawStream(entropy)
        episode.draws.skip(index - episode.draws.episodes_drawn)
        env.reset()
        return env

    def _finish(self, decision: int) -> tuple[float, dict[str, Any]]:
        env = self._env
        env.step(decision)
        info = dict(env.infos[PROPOSER])
        # (Gymnasium's RecordEpisodeStatistics and SB3 own "episode": the game's index goes under "episode_index")
        info = {"episode_index": info.pop("episode"), **info}
        return float(env.rewards[self._role_agent]), info


class ExchangeAuditProposerEnv(_View):
    """The proposer's view: act with an artifact, against a fixed validator (see the module docstring)."""

    _role_agent = PROPOSER

    def __init__(
        self,
        validator: Policy | str = "rule",
        *,
        config: ExchangeAuditConfig | None = None,
        preset: str | None = None,
        reward_mode: str = "individual",
        action_encoding: str = "multidiscrete",
        audit_intensities: Sequence[float] | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__("proposer", validator, config, preset, reward_mode, audit_intensities, render_mode, overrides)
        if action_encoding not in ("multidiscrete", "discrete"):
            raise ValueError(f"action_encoding must be 'multidiscrete' or 'discrete', got {action_encoding!r}")
        self.action_encoding = action_encoding
        self._nvec = artifact_nvec(self.config.claim_schema)  # (the paper's seven choices, and the schema's own)
        self._artifacts = _ARTIFACTS if self._nvec == ARTIFACT_NVEC else all_artifacts(self.config.claim_schema)
        self.action_space: spaces.Space[Any] = (
            spaces.MultiDiscrete(list(self._nvec))
            if action_encoding == "multidiscrete"
            else spaces.Discrete(len(self._artifacts))
        )
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(PROPOSER_FEATURES),), dtype=np.float32
        )
        self._view: Any = None
        self._features: np.ndarray | None = None
        kind = _validator_kind(self.other) if self.fast else "rule"
        if kind is None:  # (an opted-in validator of the user's: the rules below would play another one)
            self.fast, kind = False, "rule"
        self._rules = [_Rules(c, kind) for c in self.configs]
        self._sources: list[_ProposerEpisodes] = []
        self._episode: tuple[int, tuple[Any, ...]] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        _no_options(options)
        super().reset(seed=seed)
        if not self.fast:
            self._start_episode(seed)
            self._view = decode_proposer_observation(self._env.observe(PROPOSER))
            self._features = proposer_features(self._view)
            return self._features, {}
        if self._reseed_other(seed):
            self._sources = [
                _ProposerEpisodes(c, None if seed is None else seed + k) for k, c in enumerate(self.configs)
            ]
        self._k = k = self._choose()
        index, row, self._features = self._sources[k].next()
        self._episode = (index, row)
        if self.render_mode is not None:
            self._now = (self._sources[k].draws.entropy, k, index, None)
        return self._features, {}

    def choices(self, action: Any) -> np.ndarray:
        """The 7 artifact choices (and one per claim the schema adds) an action of this view's space stands for."""
        if self.action_encoding == "discrete":
            return self._artifacts[int(action)]  # type: ignore[no-any-return]
        return np.asarray(action, dtype=np.int64).reshape(len(self._nvec))

    def _checked_choices(self, action: Any) -> Sequence[int]:
        """The action's 7 choices, after the check ``action_space.contains`` makes (without its cost)."""
        if self.action_encoding == "discrete":
            a = self._decision(action)
            if 0 <= a < N_ARTIFACTS:
                return _ARTIFACT_ROWS[a]
        else:
            arr = action if isinstance(action, np.ndarray) else np.asarray(action)
            if arr.shape == (7,) and arr.dtype.kind in "iuf":
                values = arr.tolist()
                if all(0 <= x < n for x, n in zip(values, ARTIFACT_NVEC, strict=True)):
                    return [int(x) for x in values]
            elif self.action_space.contains(arr):  # (anything else MultiDiscrete takes)
                return [int(x) for x in self.choices(action).tolist()]
        raise ValueError(f"action {action!r} is outside {self.action_space}")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        features = self._features  # one-step episodes: the last observation is the first (a copy, as Gymnasium asks)
        if not self.fast:
            return self._aec_step(action)
        episode = self._episode
        if episode is None or features is None:
            raise self._no_episode()
        choices = self._checked_choices(action)
        p, v, info = self._rules[self._k].play(episode[0], episode[1], choices)
        self._episode = self._features = None
        if self.render_mode is not None:
            self._now = (*self._now[:3], tuple(choices))  # type: ignore[index]
        return features.copy(), (p if self.reward_mode == "individual" else p + v), True, False, info

    def _replay(self, now: tuple[Any, ...]) -> None:
        entropy, k, index, choices = now
        shown = self._shown
        if shown is None or shown[:3] != now[:3] or shown[3] is not None:  # (else: at this episode's start)
            self._seek(k, entropy, index)
        if choices is not None:  # the step the AEC path plays (_aec_step)
            env = self._env
            view = decode_proposer_observation(env.observe(PROPOSER))
            submission = artifact_submission(view, choices)
            env.step(encode_submission(submission, view.public.claim_schema))
            request = submission.action is not ProposerAction.NO_TRADE
            env.step(int(self.other.act(env.observe(VALIDATOR))) if request else 0)

    def _aec_step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        features = self._features
        if self._view is None or features is None:
            raise self._no_episode()
        if not self.action_space.contains(
            np.asarray(action) if self.action_encoding == "multidiscrete" else self._decision(action)
        ):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        submission = artifact_submission(self._view, self.choices(action))
        env = self._env
        env.step(encode_submission(submission, self._view.public.claim_schema))
        obs = env.observe(VALIDATOR)
        if submission.action is ProposerAction.NO_TRADE:
            decision = 0
        else:
            decision = int(self.other.act(obs))
        reward, info = self._finish(decision)
        self._view = self._features = None
        return features.copy(), reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """Every artifact is always legal (sb3-contrib's MaskablePPO asks anyway)."""
        size = sum(self._nvec) if self.action_encoding == "multidiscrete" else len(self._artifacts)
        return np.ones(size, dtype=bool)


class ExchangeAuditValidatorEnv(_View):
    """The validator's view: approve or block, against a fixed proposer (see the module docstring)."""

    _role_agent = VALIDATOR

    def __init__(
        self,
        proposer: Policy | str = "honest",
        *,
        config: ExchangeAuditConfig | None = None,
        preset: str | None = None,
        reward_mode: str = "individual",
        skip_no_trade: bool = True,
        audit_intensities: Sequence[float] | None = None,
        render_mode: str | None = None,
        max_skips: int = 1000,
        **overrides: Any,
    ) -> None:
        super().__init__("validator", proposer, config, preset, reward_mode, audit_intensities, render_mode, overrides)
        self.skip_no_trade = bool(skip_no_trade)
        self.max_skips = max_skips
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(VALIDATOR_FEATURES),), dtype=np.float32
        )
        self._obs: Any = None
        self._features: np.ndarray | None = None
        self._episodes: _ValidatorEpisodes | None = None
        self._row = -1  # the current episode's row in its block (-1: none)
        self._request = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        _no_options(options)
        super().reset(seed=seed)
        if not self.fast:
            return self._aec_reset(seed)
        if self._reseed_other(seed) or self._episodes is None:
            self._episodes = _ValidatorEpisodes(
                self.configs,
                self.other,
                seed,
                self._choose if len(self.configs) > 1 else None,
                replayable=self.render_mode is not None,
            )
        episodes = self._episodes
        self._row = -1
        for _ in range(self.max_skips):
            i = episodes.next()
            request = episodes.cols["request"][i]
            if request or not self.skip_no_trade:
                self._row, self._request = i, request
                self._k = episodes.cols["k"][i]
                self._features = episodes.features[i]
                if self.render_mode is not None:
                    self._now = (episodes.streams[self._k].entropy, self._k, episodes.cols["episode"][i], i, None)
                return self._features, {}
        raise NothingToLearnError(f"the proposer sent NO_TRADE {self.max_skips} times in a row: nothing to learn from")

    def _aec_reset(self, seed: int | None) -> tuple[np.ndarray, dict]:
        for _ in range(self.max_skips):
            self._start_episode(seed)
            seed = None
            env = self._env
            env.step(self.other.act(env.observe(PROPOSER)))
            self._obs = env.observe(VALIDATOR)
            if not self.skip_no_trade or int(self._obs["action_mask"][1]):
                self._features = validator_features(decode_validator_observation(self._obs))
                return self._features, {}
            env.step(0)  # a NO_TRADE: nothing to decide, on to the next episode
        raise NothingToLearnError(f"the proposer sent NO_TRADE {self.max_skips} times in a row: nothing to learn from")

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.fast:
            return self._aec_step(action)
        features = self._features
        if self._row < 0 or features is None or self._episodes is None:
            raise self._no_episode()
        try:  # (inline: the fast path's step is a few microseconds)
            decision = int(action)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"action {action!r} is outside {self.action_space}") from None
        if not 0 <= decision < 2:
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        illegal = decision == 1 and not self._request
        p, v, info = self._episodes.info(self._row, 0 if illegal else decision)
        info["illegal_action"] = illegal
        if self.render_mode is not None:
            self._now = (*self._now[:4], 0 if illegal else decision)  # type: ignore[index]
        self._row, self._features = -1, None
        return features.copy(), (v if self.reward_mode == "individual" else p + v), True, False, info

    def _replay(self, now: tuple[Any, ...]) -> None:
        entropy, k, index, row, decision = now
        shown = self._shown
        if shown is None or shown[:4] != now[:4] or shown[4] is not None:  # (else: awaiting the decision)
            assert self._episodes is not None
            env = self._seek(k, entropy, index)
            env.step(self._episodes.proposer_before(row).act(env.observe(PROPOSER)))
        if decision is not None:
            self._env.step(decision)

    def _aec_step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        features = self._features
        if self._obs is None or features is None:
            raise self._no_episode()
        decision = self._decision(action)
        if not self.action_space.contains(decision):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        illegal = decision == 1 and not int(self._obs["action_mask"][1])
        reward, info = self._finish(0 if illegal else decision)
        info["illegal_action"] = illegal
        self._obs = self._features = None
        return features.copy(), reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """[BLOCK, APPROVE] legality (APPROVE is illegal after a NO_TRADE)."""
        if not self.fast:
            if self._obs is None:
                return np.ones(2, dtype=bool)
            return self._obs["action_mask"].astype(bool)  # type: ignore[no-any-return]
        if self._row < 0:
            return np.ones(2, dtype=bool)
        return np.array([True, self._request])
