"""The proposer's single-agent Gymnasium view of the repeated game, for RL with the history in the observation.

``gymnasium.make("eq_env/ExchangeAuditRepeatedProposer-v0", validator="rule", **config)`` plays the proposer of
the repeated game (:mod:`eq_env.exchange_audit.repeated.env`) against a fixed validator (any validator spec or
object; default the paper's rule engine). One step is one round; an episode is the repeated game's episode
(terminated at its end, truncated at the cap T of a geometric horizon).

* Observation: the one-shot proposer view's features
  (:func:`~eq_env.exchange_audit.features.proposer_features`: intent, observed numbers, margins, what it knows of
  its compliance, and the public rules, whose q is the round's q_t) followed by the history's
  (:data:`HISTORY_FEATURES`: round and rounds left as shares of T, δ, the clean and failed audits, the
  punishment left, last round's request, approval and verdict), as float32.
* Action (``action_encoding``): ``"multidiscrete"`` (default), the one-shot view's discrete artifact space
  (:mod:`eq_env.exchange_audit.features`), ``MultiDiscrete([2,2,2,3,3,3,3])`` and a 3 per claim the claim
  schema adds: act or not, report honestly or shade, each claim asserted, omitted or negated, 0/6/18 words;
  or ``"strategy"``, ``Discrete(3)``: the round's stage strategy among those the dynamic programme chooses
  from (:func:`~.dp.stage_strategies`: 0 honest, 1 shade, 2 false claims), so that a policy learns *when* to
  lie, as the best response does, not how.
* Reward: the proposer's payoff of the round (``reward_mode="individual"``, default) or the welfare.
* Info: the environment's round info, its ``"episode"`` renamed ``"episode_index"`` (SB3's ``Monitor`` owns
  ``"episode"``).

* ``render_mode``: ``"ansi"``, ``"human"`` (printed) or ``"rgb_array"`` (the round as a picture, one shape for every
  frame: :mod:`eq_env.core.render`). An unknown keyword is a ``TypeError``, a bad value a ``ValueError``.

It drives the AEC environment round by round, so it plays every configuration the environment plays (noisy or
delayed audits included) and its episodes are those of ``exchange_audit_repeated_v0`` for the same seed.

Train with one torch thread on a small machine (``torch.set_num_threads(1)`` before SB3 builds its model; the
``eq-env`` commands do): a thread per core contends on small networks.

Version history:

* v0: first version.
* v0, before its first release: ``render_mode`` takes ``"human"`` and ``"rgb_array"``; an unknown
  keyword is a ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eq_env.core.policy import BasePolicy, Policy, make_policy
from eq_env.core.render import RENDER_MODES, check_render_mode
from eq_env.core.runner import policy_seed
from eq_env.exchange_audit.features import PROPOSER_FEATURES, artifact_nvec, artifact_submission, proposer_features
from eq_env.exchange_audit.repeated.env import PROPOSER, SEED_STREAMS, VALIDATOR, decode_history, raw_env
from eq_env.exchange_audit.repeated.rules import RepeatedConfig
from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission

__all__ = ["ACTION_ENCODINGS", "FEATURES", "HISTORY_FEATURES", "RepeatedProposerEnv", "ViewPolicy", "history_features"]

HISTORY_FEATURES = (
    "round/T",
    "rounds_left/T",
    "continuation",
    "clean_audits/10",
    "failed_audits/10",
    "punish_left/T",
    "last_request",
    "last_approved",
    "last_clean",
    "last_failed",
)
FEATURES = (*PROPOSER_FEATURES, *HISTORY_FEATURES)
FEATURE_BOUND = 1e6
ACTION_ENCODINGS = ("multidiscrete", "strategy")


def history_features(history: Mapping[str, Any], rounds: int) -> np.ndarray:
    """A decoded ``"history"`` (:func:`~.env.decode_history`) as the floats of :data:`HISTORY_FEATURES`."""
    return np.array(
        [
            history["round"] / rounds,
            history["rounds_left"] / rounds,
            history["continuation"],
            history["clean_audits"] / 10,
            history["failed_audits"] / 10,
            history["punish_left"] / rounds,
            float(history["last_action"] == 1),
            float(history["last_decision"] == 1),
            float(history["last_verdict"] == 1),
            float(history["last_verdict"] == 2),
        ],
        dtype=np.float32,
    )


class RepeatedProposerEnv(gymnasium.Env):
    """The proposer's view of the repeated game (see the module docstring)."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's name

    def __init__(
        self,
        validator: Policy | str = "rule",
        *,
        config: RepeatedConfig | None = None,
        preset: str | None = None,
        reward_mode: str = "individual",
        action_encoding: str = "multidiscrete",
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if reward_mode not in ("individual", "welfare"):
            raise ValueError(f"reward_mode must be 'individual' or 'welfare', got {reward_mode!r}")
        if action_encoding not in ACTION_ENCODINGS:
            raise ValueError(f"action_encoding must be one of {ACTION_ENCODINGS}, got {action_encoding!r}")
        check_render_mode(render_mode)
        from eq_env.exchange_audit.repeated.spec import ID

        self.env = raw_env(config=config, preset=preset, reward_mode=reward_mode, render_mode=render_mode, **overrides)
        self.config: RepeatedConfig = self.env.config
        self.reward_mode = reward_mode
        self.render_mode = render_mode
        self.other = make_policy(validator, "validator", ID)
        self.action_encoding = action_encoding
        self.action_space: spaces.Space[Any]
        if action_encoding == "strategy":
            from eq_env.exchange_audit.repeated.dp import stage_strategies

            menu = stage_strategies(self.config.stage)
            self.strategies = tuple(menu)
            self._players = [make_policy(spec, "proposer", ID) for spec in menu.values()]
            self.action_space = spaces.Discrete(len(menu))
        else:
            self.strategies = ()
            self._players = []
            self.action_space = spaces.MultiDiscrete(list(artifact_nvec(self.config.stage.claim_schema)))
        self.observation_space = spaces.Box(-FEATURE_BOUND, FEATURE_BOUND, shape=(len(FEATURES),), dtype=np.float32)
        self._view: Any = None
        self._seeded = False

    def _observe(self) -> np.ndarray:
        obs = self.env.observe(PROPOSER)
        self._view = decode_proposer_observation(obs)
        history = history_features(decode_history(obs), self.config.rounds)
        return np.concatenate([proposer_features(self._view), history])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if options:
            raise ValueError(
                f"this view takes no reset options (game parameters go to gymnasium.make), got {options!r}"
            )
        super().reset(seed=seed)
        if seed is not None or not self._seeded:
            # the validator is seeded as the runner seeds it (an unseeded first reset: unseeded)
            self.other.reset(seed=None if seed is None else policy_seed(seed, SEED_STREAMS["validator"]))
            for player in self._players:
                player.reset(seed=None if seed is None else policy_seed(seed, SEED_STREAMS["proposer"]))
            self._seeded = True
        self.env.reset(seed=seed)
        return self._observe(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._view is None:  # (also once the episode ended)
            raise RuntimeError("the episode is over: call reset()" if self._seeded else "step() before reset()")
        env = self.env
        env.step(self._submission(action))
        obs = env.observe(VALIDATOR)
        decision = int(self.other.act(obs)) if int(obs["action_mask"][1]) else 0
        env.step(decision)
        reward = float(env.rewards[PROPOSER])
        terminated, truncated = bool(env.terminations[PROPOSER]), bool(env.truncations[PROPOSER])
        info = dict(env.infos[PROPOSER])
        # (SB3's Monitor reads "episode" as its own summary of a finished episode: the round's index goes here)
        info["episode_index"] = info.pop("episode")
        features = self._observe()
        if terminated or truncated:
            self._view = None
        return features, reward, terminated, truncated, info

    def _submission(self, action: Any) -> dict[str, Any]:
        """The environment's action for the proposer (the view's action checked first)."""
        arr = np.asarray(action)
        if self.action_encoding == "strategy":
            if arr.shape != () or arr.dtype.kind not in "iu" or not 0 <= int(arr) < len(self._players):
                raise ValueError(f"action {action!r} is outside {self.action_space}")
            return self._players[int(arr)].act(self.env.observe(PROPOSER))  # type: ignore[no-any-return]
        if not self.action_space.contains(arr.astype(np.int64) if arr.dtype.kind in "iu" else arr):
            raise ValueError(f"action {action!r} is outside {self.action_space}")
        return encode_submission(artifact_submission(self._view, arr), self._view.public.claim_schema)

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            gymnasium.logger.warn(f"render() called without a render_mode; pass one of {RENDER_MODES}")
            return None
        return self.env.render()  # type: ignore[no-any-return]

    def action_masks(self) -> np.ndarray:
        """Every action is always legal (sb3-contrib's MaskablePPO asks anyway)."""
        size = (
            len(self._players)
            if self.action_encoding == "strategy"
            else sum(artifact_nvec(self.config.stage.claim_schema))
        )
        return np.ones(size, dtype=bool)


class ViewPolicy(BasePolicy):
    """A model trained on :class:`RepeatedProposerEnv` as a proposer policy of the repeated environment: the
    observation's features in, the model's action out (the most likely one, or with ``deterministic=False``
    one drawn from its distribution), played as the view plays it.

    ``model`` is anything with SB3's ``predict(features, deterministic=...) -> (action, state)``."""

    role = "proposer"

    def __init__(
        self, model: Any, config: RepeatedConfig, action_encoding: str = "strategy", deterministic: bool = True
    ) -> None:
        super().__init__()
        self.deterministic = deterministic
        if action_encoding not in ACTION_ENCODINGS:
            raise ValueError(f"action_encoding must be one of {ACTION_ENCODINGS}, got {action_encoding!r}")
        from eq_env.exchange_audit.repeated.spec import ID

        self.model = model
        self.config = config
        self.action_encoding = action_encoding
        self._players: list[Any] = []
        if action_encoding == "strategy":
            from eq_env.exchange_audit.repeated.dp import stage_strategies

            self._players = [make_policy(spec, "proposer", ID) for spec in stage_strategies(config.stage).values()]

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        for player in self._players:
            player.reset(seed=seed)
        if not self.deterministic and seed is not None and hasattr(self.model, "set_random_seed"):
            # (sampled play reproducible per episode; SB3 takes seeds below 2**32, the runner's are 64-bit).
            # SB3 seeds the process's random, NumPy and torch generators here: code sharing the process sees it
            self.model.set_random_seed(seed % 2**32)

    def act(self, observation: Mapping[str, Any]) -> Any:
        view = decode_proposer_observation(observation)
        features = np.concatenate(
            [proposer_features(view), history_features(decode_history(observation), self.config.rounds)]
        )
        action, _ = self.model.predict(features, deterministic=self.deterministic)
        if self.action_encoding == "strategy":
            return self._players[int(action)].act(observation)
        return encode_submission(artifact_submission(view, np.asarray(action)), view.public.claim_schema)

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"
        return f"ViewPolicy({type(self.model).__name__}, {self.action_encoding}, {how})"
