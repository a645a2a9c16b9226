"""
# Exchange–audit

| Import               | `from eq_env import exchange_audit_v0`                                 |
|----------------------|------------------------------------------------------------------------|
| Registered ids       | `"eq_env/exchange-audit-v0"` (`pettingzoo.make("aec"` or `"parallel", …)`) |
| Actions              | proposer: Dict (action, proposal, claims, text); validator: Discrete(2) |
| Parallel API         | Yes (two steps per episode: proposal, then decision)                   |
| Manual control       | No                                                                     |
| Agents               | `agents = ['proposer_0', 'validator_0']`                               |
| Number of agents     | 2                                                                      |
| Action mask          | validator only, in its observation under `"action_mask"`               |
| Observation shapes   | flat Dicts of Discrete / MultiDiscrete / MultiBinary / Box, plus text  |

A proposer (the paper's trader) holds a private position and asks a
validator (the risk manager) to approve a trade, attaching a reasoning
artifact: typed, auditable claims and a short free text. With probability
`q` an audit checks `B` of the claims against the truth and tells the
validator what it found; the validator then approves or blocks. One episode
is one proposal. The game is that of Bańka & Chudziak, "Toward Explanatory
Equilibrium: Verifiable Reasoning as a Coordination Mechanism under
Asymmetric Information" (2026); the `"paper"` preset reproduces its code's
mechanics (see `eq_env.exchange_audit.config`).

```python
from eq_env import exchange_audit_v0

env = exchange_audit_v0.env(q=0.3, render_mode="ansi")
env.reset(seed=0)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    elif agent == "validator_0":
        action = env.action_space(agent).sample(observation["action_mask"])
    else:
        action = env.action_space(agent).sample()
    env.step(action)
print(env.render())
```

## One episode

1. Nature draws the position: the risk limit ~ U(0.8, 1.2), and with
   probability `ambiguous_rate` a borderline hedge just inside both limits,
   otherwise a hedge (mostly compliant) or a speculation (almost never).
   It is **compliant** iff true risk ≤ risk limit and |true net delta| ≤
   delta limit.
2. `proposer_0` observes the true intent, the risk, net delta and hedge size
   with N(0, `noise_sd`) noise, and the public parameters (limits and
   payoffs). With `reveal_compliance=True` (preset `"paper_scripted"`) it
   also learns whether its true position is within each limit, as the
   paper's scripted trader did. It is not told whether the episode is
   ambiguous (that would reveal compliance). It acts once.
3. The audit coin falls (for every episode, NO_TRADE included).
4. `validator_0` sees the submission and the audit and acts once. After a
   NO_TRADE only BLOCK is legal: there is nothing to approve.
5. Both are paid; the episode ends (terminated, never truncated).

## Proposer action (`Dict`)

| key                | space                      | meaning                                          |
|--------------------|----------------------------|--------------------------------------------------|
| `action`           | Discrete(2)                | 0 NO_TRADE, 1 REQUEST_APPROVAL                   |
| `reported_intent`  | Discrete(2)                | 0 HEDGE, 1 SPECULATE                             |
| `reported_numbers` | Box(3) float64             | risk ∈ [0, 4], net delta ∈ [−3, 3], hedge ∈ [0, 3] |
| `claims`           | MultiDiscrete([3,3,3,2,2]) | which claims are made, and the categorical values |
| `claim_values`     | Box(2) float64             | risk_metric ∈ [0, 4], confidence ∈ [−1, 2]       |
| `text`             | FreeText(`max_text_chars`) | free text; truncated to `max_words` words         |
| `word_count`       | Discrete(`max_words`+1)    | words paid for when `text` is empty              |
| `token_count`      | Discrete(max_artifact_tokens+1) | its size in tokens (charged if `cost_model="tokens"`) |

The claims, one entry of `claims` each:

| claim               | `claims[i]`                     | value             |
|---------------------|---------------------------------|-------------------|
| `intent`            | 0 absent, 1 HEDGE, 2 SPECULATE  |                   |
| `risk_within_limit` | 0 absent, 1 true, 2 false       |                   |
| `net_delta_bounded` | 0 absent, 1 true, 2 false       |                   |
| `risk_metric`       | 0 absent, 1 present             | `claim_values[0]` (never audited) |
| `confidence`        | 0 absent, 1 present             | `claim_values[1]` (fails an audit outside [0, 1]) |

`word_count` lets a numeric policy pay for a text it does not write; when
`text` holds at least one word, its own word count is used instead. Text may
hold any characters but control characters other than whitespace. Typed helpers build
and read these dicts: `eq_env.exchange_audit.spaces.encode_submission(Submission(...))`.
An action outside its space raises `ActionError` naming the field.

## Illegal actions

The validator's APPROVE after a NO_TRADE is in its space but not legal (its
mask is [1, 0]). With `illegal_actions="terminate"` (the default) it is
played PettingZoo classic's way (`TerminateIllegalWrapper`, tictactoe): the
episode ends (the repeated game's too, whatever rounds were left), the
validator is rewarded −1 and the proposer 0, the game plays the only legal
decision, BLOCK (the final info is that of a blocked NO_TRADE), and both
agents' final info holds `"illegal_action": "validator_0"`, as do the
environment's `illegal_action` attribute (None otherwise) and the episode's
record (`EpisodeRecord.illegal_action`, the repeated game's too). Mask-unaware
utilities (`pettingzoo.utils.average_total_reward`, `pettingzoo.test.state_test`)
therefore run. `illegal_actions="raise"` (strict) raises `ActionError`
instead, and nothing is played. The runner never sends an illegal action: a
single legal action is taken without asking the policy.

## Observations

`proposer_0`: `phase` (0 proposal, 1 decision, 2 done), `intent`,
`observed_numbers` (risk, net delta, hedge size), `known_compliance`
(risk within limit, net delta bounded: 0 unknown — always, unless
`reveal_compliance` — 1 true, 2 false), `public`.

`validator_0`: `phase`, `action_mask` ([BLOCK, APPROVE]), the submission
(`proposer_action`, `reported_intent`, `reported_numbers`, `claims`,
`claim_values`, `word_count`, `token_count`, `text`), the audit (`audit_outcome`: 0 skipped,
1 pass, 2 fail, 3 inconclusive; `audit_checked` and `audit_failed` over
[intent, risk_within_limit, net_delta_bounded, confidence];
`revealed_compliance`: 0 not revealed, 1 compliant, 2 non-compliant — an
audit that ran its checks, passing or failing, reveals the truth; a skipped or
inconclusive one reveals nothing), `ambiguous` (the rule engine knows a
borderline episode), `public`.

`public` is a Box(16) of: risk_limit, delta_limit, q, checks_per_audit, V, L,
alpha, audit_cost, max_words, no_trade_payoff, bad_approval_loss, safe_margin,
noise_sd, max_text_chars, cost_in_tokens (0 or 1), max_artifact_tokens.
`decode_proposer_observation(obs)` and `decode_validator_observation(obs)` (in
`eq_env.exchange_audit.spaces`) give typed views. `state()` returns the private position as a Box(8).

## The audit

Audited with probability `q`. Missing any of intent / risk_within_limit /
net_delta_bounded, or `B = 0`: **inconclusive**. Otherwise `B` of
[intent, risk_within_limit, net_delta_bounded, confidence] are checked
(all four when `B` ≥ 4 or None), each against the **truth**; confidence fails
outside [0, 1]. Any failed check: **fail**; else **pass**.

## The free-text regime

`regime` says what of the proposer's artifact reaches the validator and the
audit (`eq_env.exchange_audit.rules.withhold`):

* `"artifacts"` (the default, the paper): all of it;
* `"text_only"`: the text alone, its words charged as before. The typed
  claims are withheld (the validator's `claims` are all absent), so an audit
  finds none of the three it needs and is **inconclusive**: it checks and
  reveals nothing, never fines, and still costs `c`;
* `"action_only"`: nothing — no claim, no text, no word charged (the paper's
  no-explanation baseline).

The action and the reported position always go through. `eq-env free-text`
measures the three regimes against each other.

## Rewards

| outcome                        | proposer | validator                     |
|--------------------------------|----------|-------------------------------|
| NO_TRADE                       | +1       | +1                            |
| REQUEST_APPROVAL, APPROVE      | +V       | +V if compliant, else −10     |
| REQUEST_APPROVAL, BLOCK        | 0        | 0                             |
| every episode                  | −α·words (or −α·tokens) |                |
| audited (any outcome)          |          | −c                            |
| audit failed                   | −L       |                               |

`reward_mode="welfare"` (default): both agents receive the welfare (the sum).
`reward_mode="individual"`: each its own payoff. At the end `infos[agent]`
holds both payoffs, the welfare, the decision, compliance, the audit record
and the private state.

## Arguments

`exchange_audit_v0.env(config=None, *, preset=None, reward_mode="welfare",
render_mode=None, illegal_actions="terminate", observation_mode="text", **overrides)`:
`observation_mode="numeric"` gives every agent `Dict(observation=Box(float32),
action_mask=Box(int8))` and `Discrete` actions instead (the proposer's 648
artifacts of `eq_env.exchange_audit.features`; only the no-op, 0, legal for
the agent whose phase it is not), numeric infos of fixed keys
(`eq_env.exchange_audit.numeric.INFO_KEYS`), the same game otherwise
(`eq_env.core.numeric.NumericModeEnv`). `config` is an `ExchangeAuditConfig`;
otherwise the preset (default `"paper"`) — giving both is a `ValueError` —
with `overrides` (any of its fields: `q`, `B`, `V`, `L`,
`alpha`, `audit_cost`, `max_words`, `ambiguous_rate`, `noise_sd`,
`delta_limit`, `risk_limit_low`, `risk_limit_high`, `safe_margin`,
`no_trade_payoff`, `bad_approval_loss`, `max_text_chars`, `cost_model`,
`max_artifact_tokens`, `reveal_compliance`, the noisy audits' `false_fail_<claim>`,
`miss_<claim>`, `audit_delayed`, and `regime`). Invalid values raise `ValueError`; an unknown keyword
a `TypeError`. `render_mode`: `"ansi"` (`render()` returns the episode as text), `"human"` (prints it) or
`"rgb_array"` (that text as a picture, one shape for every frame: `eq_env.core.render`).

`reset(seed=s)` starts episode 0 of seed `s` (a non-negative integer); each later `reset()` the next
episode; `reset(seed=s, options={"episode": i})` jumps to episode `i`, below 10,000,000 (`"episode"` is
the only option; any other key is a `ValueError`, not ignored). `last()` or `step()` before `reset()`, or
`last()` once the episode is over, is a `RuntimeError` saying to call `reset()`. Every
episode consumes a fixed block of random numbers, so episode `i` of seed `s`
has the same position, noise and audit coin under every `q`, `B`, `V`, `L`,
`alpha`, `audit_cost` or `max_words` (parameters of the distribution itself —
`ambiguous_rate`, the limits, `noise_sd` — change what the same numbers make).

Observations are read-only: they are built once per phase and shared (arrays
that take few values — the claim codes, the action mask, the audit flags — are
shared between episodes too), so a policy that wants to modify one must copy it
first.

## Version history

* v0: first release (eq_env 0.1.0).
* v0, unchanged results: the AEC loop is about twice as fast. The
  action and observation spaces are subclasses of Gymnasium's (`FastDiscrete`,
  `FastMultiDiscrete`, `FastDict` in `eq_env.exchange_audit.spaces`) whose
  `sample` draws exactly what Gymnasium's draws, masked or not; every
  observation, reward, info and sampled action of a seed is what it was.
* v0, unchanged at the defaults: noisy audits. `false_fail_<claim>`
  (ε₁: a checked true claim fails) and `miss_<claim>` (ε₀: a checked lie
  passes) per checkable claim, and `audit_delayed` (the validator decides
  before the audit's result; its cost and the penalty still apply). Their
  uniforms come from a fourth generator of the seed, read only when a rate is
  above 0: every draw of the paper's game is where it was.
* v0, unchanged at the default: the free-text regime. `regime`
  (`"artifacts"`, `"text_only"`, `"action_only"`) withholds the typed claims,
  or the whole artifact, from the validator and the audit; it draws no random
  number, so every episode's position, noise and audit coin are as before.
* v0: the validator's APPROVE after a NO_TRADE ends the episode with −1 to
  the validator (`illegal_actions="terminate"`, the new default) instead of raising
  `ActionError` (`illegal_actions="raise"`); runner results are unchanged. The
  numeric observation mode (`observation_mode="numeric"`).
* v0, unchanged at the defaults: pluggable claim schemas.
  `claim_schema` names a registered schema (`"paper"`, the default; `"rich"`,
  which adds a conditional hedge-cover claim and a required risk interval;
  your own, `eq_env.exchange_audit.schema.register_schema`). A schema other
  than the paper's appends its claims to `claims` and `claim_values`, runs
  `audit_checked`/`audit_failed` over its audit pool and adds a
  `claim_schema` text entry to both observations; a pool beyond four claims
  takes its sampling keys from a fifth generator of the seed, read only then.
* v0, unchanged results: `render_mode="rgb_array"` (the text rendering as a picture, one shape
  for every frame of a configuration); an unknown keyword is a `TypeError` (also a `ValueError`, as before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv

from eq_env.core.api import checked_actions
from eq_env.core.config import GameConfig
from eq_env.core.render import RENDER_MODES, rendered
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.render import render_episode
from eq_env.exchange_audit.rules import (
    N_AUDIT_UNIFORMS,
    AuditOutcome,
    Decision,
    DrawStream,
    EpisodeDraws,
    EpisodeOutcome,
    ExchangeAuditGame,
    Intent,
    Payoffs,
    Phase,
    ProposerAction,
)
from eq_env.exchange_audit.spaces import BLOCK_ONLY_MASK, ActionError, ExchangeAuditSpaces

__all__ = [
    "PROPOSER",
    "ROLES",
    "SEED_STREAMS",
    "VALIDATOR",
    "ExchangeAuditParallelEnv",
    "UnknownAgentError",
    "raw_env",
    "resolve_config",
]

PROPOSER = "proposer_0"
VALIDATOR = "validator_0"
ROLES = {"proposer": (PROPOSER,), "validator": (VALIDATOR,)}  # role -> its agents
SEED_STREAMS = {"proposer": 10, "validator": 11}  # role -> the stream its policy's seed is drawn on
REWARD_MODES = ("welfare", "individual")
# What an action the mask forbids does (the validator's APPROVE after a NO_TRADE): "terminate", PettingZoo
# classic's convention (its TerminateIllegalWrapper, tictactoe's), or "raise", an ActionError.
ILLEGAL_ACTIONS = ("terminate", "raise")
ILLEGAL_REWARD = -1.0  # the offender's reward when an illegal action ends the episode (PettingZoo classic's)
_PHASES = tuple(np.int64(phase) for phase in Phase)  # an observation's "phase" entry, by Phase
# The members' names by value (an enum's .name is a descriptor: slower than a tuple).
_ACTION_NAMES = tuple(m.name for m in ProposerAction)
_DECISION_NAMES = tuple(m.name for m in Decision)
_OUTCOME_NAMES = tuple(m.name for m in AuditOutcome)
_INTENT_NAMES = tuple(m.name for m in Intent)
METADATA: dict[str, Any] = {
    "name": "exchange_audit_v0",
    "render_modes": list(RENDER_MODES),
    "is_parallelizable": False,  # the validator observes the proposal: use parallel_env()
    "render_fps": 1,
}


def resolve_config(
    config: ExchangeAuditConfig | None, preset: str | None, overrides: dict[str, Any]
) -> ExchangeAuditConfig:
    """The configuration an environment plays (:meth:`~eq_env.core.config.GameConfig.resolve`)."""
    return ExchangeAuditConfig.resolve(config, preset, overrides)


RESET_OPTIONS = ("episode",)
MAX_EPISODE = 10_000_000  # options["episode"] below it: the CLI's bound of episodes per seed (5 s of skipping)
# PettingZoo's api_test and parallel_api_test call reset(options={"options": 1}) to check that reset takes
# an options argument; that probe is accepted (and ignored), every other unknown key is refused.
_PETTINGZOO_PROBE = "options"


def _check_options(options: Any) -> None:
    """Refuse reset options that would otherwise be ignored without a word (a typo, a game parameter)."""
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise ValueError(
            f"options must be a dict (or None), got {type(options).__name__} {options!r}; "
            f"reset takes {', '.join(map(repr, RESET_OPTIONS))}"
        )
    for key in options:
        if key not in RESET_OPTIONS and key != _PETTINGZOO_PROBE:
            hint = ""
            if key in ExchangeAuditConfig.field_names():
                hint = f" ({key} is a game parameter: make an environment with {key}=...)"
            raise ValueError(f"unknown reset option {key!r}; reset takes {', '.join(map(repr, RESET_OPTIONS))}{hint}")


class UnknownAgentError(KeyError, ValueError):
    """An agent name the environment does not have (a KeyError for dict-like lookups, a ValueError for
    bad input); its message is plain text, not a repr."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _unknown_agent(agent: Any) -> UnknownAgentError:
    return UnknownAgentError(f"unknown agent {agent!r}; agents: {PROPOSER}, {VALIDATOR}")


# The private position, the head of every state() vector (its Box bounds, entry by entry).
_POSITION_LOW = (0, 0, 0, 0, 0, -3, 0, 0)
_POSITION_HIGH = (1, 1, 3, 1.5, 4, 3, 3, 1)
_NO_EXTRA: Mapping[str, Any] = {}
ConfigT = TypeVar("ConfigT", bound=GameConfig)
GameT = TypeVar("GameT")


class _EpisodeBase(Generic[ConfigT, GameT]):
    """What the AEC and parallel adapters share: the game, its spaces and its randomness.

    A subclass sets up ``game`` (a one-shot or repeated game), ``stage`` (the one-shot game being played:
    the game itself, or the repeated game's current round), the observation and state spaces and its draws,
    and plays ``reset``, ``observe``, ``decide``, ``ended``, ``final_info`` and ``_render_text``.
    """

    config: ConfigT
    game: GameT
    stage: ExchangeAuditGame
    observation_spaces: dict[str, spaces.Space]
    state_space: spaces.Box

    def __init__(self, config: ConfigT, reward_mode: str, render_mode: str | None) -> None:
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        self.config = config
        self.reward_mode = reward_mode
        self.episode_index = -1
        # Observations built for the current phase, by agent (the one-shot episode's; the repeated
        # game's episode builds every observation on demand and leaves it empty).
        self._cache: dict[str, tuple[Phase, dict[str, Any]]] = {}

    def _set_codec(self, codec: ExchangeAuditSpaces) -> None:
        self.codec = codec
        self.action_spaces = {PROPOSER: codec.proposer_action, VALIDATOR: codec.validator_action}
        self._claim_keys = max(0, len(codec.pool) - (N_AUDIT_UNIFORMS - 1))  # claim keys per episode (round)

    @staticmethod
    def _episode_option(seed: int | None, options: dict[str, Any] | None) -> int | None:
        """Check reset's arguments; the episode ``options`` asks for, if any."""
        if seed is not None and (
            isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0
        ):  # numpy would take True as 1 and fail on 1.5 with its own words
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        _check_options(options)
        if not options or "episode" not in options:
            return None
        index = options["episode"]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < MAX_EPISODE:
            raise ValueError(
                f"options['episode'] must be a non-negative integer below {MAX_EPISODE:,} (a seed's "
                f"draws are skipped forward episode by episode), got {index!r}"
            )
        return int(index)

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> None:
        raise NotImplementedError

    def observe(self, agent: str) -> dict[str, Any]:
        raise NotImplementedError

    def propose(self, action: Any) -> None:
        self.stage.submit(self.codec.decode_proposer_action(action, PROPOSER))

    def decide(self, action: Any) -> Payoffs:
        """The validator's decision: the payoffs of the game (the round) it ends."""
        raise NotImplementedError

    def masked(self, action: Any) -> bool:
        """Whether ``action`` is a validator's action of its space (0 or 1) that its mask forbids now."""
        if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) or not 0 <= action < 2:
            return False
        return not self.observe(VALIDATOR)["action_mask"][int(action)]

    def ended(self) -> tuple[bool, bool]:
        """After :meth:`decide`: whether the episode is over, (terminated, truncated)."""
        raise NotImplementedError

    def rewards(self, result: Payoffs) -> dict[str, float]:
        if self.reward_mode == "welfare":
            welfare = result.welfare
            return {PROPOSER: welfare, VALIDATOR: welfare}
        return {PROPOSER: result.proposer, VALIDATOR: result.validator}

    def final_info(self) -> dict[str, Any]:
        """The info both agents receive when the validator has decided."""
        raise NotImplementedError

    def _state_extra(self) -> tuple[float, ...]:
        """What ``state()`` holds after the private position."""
        return ()

    def state_vector(self) -> np.ndarray:
        s = self.stage.state
        if s is None:
            raise RuntimeError("state() before reset()")
        values = [
            s.ambiguous,
            s.intent,
            s.risk_limit,
            s.delta_limit,
            s.true_risk,
            s.true_net_delta,
            s.hedge_size,
            s.compliant,
            *self._state_extra(),
        ]
        return np.clip(np.array(values, dtype=np.float64), self.state_space.low, self.state_space.high)

    def _render_text(self) -> str:
        raise NotImplementedError

    #: the character grid of an ``"rgb_array"`` frame (rows, columns): room for the longest text, wrapped
    FRAME_GRID = (20, 120)

    def render(self, render_mode: str | None) -> str | np.ndarray | None:
        if render_mode is None:
            import gymnasium

            gymnasium.logger.warn(
                f"render() called without a render_mode; pass one of {', '.join(map(repr, RENDER_MODES))}"
            )
            return None
        return rendered(self._render_text(), render_mode, *self.FRAME_GRID)


class _Episode(_EpisodeBase[ExchangeAuditConfig, ExchangeAuditGame]):
    """The one-shot game's episode: one proposal, observations built once per phase."""

    def __init__(self, config: ExchangeAuditConfig, reward_mode: str, render_mode: str | None) -> None:
        super().__init__(config, reward_mode, render_mode)
        self._set_codec(ExchangeAuditSpaces(config))
        self.observation_spaces = {
            PROPOSER: self.codec.proposer_observation,
            VALIDATOR: self.codec.validator_observation,
        }
        self.state_space = spaces.Box(
            low=np.array(_POSITION_LOW, dtype=np.float64),
            high=np.array(_POSITION_HIGH, dtype=np.float64),
            dtype=np.float64,
        )
        self.game = self.stage = ExchangeAuditGame(config)
        self.draws = DrawStream(None)
        self._public_vector = np.zeros(0)

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> None:
        index = self._episode_option(seed, options)
        if seed is not None and index is None:
            self.draws = DrawStream(seed)  # episode 0 of that seed
        elif index is not None:
            entropy = self.draws.entropy if seed is None else int(seed)
            if entropy != self.draws.entropy or self.draws.episodes_drawn > index:
                self.draws = DrawStream(entropy)
            self.draws.skip(index - self.draws.episodes_drawn)  # forward only: cheap for runs in order
        self.episode_index = self.draws.episodes_drawn
        draws = self.draws.next()
        if self.config.noisy_audits:  # (the check uniforms: their own generator, read only when needed)
            check_u = tuple(self.draws.check_noise(self.episode_index, 1)[0].tolist())
            draws = EpisodeDraws(draws.state_u, draws.noise_z, draws.audit_u, check_u)
        if self._claim_keys:  # (a claim schema's pool beyond four claims: its keys' own generator)
            claim_u = tuple(self.draws.claim_keys(self.episode_index, 1, self._claim_keys)[0].tolist())
            draws = EpisodeDraws(draws.state_u, draws.noise_z, draws.audit_u, draws.check_u, claim_u)
        self.game.start(draws)
        assert self.game.proposer_view is not None
        self._public_vector = self.codec.public_vector_for(self.game.proposer_view.public)
        self._public_vector.flags.writeable = False  # shared by both agents' observations
        self._cache = {}

    def observe(self, agent: str) -> dict[str, Any]:
        """The agent's observation, built once per phase (observations change only between phases)."""
        game = self.game
        cached = self._cache.get(agent)
        if cached is not None and cached[0] is game.phase:
            return cached[1]
        if agent != PROPOSER and agent != VALIDATOR:  # (checked off the cached path: it costs nothing there)
            raise _unknown_agent(agent)
        if game.proposer_view is None:
            raise RuntimeError("call reset() before observe()")
        phase = game.phase
        if agent == PROPOSER:
            if cached is not None:
                # the proposer's view never changes within an episode (its arrays are already read-only)
                obs = dict(cached[1], phase=_PHASES[phase])
            else:
                obs = self.codec.proposer_observation_read_only(game.proposer_view, phase, self._public_vector)
        elif cached is not None and cached[0] is Phase.DECISION:
            # done: nothing left to decide
            obs = dict(cached[1], phase=_PHASES[phase], action_mask=BLOCK_ONLY_MASK)
        else:
            assert game.state is not None
            view = game.validator_view
            if view is None:  # before the proposal: only the public information
                obs = self.codec.encode_validator_observation(
                    game.proposer_view.public, game.state.ambiguous, None, phase, self._public_vector
                )
                for value in obs.values():
                    # Observations are cached and share arrays: read-only keeps a
                    # policy that writes into its observation from changing the game.
                    if isinstance(value, np.ndarray):
                        value.flags.writeable = False
            else:
                obs = self.codec.validator_observation_read_only(game.state.ambiguous, view, phase, self._public_vector)
        self._cache[agent] = (phase, obs)
        return obs

    def __getstate__(self) -> dict[str, Any]:
        # Cached observations are rebuilt after unpickling (read-only flags do not survive pickling).
        return {**self.__dict__, "_cache": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._public_vector.flags.writeable:
            self._public_vector = self._public_vector.copy()  # (an unpickled array may not own its data)
            self._public_vector.flags.writeable = False

    def decide(self, action: Any) -> Payoffs:
        mask = self.observe(VALIDATOR)["action_mask"]
        return self.game.decide(self.codec.decode_validator_action(action, mask, VALIDATOR))

    def ended(self) -> tuple[bool, bool]:
        return _TERMINATED  # (one proposal per episode)

    def final_info(self) -> dict[str, Any]:
        out = self.game.outcome
        assert out is not None
        return _outcome_info(self.episode_index, out)

    def _render_text(self) -> str:
        return render_episode(self.game, self.episode_index)


_TERMINATED = (True, False)


def _illegal_rewards(offender: str) -> dict[str, float]:
    """The rewards of a step an illegal action ends: PettingZoo classic's (the offender's ILLEGAL_REWARD, 0 else)."""
    return {PROPOSER: 0.0, VALIDATOR: 0.0, offender: ILLEGAL_REWARD}


def _outcome_info(episode: int, out: EpisodeOutcome, extra: Mapping[str, Any] = _NO_EXTRA) -> dict[str, Any]:
    """The info of a finished one-shot game (``extra`` goes after ``"episode"``)."""
    s, sub, audit = out.state, out.submission, out.audit
    return {
        "episode": episode,
        **extra,
        "welfare": out.payoffs.welfare,
        "proposer_payoff": out.payoffs.proposer,
        "validator_payoff": out.payoffs.validator,
        "proposer_action": _ACTION_NAMES[sub.action],
        "decision": _DECISION_NAMES[out.decision],
        "approved": out.approved,
        "compliant": s.compliant,
        "ambiguous": s.ambiguous,
        "words": sub.artifact.words,
        "audit": {
            "audited": audit.audited,
            "outcome": _OUTCOME_NAMES[audit.outcome],
            "checked": list(audit.checked),
            "failed": list(audit.failed),
            "revealed_compliant": audit.revealed_compliant,
        },
        "state": {
            "intent": _INTENT_NAMES[s.intent],
            "risk_limit": s.risk_limit,
            "delta_limit": s.delta_limit,
            "true_risk": s.true_risk,
            "true_net_delta": s.true_net_delta,
            "hedge_size": s.hedge_size,
        },
    }


class _Adapter(Generic[ConfigT, GameT]):
    """The surface both PettingZoo adapters share: construction, spaces, the game, state and rendering.

    A subclass names its configuration class (its ``resolve`` reads the constructor's arguments) and its
    episode class (which plays the game); the repeated game's adapters are such subclasses.
    """

    metadata = METADATA
    _config_class: type[ConfigT]
    _episode_class: type[_EpisodeBase[ConfigT, GameT]]

    def __init__(
        self,
        config: ConfigT | None = None,
        *,
        preset: str | None = None,
        reward_mode: str = "welfare",
        render_mode: str | None = None,
        illegal_actions: str = "terminate",
        **overrides: Any,
    ) -> None:
        if illegal_actions not in ILLEGAL_ACTIONS:
            raise ValueError(f"illegal_actions must be 'terminate' or 'raise', got {illegal_actions!r}")
        self.illegal_actions = illegal_actions
        self.illegal_action: str | None = None  # the agent whose illegal action ended this episode, if one did
        config = self._config_class.resolve(config, preset, overrides)
        self._episode = self._episode_class(config, reward_mode, render_mode)
        self.config = self._episode.config
        self.codec = self._episode.codec
        self.render_mode = render_mode
        self.reward_mode = reward_mode
        self.possible_agents = [PROPOSER, VALIDATOR]
        self.agents: list[str] = []
        self.state_space = self._episode.state_space

    def observation_space(self, agent: str) -> spaces.Space:
        try:
            return self._episode.observation_spaces[agent]
        except (KeyError, TypeError):  # (TypeError: an unhashable name)
            raise _unknown_agent(agent) from None

    def action_space(self, agent: str) -> spaces.Space:
        try:
            return self._episode.action_spaces[agent]
        except (KeyError, TypeError):
            raise _unknown_agent(agent) from None

    @property
    def game(self) -> GameT:
        """The pure game behind the adapter (one-shot: its state, submission, audit, outcome; repeated: its
        rounds, record and current stage game)."""
        return self._episode.game

    @property
    def episode_index(self) -> int:
        """Index of the current episode in its seed's stream."""
        return self._episode.episode_index

    def _decide(self, action: Any) -> tuple[Payoffs, bool]:
        """The validator's decision and whether it was illegal: under ``illegal_actions="terminate"`` an action
        its mask forbids is played as the only legal one, BLOCK (the game's record is that of the NO_TRADE),
        and ends the episode (:meth:`_illegal_step`)."""
        episode = self._episode
        if self.illegal_actions == "terminate" and episode.masked(action):
            result = episode.decide(0)
            self.illegal_action = VALIDATOR  # (for the episode's record)
            return result, True
        return episode.decide(action), False

    def state(self) -> np.ndarray:
        """The private position: ambiguous, intent, risk limit, delta limit, true risk,
        true net delta, hedge size, compliant (for centralised critics); the repeated game's
        then holds the round, q_t, clean and failed audits."""
        return self._episode.state_vector()

    def render(self) -> str | np.ndarray | None:
        """The episode as text (``"ansi"``), printed (``"human"``) or as a picture (``"rgb_array"``, one shape for
        every frame: :mod:`eq_env.core.render`)."""
        return self._episode.render(self.render_mode)

    def close(self) -> None:
        pass


class _AECAdapter(_Adapter[ConfigT, GameT], AECEnv):
    """The AEC adapter of a game: the proposer, then the validator, in every episode (round)."""

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._episode.reset(seed, options)
        self.illegal_action = None
        agents = self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(agents, 0.0)
        self.terminations = dict.fromkeys(agents, False)
        self.truncations = dict.fromkeys(agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in agents}
        self.agent_selection = PROPOSER
        self._skip_agent_selection = None

    def observe(self, agent: str) -> dict[str, Any]:
        episode = self._episode
        cached = episode._cache.get(agent)  # (the cached path of _Episode.observe, inline)
        if cached is not None and cached[0] is episode.stage.phase:
            return dict(cached[1])
        return dict(episode.observe(agent))

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not hasattr(self, "agent_selection"):  # AECEnv.last would fail on the missing attribute
            raise RuntimeError("call reset() before last()")
        if not self.agents:  # every agent has stepped out: AECEnv.last would fail on a KeyError
            raise RuntimeError("the episode is over (every agent is done); call reset() to start the next one")
        # AECEnv.last, inline
        agent = self.agent_selection
        assert agent is not None
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def _was_dead_step(self, action: Any) -> None:
        """PettingZoo's ``AECEnv._was_dead_step``, step for step, without its generic search when no other
        agent is left to step out (the usual case here: the validator, after the proposer)."""
        agents = self.agents
        if len(agents) != 1 or action is not None:
            super()._was_dead_step(action)
            return
        agent = self.agent_selection
        assert self.terminations[agent] or self.truncations[agent], (
            "an agent that was not dead as attempted to be removed"
        )
        del self.terminations[agent]
        del self.truncations[agent]
        del self.rewards[agent]
        del self._cumulative_rewards[agent]
        del self.infos[agent]
        agents.remove(agent)
        # no agent is left, so none is dead: PettingZoo's else branch, then _clear_rewards (of an empty dict)
        if getattr(self, "_skip_agent_selection", None) is not None:
            self.agent_selection = self._skip_agent_selection  # type: ignore[assignment]
        self._skip_agent_selection = None
        for a in self.rewards:
            self.rewards[a] = 0

    def _proposed(self) -> None:
        """After the proposer's step, before the validator's (the repeated game clears last round's rewards)."""

    def step(self, action: Any) -> None:
        if not hasattr(self, "agent_selection"):
            raise RuntimeError("step() before reset(): call env.reset(seed=...) first")
        if not self.agents:  # (the order-enforcing wrapper warns instead, and never gets here)
            raise RuntimeError("step() after the episode ended; call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        episode = self._episode
        if agent == PROPOSER:
            episode.propose(action)  # (refuses a bad action before anything changes)
            self._cumulative_rewards[agent] = 0.0
            self._proposed()
            self.agent_selection = VALIDATOR
        else:
            result, illegal = self._decide(action)
            self._cumulative_rewards[agent] = 0.0
            self.rewards = episode.rewards(result) if not illegal else _illegal_rewards(agent)
            info = episode.final_info() if not illegal else {**episode.final_info(), "illegal_action": agent}
            # each agent its own copy (the first takes the original, which nothing else holds)
            self.infos = {a: info if i == 0 else _copy_info(info) for i, a in enumerate(self.agents)}
            terminated, truncated = episode.ended() if not illegal else _TERMINATED
            if terminated:
                self.terminations = {a: True for a in self.agents}
            elif truncated:
                self.truncations = {a: True for a in self.agents}
            self.agent_selection = PROPOSER
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()


class _ParallelAdapter(_Adapter[ConfigT, GameT], ParallelEnv):
    """The parallel adapter of a game: two steps per episode (round), the proposer's then the validator's."""

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        self._episode.reset(seed, options)
        self.illegal_action = None
        self.agents = self.possible_agents[:]
        return self._observations(), {a: {} for a in self.agents}

    def _observations(self) -> dict[str, Any]:
        return {a: dict(self._episode.observe(a)) for a in self.possible_agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]]:
        episode = self._episode
        phase = episode.stage.phase
        if not self.agents:
            if phase is Phase.DONE and episode.episode_index >= 0:
                raise RuntimeError("step() after the episode ended; call reset()")
            raise RuntimeError("step() before reset(): call env.reset(seed=...) first")
        acting = PROPOSER if phase is Phase.PROPOSAL else VALIDATOR
        checked_actions(actions, self.agents, ())  # (a dict keyed by this game's agents; the acting one below)
        if acting not in actions:
            raise ActionError(f"phase {phase.name}: actions must include {acting!r}, got keys {sorted(actions)}")
        if phase is Phase.PROPOSAL:
            episode.propose(actions[PROPOSER])
            rewards = {a: 0.0 for a in self.agents}
            terminated = truncated = False
            infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        else:
            result, illegal = self._decide(actions[VALIDATOR])
            rewards = episode.rewards(result) if not illegal else _illegal_rewards(VALIDATOR)
            terminated, truncated = episode.ended() if not illegal else _TERMINATED
            info = episode.final_info() if not illegal else {**episode.final_info(), "illegal_action": VALIDATOR}
            infos = {a: _copy_info(info) for a in self.agents}
        observations = self._observations()
        terminations = {a: terminated for a in self.agents}
        truncations = {a: truncated for a in self.agents}
        if terminated or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos


class raw_env(_AECAdapter[ExchangeAuditConfig, ExchangeAuditGame]):  # noqa: N801 - PettingZoo's naming convention
    """The exchange–audit game as a PettingZoo AEC environment (see the module docstring)."""

    _config_class = ExchangeAuditConfig
    _episode_class = _Episode


class ExchangeAuditParallelEnv(_ParallelAdapter[ExchangeAuditConfig, ExchangeAuditGame]):
    """The exchange–audit game under PettingZoo's parallel API.

    Each episode takes two parallel steps. In the first (``phase`` 0) only
    ``proposer_0``'s action is read; in the second (``phase`` 1) only
    ``validator_0``'s. The other agent's entry may be omitted or anything
    (it is ignored), so generic parallel loops that send every agent an
    action work unchanged; ``actions`` must be a dict, and a key that is
    none of the game's agents is refused. Rewards arrive on the second step.
    """

    _config_class = ExchangeAuditConfig
    _episode_class = _Episode


def _copy_info(info: dict[str, Any]) -> dict[str, Any]:
    out = dict(info)
    out["audit"] = dict(info["audit"], checked=list(info["audit"]["checked"]), failed=list(info["audit"]["failed"]))
    out["state"] = dict(info["state"])
    return out
