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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eq_env.core.policy import Policy, make_policy
from eq_env.core.runner import policy_seed
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.env import PROPOSER, SEED_STREAMS, VALIDATOR, raw_env, resolve_config
from eq_env.exchange_audit.features import (
    ARTIFACT_NVEC,
    N_ARTIFACTS,
    PROPOSER_FEATURES,
    VALIDATOR_FEATURES,
    all_artifacts,
    artifact_submission,
    proposer_features,
    validator_features,
)
from eq_env.exchange_audit.game import ProposerAction
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation, encode_submission

__all__ = ["ExchangeAuditProposerEnv", "ExchangeAuditValidatorEnv", "NothingToLearnError"]

_ARTIFACTS = all_artifacts()
FEATURE_BOUND = 1e6  # the configuration's own ranges keep every feature within it


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


class _View(gymnasium.Env):
    """What both views share: configurations (one per q), the other role's policy, seeding."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}  # noqa: RUF012 - Gymnasium's name
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
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
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
        self._envs = [raw_env(config=c, reward_mode=reward_mode, render_mode=render_mode) for c in self.configs]
        self._env = self._envs[0]
        self._seeded = False
        self._fresh: set[int] = set()  # environments whose seeded first episode is not played yet

    def _start_episode(self, seed: int | None) -> None:
        if seed is not None:
            # the runner's seeding, one source of truth
            self.other.reset(seed=policy_seed(seed, SEED_STREAMS[self._other_role]))
            for k, env in enumerate(self._envs):
                env.reset(seed=seed + k)
            self._fresh = set(range(len(self._envs)))
            self._seeded = True
        elif not self._seeded:
            self.other.reset(seed=None)
            self._seeded = True
        k = int(self.np_random.integers(len(self._envs))) if len(self._envs) > 1 else 0
        self._env = self._envs[k]
        if k in self._fresh:  # its seeded episode 0 is ready: play it
            self._fresh.discard(k)
        else:
            self._env.reset()

    def render(self) -> str | None:
        return self._env.render()

    def _finish(self, decision: int) -> tuple[float, dict[str, Any]]:
        env = self._env
        env.step(decision)
        info = dict(env.infos[PROPOSER])
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
        super().__init__("proposer", validator, config, preset, reward_mode, audit_intensities, render_mode,
                         overrides)  # fmt: skip
        if action_encoding not in ("multidiscrete", "discrete"):
            raise ValueError(f"action_encoding must be 'multidiscrete' or 'discrete', got {action_encoding!r}")
        self.action_encoding = action_encoding
        self.action_space: spaces.Space[Any] = (
            spaces.MultiDiscrete(list(ARTIFACT_NVEC))
            if action_encoding == "multidiscrete"
            else spaces.Discrete(N_ARTIFACTS)
        )
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(PROPOSER_FEATURES),), dtype=np.float32
        )
        self._view: Any = None
        self._features: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        _no_options(options)
        super().reset(seed=seed)
        self._start_episode(seed)
        self._view = decode_proposer_observation(self._env.observe(PROPOSER))
        self._features = proposer_features(self._view)
        return self._features, {}

    def choices(self, action: Any) -> np.ndarray:
        """The 7 artifact choices an action of this view's space stands for."""
        if self.action_encoding == "discrete":
            return _ARTIFACTS[int(action)]
        return np.asarray(action, dtype=np.int64).reshape(len(ARTIFACT_NVEC))

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        features = self._features  # one-step episodes: the last observation is the first (a copy, as Gymnasium asks)
        if self._view is None or features is None:
            raise RuntimeError("step() before reset()")
        if not self.action_space.contains(
            np.asarray(action) if self.action_encoding == "multidiscrete" else int(action)
        ):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        submission = artifact_submission(self._view, self.choices(action))
        env = self._env
        env.step(encode_submission(submission))
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
        size = sum(ARTIFACT_NVEC) if self.action_encoding == "multidiscrete" else N_ARTIFACTS
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
        super().__init__("validator", proposer, config, preset, reward_mode, audit_intensities, render_mode,
                         overrides)  # fmt: skip
        self.skip_no_trade = bool(skip_no_trade)
        self.max_skips = max_skips
        self.action_space = spaces.Discrete(2)
        self.observation_space = spaces.Box(
            -FEATURE_BOUND, FEATURE_BOUND, shape=(len(VALIDATOR_FEATURES),), dtype=np.float32
        )
        self._obs: Any = None
        self._features: np.ndarray | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        _no_options(options)
        super().reset(seed=seed)
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
        features = self._features
        if self._obs is None or features is None:
            raise RuntimeError("step() before reset()")
        if not self.action_space.contains(int(action)):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        decision = int(action)
        illegal = decision == 1 and not int(self._obs["action_mask"][1])
        reward, info = self._finish(0 if illegal else decision)
        info["illegal_action"] = illegal
        self._obs = self._features = None
        return features.copy(), reward, True, False, info

    def action_masks(self) -> np.ndarray:
        """[BLOCK, APPROVE] legality (APPROVE is illegal after a NO_TRADE)."""
        if self._obs is None:
            return np.ones(2, dtype=bool)
        return self._obs["action_mask"].astype(bool)
