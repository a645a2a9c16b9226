"""Vectorised single-agent environments of the exchange–audit game, native on the batch engine.

For each role an SB3 ``VecEnv`` and a Gymnasium ``VectorEnv``, stepping ``n`` one-shot episodes at once:

* :class:`~eq_env.exchange_audit.sb3_vector.ProposerVecEnv` / :class:`~eq_env.exchange_audit.sb3_vector.ValidatorVecEnv`
  (``stable_baselines3.common.vec_env.VecEnv``, in :mod:`eq_env.exchange_audit.sb3_vector`, which imports SB3),
  for SB3 and sb3-contrib (``env_method("action_masks")`` and ``get_action_masks`` work, for MaskablePPO);
* :class:`ProposerVectorEnv` / :class:`ValidatorVectorEnv` (``gymnasium.vector.VectorEnv``).

They take the arguments of the single-agent views (:mod:`eq_env.exchange_audit.views`) plus ``num_envs``
and play the same game: observations, actions, rewards and infos are those of the views.

Seeding: environment ``i`` of a run seeded ``s`` (SB3: ``venv.seed(s)`` then ``reset()``; Gymnasium:
``reset(seed=s)``) plays exactly the episodes of a single view reset with ``seed=s + i`` and then reset
without a seed after every step: the same observations, rewards and infos, episode by episode (a test
checks it). That is how both libraries seed their own vectorised copies of a single environment. The
partner policy (the other role) is reset as the view resets it: the proposer environments share one
validator, reset with the seed of environment 0 (the scripted validators draw no randomness); the
validator environments give each environment its own copy of the proposer, reset as view ``i`` resets
its own, so a proposer that draws randomness (``strategic``) lines up too.

Auto-reset: every episode ends after its one step, so every step ends every environment's episode and
starts the next one at once. SB3: ``dones`` are all true, the returned observations are the next
episodes', and ``infos[i]["terminal_observation"]`` holds the observation of the episode just played.
Gymnasium: ``autoreset_mode=`` (a ``gymnasium.vector.AutoresetMode`` or its value) says how, and
``metadata["autoreset_mode"]`` shows it:

* ``AutoresetMode.SAME_STEP`` (the default): the returned observations are the next episodes',
  ``infos["final_obs"]`` and ``infos["final_info"]`` those of the episodes just played (with their
  ``_final_obs`` / ``_final_info`` masks). Every step plays an episode in every environment.
* ``AutoresetMode.NEXT_STEP`` (Gymnasium's own default, which its vector ``NormalizeObservation`` and
  ``RecordEpisodeStatistics`` wrappers want): a step returns the episodes' last observations, their rewards,
  ``terminated`` all true and their infos; the next step starts the next episodes (its actions are not
  played; rewards 0, nothing terminated, infos empty). Exactly what ``gymnasium.vector.SyncVectorEnv`` of the
  views gives in that mode (a test compares them), at half the episodes per step: one-step episodes are why
  same-step is the default.

``AutoresetMode.DISABLED`` is refused (every step ends every episode: nothing is left to reset by hand).

The infos are the views': the game's episode index is ``"episode_index"`` (``"episode"`` belongs to
Gymnasium's ``RecordEpisodeStatistics`` and SB3's ``Monitor``). Wrap an SB3 one in ``VecMonitor`` before
training (``eq-env train`` does) for episode statistics, as you would wrap a view in ``Monitor``.

Noisy or delayed audits (``miss_<claim>``, ``false_fail_<claim>``, ``audit_delayed``) and claim schemas other
than the paper's (``claim_schema``) are refused with a ValueError naming the fields set: the single-agent views
play them (through the AEC environment).

The partner must act in bulk (a scripted policy, or a trained model: ``act_batch``); with a scripted one
the outcomes equal the views' exactly. The proposer environments take one audit intensity; for several
(``audit_intensities=[...]``) use the views in SB3's ``DummyVecEnv`` (as ``eq-env train`` does).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

from eq_env.core.policy import Policy, make_policy
from eq_env.core.runner import policy_seed
from eq_env.exchange_audit.batch import (
    ValidatorBatch,
    is_batchable,
    payoffs_batch,
    proposer_batch,
    reads_text,
    run_audit_batch,
    sample_nature,
    withhold_batch,
)
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import PROPOSER, SEED_STREAMS, resolve_config
from eq_env.exchange_audit.features import (
    ARTIFACT_NVEC,
    N_ARTIFACTS,
    PROPOSER_FEATURES,
    VALIDATOR_FEATURES,
    all_artifacts,
    artifact_submissions,
    proposer_features_batch,
)
from eq_env.exchange_audit.rules import CHECKABLE_CLAIMS, DrawStream
from eq_env.exchange_audit.spaces import ActionError
from eq_env.exchange_audit.views import (
    _ACTION_NAMES,
    _BIT_ROWS,
    _DECISION_NAMES,
    _INTENT_NAMES,
    _OUTCOME_NAMES,
    _SKIPPED,
    FEATURE_BOUND,
    NothingToLearnError,
    _bits,
    _renamed,
    _ValidatorEpisodes,
    audit_options,
)

__all__ = ["ProposerVectorEnv", "ValidatorVectorEnv"]

_ARTIFACTS = all_artifacts()
_NVEC = np.array(ARTIFACT_NVEC, dtype=np.int64)
BLOCK = 256  # episodes drawn at once per environment


def _configs(
    config: ExchangeAuditConfig | None,
    preset: str | None,
    audit_intensities: Sequence[float] | None,
    overrides: dict[str, Any],
) -> list[ExchangeAuditConfig]:
    audit_intensities = _renamed(overrides, audit_intensities)
    base = resolve_config(config, preset, overrides)
    qs = [base.q] if audit_intensities is None else list(audit_intensities)
    if not qs:
        raise ValueError("audit_intensities must hold at least one audit intensity")
    noisy = [name for name in audit_options(base) if name != "claim_schema"]
    if noisy:
        raise ValueError(
            f"the vectorised environments do not play noisy or delayed audits (set: {', '.join(noisy)}); use the "
            "single-agent views (in SB3's DummyVecEnv or gymnasium.vector.SyncVectorEnv), which play them"
        )
    if base.claim_schema != "paper":
        raise ValueError(
            f"the vectorised environments play the paper's claim schema only (claim_schema={base.claim_schema!r}); "
            "use the single-agent views (in SB3's DummyVecEnv or gymnasium.vector.SyncVectorEnv), which play any"
        )
    return [base.replace(q=q) for q in qs]


def _partner(policy: Policy | str, role: str) -> Any:
    other = make_policy(policy, role)  # type: ignore[arg-type]
    if not is_batchable(other):
        raise TypeError(
            f"{other!r} cannot act in bulk (its class defines no act_batch): use the single-agent views "
            "(in SB3's DummyVecEnv or gymnasium.vector.SyncVectorEnv) for it"
        )
    return other


class _ProposerCore:
    """``n`` proposer views stepped together: per environment its own episode stream, in blocks."""

    role = "proposer"

    def __init__(
        self,
        n: int,
        validator: Policy | str,
        config: ExchangeAuditConfig | None,
        preset: str | None,
        reward_mode: str,
        action_encoding: str,
        audit_intensities: Sequence[float] | None,
        overrides: dict[str, Any],
    ) -> None:
        if reward_mode not in ("individual", "welfare"):
            raise ValueError(f"reward_mode must be 'individual' or 'welfare', got {reward_mode!r}")
        if action_encoding not in ("multidiscrete", "discrete"):
            raise ValueError(f"action_encoding must be 'multidiscrete' or 'discrete', got {action_encoding!r}")
        configs = _configs(config, preset, audit_intensities, overrides)
        if len(configs) > 1:
            raise ValueError(
                "the vectorised proposer environment takes one audit intensity; for several, "
                "use the views in SB3's DummyVecEnv"
            )
        self.n, self.config, self.configs = n, configs[0], configs
        self.reward_mode, self.action_encoding = reward_mode, action_encoding
        self.other = _partner(validator, "validator")
        self.action_space: spaces.Space[Any] = (
            spaces.MultiDiscrete(list(ARTIFACT_NVEC))
            if action_encoding == "multidiscrete"
            else spaces.Discrete(N_ARTIFACTS)
        )
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(PROPOSER_FEATURES),), dtype=np.float32
        )
        self.streams: list[DrawStream] = []
        self.seeded = False
        self.mask = np.ones((n, sum(ARTIFACT_NVEC) if action_encoding == "multidiscrete" else N_ARTIFACTS), dtype=bool)

    def reset(self, seeds: Sequence[int | None], advance: bool = True) -> np.ndarray:
        """Seeded environments start their stream again; the others go on to their next episode (with
        ``advance``; without, they keep the episode dealt at the last step)."""
        n = self.n
        if not self.streams:
            self.streams = [DrawStream(None) for _ in range(n)]
            self.u, self.z, self.a = np.empty((n, BLOCK, 8)), np.empty((n, BLOCK, 4)), np.empty((n, BLOCK, 5))
            self.cursor = np.full(n, BLOCK, dtype=np.int64)
            self.index = np.zeros(n, dtype=np.int64)
            self.started = False
        if seeds[0] is not None or not self.seeded:
            self.other.reset(seed=None if seeds[0] is None else policy_seed(seeds[0], SEED_STREAMS["validator"]))
            self.seeded = True
        for i, seed in enumerate(seeds):
            if seed is not None:
                self.streams[i] = DrawStream(seed)
                self.cursor[i] = BLOCK  # draw afresh
        if self.started and advance:
            unseeded = np.array([s is None for s in seeds])
            self.cursor[unseeded] += 1  # a reset without a seed moves on to the next episode, as a view's does
        self.started = True
        return self._deal()

    def _deal(self) -> np.ndarray:
        """The current episodes' observations (drawing a block for any environment that ran out)."""
        for i in np.flatnonzero(self.cursor >= BLOCK).tolist():
            base = self.streams[i].episodes_drawn
            self.u[i], self.z[i], self.a[i] = self.streams[i].batch(BLOCK)
            self.cursor[i] = 0
            self.index[i] = base
        rows = np.arange(self.n)
        c = self.cursor
        self.nature = sample_nature(self.config, self.u[rows, c], self.z[rows, c], self.a[rows, c])
        self.views = proposer_batch(self.nature, self.config, with_texts=reads_text(self.other))
        self.obs = proposer_features_batch(self.views)
        return self.obs

    def choices(self, actions: Any) -> np.ndarray:
        a = np.asarray(actions)
        if self.action_encoding == "discrete":
            a = a.reshape(self.n)
            if a.dtype.kind not in "iu" or np.any((a < 0) | (a >= N_ARTIFACTS)):
                raise ValueError(f"actions {actions!r} are outside {self.action_space}")
            return _ARTIFACTS[a.astype(np.int64)]
        if a.shape != (self.n, len(ARTIFACT_NVEC)) or np.any((a < 0) | (a >= _NVEC)):
            raise ValueError(f"actions {actions!r} are outside {self.action_space} (one row per environment)")
        return a.astype(np.int64)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """(the played episodes' observations, rewards, the next episodes' observations, infos)."""
        cfg, nature = self.config, self.nature
        sub = artifact_submissions(self.views, self.choices(actions))
        if int(sub.tokens.max(initial=0)) > cfg.max_artifact_tokens:
            raise ActionError(f"{PROPOSER} action['token_count'] must be an integer in [0, {cfg.max_artifact_tokens}]")
        sub = withhold_batch(sub, cfg)  # (after the token check: the env checks the action as sent by the proposer)
        audit = run_audit_batch(sub, nature, cfg)
        vb = ValidatorBatch(cfg, sub, audit, nature.ambiguous, nature.risk_limit)
        approved = sub.request & np.asarray(self.other.act_batch(vb), dtype=bool)
        p, v = payoffs_batch(sub, approved, audit, nature.compliant, cfg)
        infos = _infos(
            {
                "episode": self.index + self.cursor,
                "proposer_payoff": p,
                "validator_payoff": v,
                "request": sub.request,
                "approved": approved,
                "compliant": nature.compliant,
                "ambiguous": nature.ambiguous,
                "words": sub.words,
                "outcome": audit.outcome,
                "checked": _bits(audit.checked),
                "failed": _bits(audit.failed),
                "revealed": audit.revealed_compliant,
                "intent": nature.intent,
                "risk_limit": nature.risk_limit,
                "true_risk": nature.true_risk,
                "true_net_delta": nature.true_net_delta,
                "hedge_size": nature.hedge_size,
            },
            self.config.delta_limit,
        )
        played = self.obs
        rewards = p if self.reward_mode == "individual" else p + v
        self.cursor += 1
        return played, rewards, self._deal(), infos


def _infos(cols: dict[str, np.ndarray], delta_limit: float) -> list[dict[str, Any]]:
    """The views' final infos, one per environment, from the batch engine's columns."""
    c = {k: v.tolist() for k, v in cols.items()}
    out = []
    for (
        episode,
        p,
        v,
        request,
        approved,
        compliant,
        ambiguous,
        words,
        outcome,
        checked,
        failed,
        revealed,
        intent,
        rl,
        tr,
        td,
        hs,
    ) in zip(*c.values(), strict=True):
        out.append(
            {
                "episode_index": episode,
                "welfare": p + v,
                "proposer_payoff": p,
                "validator_payoff": v,
                "proposer_action": _ACTION_NAMES[request],
                "decision": _DECISION_NAMES[approved],
                "approved": approved,
                "compliant": compliant,
                "ambiguous": ambiguous,
                "words": words,
                "audit": {
                    "audited": outcome != _SKIPPED,
                    "outcome": _OUTCOME_NAMES[outcome],
                    "checked": [n for n, b in zip(CHECKABLE_CLAIMS, _BIT_ROWS[checked], strict=True) if b],
                    "failed": [n for n, b in zip(CHECKABLE_CLAIMS, _BIT_ROWS[failed], strict=True) if b],
                    "revealed_compliant": None if revealed < 0 else revealed == 1,
                },
                "state": {
                    "intent": _INTENT_NAMES[intent],
                    "risk_limit": rl,
                    "delta_limit": delta_limit,
                    "true_risk": tr,
                    "true_net_delta": td,
                    "hedge_size": hs,
                },
            }
        )
    return out


class _Choose:
    """Which configuration an episode plays, drawn from the environment's own generator (an object, not a lambda:
    the environment pickles, and a deep copy draws from the copy's generator)."""

    def __init__(self, rng: np.random.Generator, k: int) -> None:
        self.rng, self.k = rng, k

    def __call__(self) -> int:
        return int(self.rng.integers(self.k))


class _ValidatorCore:
    """``n`` validator views stepped together, each with its own proposer copy and episode stream."""

    role = "validator"

    def __init__(
        self,
        n: int,
        proposer: Policy | str,
        config: ExchangeAuditConfig | None,
        preset: str | None,
        reward_mode: str,
        skip_no_trade: bool,
        audit_intensities: Sequence[float] | None,
        max_skips: int,
        overrides: dict[str, Any],
    ) -> None:
        if reward_mode not in ("individual", "welfare"):
            raise ValueError(f"reward_mode must be 'individual' or 'welfare', got {reward_mode!r}")
        self.n, self.configs = n, _configs(config, preset, audit_intensities, overrides)
        self.config = self.configs[0]
        self.reward_mode, self.skip_no_trade, self.max_skips = reward_mode, bool(skip_no_trade), max_skips
        self.template = _partner(proposer, "proposer")
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(VALIDATOR_FEATURES),), dtype=np.float32
        )
        self.episodes: list[_ValidatorEpisodes | None] = [None] * n
        self.rngs: list[np.random.Generator | None] = [None] * n
        self.rows = [-1] * n
        self.request = [True] * n
        self.obs = np.zeros((n, len(VALIDATOR_FEATURES)), dtype=np.float32)

    def _start(self, i: int, seed: int | None) -> None:
        from gymnasium.utils import seeding

        # what view i's reset(seed=...) does: Gymnasium seeds its np_random, the runner seeds the proposer
        rng, _ = seeding.np_random(seed)
        self.rngs[i] = rng
        proposer = copy.deepcopy(self.template)
        proposer.reset(seed=None if seed is None else policy_seed(seed, SEED_STREAMS["proposer"]))
        k = len(self.configs)
        choose = None if k == 1 else _Choose(rng, k)
        self.episodes[i] = _ValidatorEpisodes(self.configs, proposer, seed, choose)

    def _next(self, i: int) -> None:
        episodes = self.episodes[i]
        assert episodes is not None
        for _ in range(self.max_skips):
            row = episodes.next()
            request = episodes.cols["request"][row]
            if request or not self.skip_no_trade:
                self.rows[i], self.request[i] = row, request
                self.obs[i] = episodes.features[row]
                return
        raise NothingToLearnError(f"the proposer sent NO_TRADE {self.max_skips} times in a row: nothing to learn from")

    def reset(self, seeds: Sequence[int | None], advance: bool = True) -> np.ndarray:
        """As :meth:`_ProposerCore.reset`."""
        for i, seed in enumerate(seeds):
            if seed is not None or self.episodes[i] is None:
                self._start(i, seed)
            elif not advance:
                continue
            self._next(i)
        return self.obs.copy()

    @property
    def mask(self) -> np.ndarray:
        return np.array([[True, r] for r in self.request])

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        a = np.asarray(actions).reshape(self.n)
        if a.dtype.kind not in "iu" or np.any((a < 0) | (a > 1)):
            raise ValueError(f"actions {actions!r} are outside {self.action_space}")
        played = self.obs.copy()
        rewards = np.empty(self.n)
        infos = []
        individual = self.reward_mode == "individual"
        for i, decision in enumerate(a.tolist()):
            episodes = self.episodes[i]
            assert episodes is not None
            illegal = decision == 1 and not self.request[i]
            p, v, info = episodes.info(self.rows[i], 0 if illegal else decision)
            info["illegal_action"] = illegal
            rewards[i] = v if individual else p + v
            infos.append(info)
            self._next(i)
        return played, rewards, self.obs.copy(), infos


def _core(role: str, num_envs: int, other: Any, kwargs: dict[str, Any]) -> Any:
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
    config, preset = kwargs.pop("config", None), kwargs.pop("preset", None)
    reward_mode = kwargs.pop("reward_mode", "individual")
    audit_intensities = kwargs.pop("audit_intensities", None)
    if role == "proposer":
        encoding = kwargs.pop("action_encoding", "multidiscrete")
        return _ProposerCore(num_envs, other, config, preset, reward_mode, encoding, audit_intensities, kwargs)
    skip, max_skips = kwargs.pop("skip_no_trade", True), kwargs.pop("max_skips", 1000)
    return _ValidatorCore(num_envs, other, config, preset, reward_mode, skip, audit_intensities, max_skips, kwargs)


# ---------------------------------------------------------------------------
# Gymnasium
# ---------------------------------------------------------------------------
class _Gym(VectorEnv):
    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012 - Gymnasium's name

    def __init__(self, core: Any, autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        modes = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in modes:
            raise ValueError(
                f"autoreset_mode must be one of {', '.join(m.value for m in modes)} (an AutoresetMode), "
                f"got {autoreset_mode!r}"
            )
        self.core = core
        self.num_envs = core.n
        self.single_observation_space = core.observation_space
        self.single_action_space = core.action_space
        from gymnasium.vector.utils import batch_space

        self.observation_space = batch_space(core.observation_space, core.n)
        self.action_space = batch_space(core.action_space, core.n)
        self.render_mode = None
        self.autoreset_mode: AutoresetMode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self._next_obs: np.ndarray | None = None  # next-step mode: the episodes that the next step starts

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if options:
            raise ValueError(f"these environments take no reset options, got {options!r}")
        if seed is None:
            seeds: list[int | None] = [None] * self.num_envs
        elif isinstance(seed, int):
            seeds = [seed + i for i in range(self.num_envs)]  # as gymnasium.vector.SyncVectorEnv seeds
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"give {self.num_envs} seeds, got {len(seeds)}")
        if seed is not None:
            self._np_random, self._np_random_seed = gymnasium.utils.seeding.np_random(seeds[0])
        # (next-step mode, after an episode's end: the next episode is dealt already, and is the one a view's
        # reset() would start; a seeded environment starts its stream again)
        advance = self._next_obs is None
        self._next_obs = None
        return self.core.reset(seeds, advance=advance), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n = self.num_envs
        if self._next_obs is not None:  # next-step mode: this step starts the next episodes
            obs, self._next_obs = self._next_obs, None
            return obs, np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), {}
        played, rewards, obs, infos = self.core.step(actions)
        info: dict[str, Any] = {}
        for i, one in enumerate(infos):
            info = self._add_info(info, one, i)
        rewards = np.asarray(rewards, dtype=np.float64)
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            self._next_obs = obs
            return played, rewards, np.ones(n, dtype=bool), np.zeros(n, dtype=bool), info
        final_obs = np.empty(n, dtype=object)
        for i in range(n):
            final_obs[i] = played[i]
        out: dict[str, Any] = {"final_obs": final_obs, "_final_obs": np.ones(n, dtype=bool)}
        out["final_info"], out["_final_info"] = info, np.ones(n, dtype=bool)
        return obs, rewards, np.ones(n, dtype=bool), np.zeros(n, dtype=bool), out

    def action_masks(self) -> np.ndarray:
        """Legal actions of every environment's current episode, (num_envs, mask size)."""
        return self.core.mask  # type: ignore[no-any-return]


class ProposerVectorEnv(_Gym):
    """``num_envs`` proposer views as one Gymnasium ``VectorEnv`` (see the module docstring); keyword arguments as
    :class:`~eq_env.exchange_audit.views.ExchangeAuditProposerEnv`, and ``autoreset_mode``."""

    def __init__(
        self,
        num_envs: int = 8,
        validator: Policy | str = "rule",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **kwargs: Any,
    ) -> None:
        super().__init__(_core("proposer", num_envs, validator, kwargs), autoreset_mode)


class ValidatorVectorEnv(_Gym):
    """``num_envs`` validator views as one Gymnasium ``VectorEnv`` (see the module docstring); keyword arguments as
    :class:`~eq_env.exchange_audit.views.ExchangeAuditValidatorEnv`, and ``autoreset_mode``."""

    def __init__(
        self,
        num_envs: int = 8,
        proposer: Policy | str = "honest",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **kwargs: Any,
    ) -> None:
        super().__init__(_core("validator", num_envs, proposer, kwargs), autoreset_mode)
