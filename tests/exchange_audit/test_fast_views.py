"""The fast single-agent views equal today's (the AEC-driven views, kept below as the reference), episode by episode.

``RefProposerEnv`` / ``RefValidatorEnv`` are a frozen copy of the views as they were before they played the game
through the batch engine (``eq_env/exchange_audit/views.py`` before its fast path): they drive the full AEC
environment, dict observations and all. Every test here plays the same seed through both and compares
observations, rewards, terminations, truncations, infos and action masks.
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
from eq_env.exchange_audit.rules import ProposerAction
from eq_env.exchange_audit.spaces import decode_proposer_observation, decode_validator_observation, encode_submission
from eq_env.exchange_audit.views import NothingToLearnError

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


class _RefView(gymnasium.Env):
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
        info = {"episode_index": info.pop("episode"), **info}  # (the views' name for it: Gymnasium owns "episode")
        return float(env.rewards[self._role_agent]), info


class RefProposerEnv(_RefView):
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


class RefValidatorEnv(_RefView):
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


# ---------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------
import copy  # noqa: E402

import pytest  # noqa: E402

from eq_env.baselines.exchange_audit.scripted import HonestProposer, RuleValidator  # noqa: E402
from eq_env.exchange_audit import views as fast  # noqa: E402


class ActOnlyValidator(RuleValidator):
    """A validator that cannot act in bulk (an LLM or an SB3 partner stands for it): the slow path."""

    def act(self, observation: Any) -> int:
        return int(super().act(observation))


class ActOnlyProposer(HonestProposer):
    def act(self, observation: Any) -> Any:
        return super().act(observation)


def _same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{where}: {a} != {b}"
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"


def _compare(ref: Any, new: Any, episodes: int, seed: int, action: Any, reseed_at: int | None = None) -> None:
    """Play both views side by side: the same reset seeds, the same actions, the same everything out."""
    rng = np.random.default_rng(seed)
    _same(ref.reset(seed=seed)[0], new.reset(seed=seed)[0], "first observation")
    for t in range(episodes):
        _same(ref.action_masks(), new.action_masks(), f"mask {t}")
        a = action(rng)
        r, n = ref.step(a), new.step(a)
        for name, x, y in zip(("obs", "reward", "terminated", "truncated", "info"), r, n, strict=True):
            _same(x, y, f"episode {t} {name}")
        if reseed_at is not None and t == reseed_at:
            _same(ref.reset(seed=seed + 7)[0], new.reset(seed=seed + 7)[0], f"reseeded {t}")
        else:
            _same(ref.reset()[0], new.reset()[0], f"reset {t}")


def _multi(rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.integers(n) for n in (2, 2, 2, 3, 3, 3, 3)])


def _biased(rng: np.random.Generator) -> np.ndarray:
    a = _multi(rng)
    a[0] = 1 if rng.random() < 0.85 else 0  # mostly requests: the validator has something to decide
    return a


PROPOSER_CASES = [
    ("rule", {}),
    ("rule", {"q": 0.7, "B": 1}),
    ("rule", {"B": 2, "reveal_compliance": True, "V": 2.0, "L": 1.0}),
    ("rule", {"audit_intensities": [0.0, 0.5, 1.0], "reward_mode": "welfare"}),
    ("rule", {"cost_model": "tokens", "max_words": 5, "B": 0, "q": 0.9, "noise_sd": 0.3}),
    ("rule", {"action_encoding": "discrete", "q": 0.5, "B": 3, "ambiguous_rate": 0.9}),
    ("rule", {"preset": "paper_main_script", "safe_margin": 0.2, "no_trade_payoff": -0.5}),
    ("approve", {"q": 0.4}),
    ("block", {"reward_mode": "welfare"}),
    (ActOnlyValidator(), {"q": 0.5, "B": 2}),
    ("rule", {"render_mode": "ansi"}),
]


@pytest.mark.parametrize("validator, kwargs", PROPOSER_CASES)
def test_fast_proposer_view_equals_the_aec_view(validator: Any, kwargs: dict[str, Any]) -> None:
    kwargs = dict(kwargs)
    ref = RefProposerEnv(copy.deepcopy(validator), **kwargs)
    new = fast.ExchangeAuditProposerEnv(copy.deepcopy(validator), **kwargs)
    if kwargs.get("action_encoding") == "discrete":
        _compare(ref, new, 120, 3, lambda rng: int(rng.integers(648)), reseed_at=50)
    else:
        _compare(ref, new, 120, 3, _biased, reseed_at=50)
    if kwargs.get("render_mode") == "ansi":
        assert ref.render() == new.render()


VALIDATOR_CASES = [
    ("honest", {}),
    ("honest", {"skip_no_trade": False, "q": 0.6, "B": 1}),
    ("silent", {"skip_no_trade": False}),
    ("strategic", {"q": 0.2, "reward_mode": "welfare"}),
    ("strategic", {"skip_no_trade": False, "audit_intensities": [0.1, 0.5, 0.9]}),
    ("strategic:trigger=payoff", {"V": 2.0, "L": 1.0, "q": 0.1, "B": 2}),
    ("strategic:truthful_claims=True,words=30", {"max_words": 20, "cost_model": "tokens", "q": 0.8}),
    ("honest:claims_from=truth", {"preset": "paper_scripted", "audit_intensities": [0.0, 1.0]}),
    ("honest:request=always,explain_no_trade=False", {"noise_sd": 0.5, "B": 3, "q": 0.5}),
    (ActOnlyProposer(), {"skip_no_trade": False, "q": 0.5}),
]


@pytest.mark.parametrize("proposer, kwargs", VALIDATOR_CASES)
def test_fast_validator_view_equals_the_aec_view(proposer: Any, kwargs: dict[str, Any]) -> None:
    ref = RefValidatorEnv(copy.deepcopy(proposer), **kwargs)
    new = fast.ExchangeAuditValidatorEnv(copy.deepcopy(proposer), **kwargs)
    _compare(ref, new, 120, 5, lambda rng: int(rng.integers(2)), reseed_at=60)


def test_fast_views_take_the_fast_path_for_scripted_partners_only() -> None:
    assert fast.ExchangeAuditProposerEnv("rule").fast and fast.ExchangeAuditValidatorEnv("strategic").fast
    assert not fast.ExchangeAuditProposerEnv(ActOnlyValidator()).fast
    assert not fast.ExchangeAuditValidatorEnv(ActOnlyProposer()).fast
    assert fast.ExchangeAuditProposerEnv("rule", render_mode="ansi").fast  # (render() replays the episode)
    assert not fast.ExchangeAuditProposerEnv("rule", render_mode="human").fast  # (it prints every step)


def test_fast_validator_view_gives_up_as_the_aec_view_does() -> None:
    never = {"risk_limit_low": 0.01, "risk_limit_high": 0.01, "ambiguous_rate": 0.0, "max_skips": 30}
    for view in (RefValidatorEnv("honest", **never), fast.ExchangeAuditValidatorEnv("honest", **never)):
        with pytest.raises(NothingToLearnError, match="NO_TRADE 30 times"):
            view.reset(seed=0)


def test_fast_views_refuse_what_the_aec_views_refuse() -> None:
    for cls in (RefProposerEnv, fast.ExchangeAuditProposerEnv):
        view = cls()
        with pytest.raises(RuntimeError, match="before reset"):
            view.step(np.zeros(7, dtype=np.int64))
        view.reset(seed=0)
        with pytest.raises(ValueError, match="outside"):
            view.step(np.array([2, 0, 0, 0, 0, 0, 0]))
        with pytest.raises(ValueError, match="no reset options"):
            view.reset(options={"q": 1})
    for vcls in (RefValidatorEnv, fast.ExchangeAuditValidatorEnv):
        vview = vcls()
        with pytest.raises(RuntimeError, match="before reset"):
            vview.step(0)
        vview.reset(seed=0)
        with pytest.raises(ValueError, match="outside"):
            vview.step(2)


# Noisy or delayed audits: the views play them through the AEC environment, so they equal it.
NOISY = {f"{kind}_{claim}": rate for kind, rate in (("miss", 0.3), ("false_fail", 0.2))
         for claim in ("intent", "risk_within_limit", "net_delta_bounded", "confidence")}  # fmt: skip
NOISY_PROPOSER_CASES = [
    ("rule", {"q": 0.8, "B": 2, **NOISY}),
    ("rule", {"q": 0.9, "audit_delayed": True, "audit_intensities": [0.5, 1.0]}),
    ("approve", {"q": 0.7, "miss_risk_within_limit": 0.5, "false_fail_intent": 0.2, "audit_delayed": True}),
]
NOISY_VALIDATOR_CASES = [
    ("strategic", {"q": 0.8, "B": 2, **NOISY}),
    ("honest", {"q": 0.9, "audit_delayed": True, "skip_no_trade": False}),
    ("strategic:trigger=payoff", {"q": 0.6, "false_fail_net_delta_bounded": 0.4, "audit_intensities": [0.3, 1.0]}),
]


@pytest.mark.parametrize("validator, kwargs", NOISY_PROPOSER_CASES)
def test_proposer_view_with_noisy_or_delayed_audits_equals_the_aec_view(validator: str, kwargs: dict[str, Any]) -> None:
    ref, new = RefProposerEnv(validator, **kwargs), fast.ExchangeAuditProposerEnv(validator, **kwargs)
    assert not new.fast  # (the bulk arithmetic plays exact, immediate audits only)
    _compare(ref, new, 80, 3, _biased, reseed_at=40)


@pytest.mark.parametrize("proposer, kwargs", NOISY_VALIDATOR_CASES)
def test_validator_view_with_noisy_or_delayed_audits_equals_the_aec_view(proposer: str, kwargs: dict[str, Any]) -> None:
    ref, new = RefValidatorEnv(proposer, **kwargs), fast.ExchangeAuditValidatorEnv(proposer, **kwargs)
    assert not new.fast
    _compare(ref, new, 80, 5, lambda rng: int(rng.integers(2)), reseed_at=40)


def test_the_views_play_the_noise_and_the_delay() -> None:
    """Every checked true claim fails at false-fail rate 1: the honest proposer's audited requests all fail; a
    delayed audit leaves the validator's observation as unaudited while the info still shows the audit."""
    view = fast.ExchangeAuditValidatorEnv("honest", q=1.0, B=None, **{k: 1.0 for k in NOISY if "false_fail" in k})
    outcomes = set()
    view.reset(seed=0)
    for _ in range(30):
        outcomes.add(view.step(1)[4]["audit"]["outcome"])
        view.reset()
    assert outcomes == {"FAIL"}
    now = fast.ExchangeAuditValidatorEnv("honest", q=1.0)
    late = fast.ExchangeAuditValidatorEnv("honest", q=1.0, audit_delayed=True)
    never = fast.ExchangeAuditValidatorEnv("honest", q=0.0)
    audit = [VALIDATOR_FEATURES.index(name) for name in ("audited", "audit_pass", "audit_fail", "revealed")]
    obs = [v.reset(seed=4)[0][audit] for v in (now, late, never)]
    assert obs[0][0] == 1 and np.array_equal(obs[1], obs[2])  # delayed: seen as never audited
    assert late.step(0)[4]["audit"]["audited"]


def test_an_action_int_cannot_read_is_refused_naming_the_action_and_the_space() -> None:
    # (the validator view raised int()'s own "invalid literal for int() with base 10" and TypeError)
    views = [fast.ExchangeAuditValidatorEnv(), fast.ExchangeAuditValidatorEnv(ActOnlyProposer())]
    views += [fast.ExchangeAuditProposerEnv(action_encoding="discrete")]
    views += [fast.ExchangeAuditProposerEnv(ActOnlyValidator(), action_encoding="discrete")]
    for view in views:
        view.reset(seed=0)
        for action in ("bad", None, float("nan")):
            with pytest.raises(ValueError) as refused:
                view.step(action)
            assert str(refused.value) == f"action {action!r} is outside {view.action_space}", view.fast
        view.step(0)  # (the episode is still there to play)
        with pytest.raises(RuntimeError, match=r"^the episode is over: call reset\(\)$"):
            view.step(0)
