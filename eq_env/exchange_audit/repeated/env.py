"""
# Exchange–audit, repeated

| Import               | `from eq_env import exchange_audit_repeated_v0`                             |
|----------------------|-----------------------------------------------------------------------------|
| Registered ids       | `"eq_env/exchange-audit-repeated-v0"` (`pettingzoo.make("aec"` or `"parallel", …)`) |
| Actions              | as the one-shot game: proposer Dict (action, proposal, claims, text); validator Discrete(2) |
| Parallel API         | Yes (two steps per round: proposal, then decision)                          |
| Agents               | `agents = ['proposer_0', 'validator_0']`                                    |
| Action mask          | validator only, in its observation under `"action_mask"`                    |
| Observations         | the one-shot game's, plus `"history"`: Box(13) of the public record         |

The same proposer and validator play round after round of the exchange–audit game
(`eq_env/exchange-audit-v0`, whose manual describes a round: the position, the artifact, the audit, the rule
engine, the payoffs). Between rounds an **audit policy** sets the next round's audit intensity q_t from the
public record, so a proposer can earn — or lose — a reputation:

* `audit_policy="fixed"`: q_t = q in every round (each round is the one-shot game);
* `"decay"`: q_t = max(`q_min`, q·`gamma`^c), c the clean audits so far (since the last failed one with
  `reset_on_fail=True`): the paper's "decay q toward zero for a proposer with a high reputation";
* `"trigger"`: q_t = q until an audit fails, then `q_punish` (default 1) for `punish_rounds` rounds (default
  `None`: for ever, a grim trigger); a failure during the punishment starts it again.

An audit is **clean** when every check passed and it did not reveal that a requested trade is non-compliant;
it **failed** when a check failed, when it revealed that the requested trade is non-compliant (the claims
may be true while the reported numbers were shaded: the audit checks claims, the validator sees the
truth), or when a request withheld the claims the audit needs (inconclusive, blocked as a failed audit is:
else a liar would omit its claims and never be caught); a skipped audit, a NO_TRADE's inconclusive one and any
audit under a budget B ≤ 0 are neither.

```python
from eq_env.baselines.exchange_audit import HonestProposer, RuleValidator
from eq_env import exchange_audit_repeated_v0

env = exchange_audit_repeated_v0.env(preset="paper_scripted", rounds=8, audit_policy="decay", q=1.0,
                                     gamma=0.5, q_min=0.1)
proposer, validator = HonestProposer(claims_from="truth"), RuleValidator()
env.reset(seed=0)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        action = (proposer if agent == "proposer_0" else validator).act(observation)
    env.step(action)
print([round(r.q, 3) for r in env.unwrapped.game.history])  # an honest record earns fewer audits
```

## An episode

Round t = 0, 1, …: the audit policy sets q_t; then the one-shot game is played at q_t (the proposer acts,
the audit coin falls, the validator acts; both are paid). The game then goes on with probability
`continuation` δ, for at most `rounds` T rounds: δ = 1 (default) plays exactly T rounds and ends
**terminated**; δ < 1 is a geometric horizon, ended *terminated* by the coin or **truncated** at the cap T.
T = 1, or δ = 0, is the one-shot game episode by episode (round 0 of episode i of seed s draws exactly what
episode i of `exchange-audit-v0` of seed s draws).

## Observations

Each agent's observation is the one-shot game's (its `public` vector shows the round's q_t), plus
`"history"`, a float Box of the public record (before the current round; after the last one once the
episode is over):

| index | name                 | meaning                                                           |
|-------|----------------------|-------------------------------------------------------------------|
| 0     | `round`              | the current round t (at the end: rounds played)                   |
| 1     | `rounds_left`        | T − t, the current round included (a cap when δ < 1)             |
| 2     | `continuation`       | δ                                                                 |
| 3     | `q`                  | this round's audit intensity q_t (at the end: the next round's)   |
| 4     | `clean_audits`       | clean audits so far (since the last failed one with `reset_on_fail`) |
| 5     | `failed_audits`      | failed audits so far                                              |
| 6     | `punish_left`        | trigger: punished rounds left, this one included (for ever: to the cap) |
| 7     | `requests`           | rounds the proposer asked for approval                            |
| 8     | `approvals`          | rounds the validator approved                                     |
| 9     | `last_action`        | last round's proposer action: 0 NO_TRADE, 1 REQUEST_APPROVAL (−1: none yet) |
| 10    | `last_decision`      | last round's decision: 0 BLOCK, 1 APPROVE (−1: none yet)           |
| 11    | `last_audit_outcome` | last round's audit: 0 skipped, 1 pass, 2 fail, 3 inconclusive (−1: none yet) |
| 12    | `last_verdict`       | last round's verdict: 0 none, 1 clean, 2 failed (−1: none yet)     |

`decode_history(observation)` gives it as a dict. `env.unwrapped.game.history` holds every finished round
(:class:`~eq_env.exchange_audit.repeated.rules.RoundRecord`: its q, the record before it, the one-shot
outcome, the verdict). `state()` is the round's private position (Box(8), as the one-shot game's) followed
by round, q_t, clean and failed audits.

## Rewards

Every round pays as the one-shot game: `reward_mode="welfare"` (default) both agents receive the round's
welfare, `"individual"` each its own payoff. Rewards arrive when the validator has decided; `infos[agent]`
then holds the round (the one-shot game's info, plus `round`, `q`, `verdict`, `clean_audits`,
`failed_audits` after it). Rewards are not discounted: δ is the chance the game goes on, so the expected
total is the δ-discounted sum.

## Arguments

`exchange_audit_repeated_v0.env(config=None, *, preset=None, reward_mode="welfare", render_mode=None,
illegal_actions="terminate", observation_mode="text", **overrides)`: `illegal_actions` and `observation_mode`
as in the one-shot game (an illegal approval ends the whole repeated game). `config` is a `RepeatedConfig`;
otherwise the preset (`"paper"` default, `"paper_scripted"`,
`"paper_main_script"`: the one-shot presets) with `overrides`, any field of the repeated game (`rounds`,
`continuation`, `audit_policy`, `gamma`, `q_min`, `reset_on_fail`, `q_punish`, `punish_rounds`) or of the
stage game (`q`, `B`, `V`, `L`, …). Invalid values raise `ValueError` naming the field.

`reset(seed=s)` starts episode 0 of seed `s`; each later `reset()` the next episode;
`reset(seed=s, options={"episode": i})` episode `i`. Same seed, same play, bit for bit.

## Version history

* v0: first release.
* v0, unchanged results: `render_mode="rgb_array"`; `"human"` prints before the first `reset()`
  too (it returned its text); an unknown keyword is a `TypeError` (also a `ValueError`, as before).
* v0: an illegal approval ends the repeated game (`illegal_actions`, as in the one-shot game's
  manual); the numeric observation mode (`observation_mode="numeric"`: the one-shot game's features and the
  record's, `eq_env.exchange_audit.repeated.numeric`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
from gymnasium import spaces

from eq_env.core.render import rendered
from eq_env.exchange_audit.env import (
    _POSITION_HIGH,
    _POSITION_LOW,
    PROPOSER,
    RENDER_MODES,
    ROLES,
    SEED_STREAMS,
    VALIDATOR,
    UnknownAgentError,
    _AECAdapter,
    _EpisodeBase,
    _outcome_info,
    _ParallelAdapter,
    _unknown_agent,
)
from eq_env.exchange_audit.render import render_episode
from eq_env.exchange_audit.repeated.rules import (
    FOREVER,
    MAX_ROUNDS,
    RepeatedConfig,
    RepeatedGame,
    RoundDraws,
    Verdict,
    audit_intensity,
)
from eq_env.exchange_audit.rules import Decision, Payoffs
from eq_env.exchange_audit.spaces import (
    BLOCK_ONLY_MASK,
    FULL_MASK,
    BoundedBox,
    ExchangeAuditSpaces,
    FastDict,
)

__all__ = [
    "HISTORY_FIELDS",
    "PROPOSER",
    "ROLES",
    "SEED_STREAMS",
    "VALIDATOR",
    "RepeatedParallelEnv",
    "UnknownAgentError",
    "decode_history",
    "history_vector",
    "raw_env",
    "resolve_config",
]

HISTORY_FIELDS = (
    "round",
    "rounds_left",
    "continuation",
    "q",
    "clean_audits",
    "failed_audits",
    "punish_left",
    "requests",
    "approvals",
    "last_action",
    "last_decision",
    "last_audit_outcome",
    "last_verdict",
)
_HISTORY_LOW = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1], dtype=np.float64)
_HISTORY_HIGH = np.array([MAX_ROUNDS] * 2 + [1, 1] + [MAX_ROUNDS] * 5 + [1, 1, 3, 2], dtype=np.float64)
METADATA: dict[str, Any] = {
    "name": "exchange_audit_repeated_v0",
    "render_modes": list(RENDER_MODES),
    "is_parallelizable": False,  # the validator observes the proposal: use parallel_env()
    "render_fps": 1,
}
_VERDICT_NAMES = tuple(m.name for m in Verdict)


def resolve_config(config: RepeatedConfig | None, preset: str | None, overrides: dict[str, Any]) -> RepeatedConfig:
    """The configuration an environment plays (:meth:`~eq_env.core.config.GameConfig.resolve`)."""
    return RepeatedConfig.resolve(config, preset, overrides)


def history_vector(game: RepeatedGame) -> np.ndarray:
    """The ``"history"`` entry of both observations (see the manual's table)."""
    config, history, rep = game.config, game.history, game.reputation
    t = len(history) if game.over else game.round
    q = audit_intensity(config, rep) if game.over else game.q
    last = history[-1] if history else None
    outcome = last.outcome if last is not None else None
    punish = config.rounds - t if rep.punish_left == FOREVER else rep.punish_left
    return np.array(
        [
            t,
            config.rounds - t,
            config.continuation,
            q,
            rep.clean,
            rep.failed,
            punish,
            game.requests,
            game.approvals,
            -1 if outcome is None else int(outcome.submission.action),
            -1 if outcome is None else int(outcome.decision),
            -1 if outcome is None else int(outcome.audit.outcome),
            -1 if last is None else int(last.verdict),
        ],
        dtype=np.float64,
    )


def decode_history(observation: Any) -> dict[str, Any]:
    """An observation's ``"history"`` as a dict by :data:`HISTORY_FIELDS` (counts and codes as ints)."""
    values = np.asarray(observation["history"], dtype=np.float64).tolist()
    return {
        name: (v if name in ("continuation", "q") else round(v)) for name, v in zip(HISTORY_FIELDS, values, strict=True)
    }


class _Episode(_EpisodeBase[RepeatedConfig, RepeatedGame]):
    """The repeated game's episode: its rounds, their draws and continuation coins; observations built on
    demand (they carry the record)."""

    def __init__(self, config: RepeatedConfig, reward_mode: str, render_mode: str | None) -> None:
        super().__init__(config, reward_mode, render_mode)
        self._set_codec(ExchangeAuditSpaces(config.stage))  # (no space depends on q: one codec for every round)
        history = BoundedBox(_HISTORY_LOW, _HISTORY_HIGH, dtype=np.float64)
        self.observation_spaces = {
            agent: FastDict(OrderedDict({**space.spaces, "history": history}))
            for agent, space in (
                (PROPOSER, self.codec.proposer_observation),
                (VALIDATOR, self.codec.validator_observation),
            )
        }
        self.state_space = spaces.Box(
            low=np.array([*_POSITION_LOW, 0, 0, 0, 0], dtype=np.float64),
            high=np.array([*_POSITION_HIGH, MAX_ROUNDS, 1, MAX_ROUNDS, MAX_ROUNDS], dtype=np.float64),
            dtype=np.float64,
        )
        self.game = RepeatedGame(config)
        self.stage = self.game.stage  # (one stage game, reconfigured round by round)
        self.draws = RoundDraws(None, config.rounds)

    # -- episodes and rounds ----------------------------------------------------------------------
    def reset(self, seed: int | None, options: dict[str, Any] | None) -> None:
        index = self._episode_option(seed, options)
        if seed is not None:
            self.draws = RoundDraws(int(seed), self.config.rounds)
            self.episode_index = 0 if index is None else index
        elif index is not None:
            self.episode_index = index
        else:
            self.episode_index += 1
        self.game.start()
        self._start_round()

    def _start_round(self) -> None:
        game = self.game
        game.start_round(
            self.draws.round(self.episode_index, game.round, self.config.stage.noisy_audits, self._claim_keys)
        )

    def decide(self, action: Any) -> Payoffs:
        """The validator's decision: the round's payoffs; the next round, if one follows, is started."""
        game = self.game
        mask = FULL_MASK if Decision.APPROVE in game.stage.legal_decisions else BLOCK_ONLY_MASK
        result = game.decide(self.codec.decode_validator_action(action, mask, VALIDATOR))
        coin = self.draws.coin(self.episode_index, game.round + 1) if game.needs_coin else None
        if game.end_round(coin):
            self._start_round()
        return result

    def ended(self) -> tuple[bool, bool]:
        game = self.game
        return game.over and not game.truncated, game.over and game.truncated

    # -- observations -------------------------------------------------------------------------------
    def observe(self, agent: str) -> dict[str, Any]:
        if agent != PROPOSER and agent != VALIDATOR:
            raise _unknown_agent(agent)
        stage = self.game.stage
        view = stage.proposer_view
        if view is None or stage.state is None:
            raise RuntimeError("call reset() before observe()")
        phase = stage.phase
        public = self.codec.public_vector(view.public)  # (its q is the round's)
        if agent == PROPOSER:
            obs = self.codec.encode_proposer_observation(view, phase, public)
        else:
            obs = self.codec.encode_validator_observation(
                view.public, stage.state.ambiguous, stage.validator_view, phase, public
            )
        obs["history"] = history_vector(self.game)
        return obs

    def final_info(self) -> dict[str, Any]:
        """The last finished round, as the one-shot game's final info plus the repeated game's."""
        record = self.game.history[-1]
        rep = self.game.reputation
        extra = {
            "round": record.round,
            "q": record.q,
            "verdict": _VERDICT_NAMES[record.verdict],
            "clean_audits": rep.clean,
            "failed_audits": rep.failed,
        }
        return _outcome_info(self.episode_index, record.outcome, extra)

    def _state_extra(self) -> tuple[float, ...]:
        rep = self.game.reputation
        return self.game.round, self.game.q, rep.clean, rep.failed

    FRAME_GRID = (24, 120)  # (the one-shot game's rendering under a heading, and the end's line)

    def render(self, render_mode: str | None) -> str | np.ndarray | None:
        if render_mode is not None and self.game.stage.state is None:
            return rendered("(no episode yet: call reset())\n", render_mode, *self.FRAME_GRID)
        return super().render(render_mode)

    def _render_text(self) -> str:
        game = self.game
        rep = game.history[-1].reputation if game.over and game.history else game.reputation
        t = game.history[-1].round if game.over and game.history else game.round
        q = game.history[-1].q if game.over and game.history else game.q
        head = (
            f"--- round {t} of at most {self.config.rounds} (policy {self.config.audit_policy}, q_t={q:.3f}; "
            f"clean audits {rep.clean}, failed {rep.failed}) ---\n"
        )
        text = head + render_episode(game.stage, self.episode_index)
        if game.over:
            total = sum(r.payoffs.welfare for r in game.history)
            text += f"episode over after {len(game.history)} round(s): welfare {total:.3f}\n"
        return text


class raw_env(_AECAdapter[RepeatedConfig, RepeatedGame]):  # noqa: N801 - PettingZoo's naming convention
    """The repeated exchange–audit game as a PettingZoo AEC environment (see the module docstring)."""

    metadata = METADATA
    _config_class = RepeatedConfig
    _episode_class = _Episode

    def _proposed(self) -> None:
        self._clear_rewards()  # (last round's rewards are paid already)


class RepeatedParallelEnv(_ParallelAdapter[RepeatedConfig, RepeatedGame]):
    """The repeated game under PettingZoo's parallel API: two steps per round (``phase`` 0: only
    ``proposer_0``'s action is read; ``phase`` 1: only ``validator_0``'s), rewards on the second."""

    metadata = METADATA
    _config_class = RepeatedConfig
    _episode_class = _Episode
