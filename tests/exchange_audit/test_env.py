"""The PettingZoo adapter of the exchange–audit game: actions, masks, rewards, infos, rendering, seeding."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from eq_env import exchange_audit_v0
from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    Artifact,
    Claims,
    Intent,
    Proposal,
    ProposerAction,
    Submission,
)
from eq_env.exchange_audit.spaces import (
    ActionError,
    decode_proposer_observation,
    decode_validator_observation,
    encode_submission,
)

P, V = "proposer_0", "validator_0"


def honest_action(env: Any, words: int = 0, action: ProposerAction = ProposerAction.REQUEST_APPROVAL) -> dict:
    view = decode_proposer_observation(env.observe(P))
    claims = Claims(view.intent, view.known_risk_within_limit, view.known_net_delta_bounded)
    proposal = Proposal(view.intent, view.observed_risk, view.observed_net_delta, view.observed_hedge_size)
    return encode_submission(Submission(action, proposal, Artifact(claims, "", words)))


def fresh(**kwargs: Any) -> Any:
    env = exchange_audit_v0.env(**kwargs)
    env.reset(seed=0)
    return env


# ---------------------------------------------------------------------------
# Invalid actions
# ---------------------------------------------------------------------------
class TestInvalidActions:
    def _bad(self, env: Any, change: dict[str, Any], match: str) -> None:
        action = honest_action(env)
        action.update(change)
        with pytest.raises(ActionError, match=match):
            env.step(action)

    def test_not_a_dict(self) -> None:
        with pytest.raises(ActionError, match=r"proposer_0's action must be a dict"):
            fresh().step(1)

    def test_missing_and_extra_keys(self) -> None:
        env = fresh()
        action = honest_action(env)
        del action["text"]
        action["mood"] = 1
        with pytest.raises(ActionError, match=r"missing keys \['text'\] and unexpected keys \['mood'\]"):
            env.step(action)

    @pytest.mark.parametrize(
        "change, match",
        [
            ({"action": 2}, r"action\['action'\].*\[0, 1\], got 2"),
            ({"action": 1.0}, r"action\['action'\] .*must be an integer"),
            ({"reported_intent": -1}, r"reported_intent"),
            ({"reported_numbers": np.array([9.0, 0.0, 0.5])}, r"risk must be in \[0, 4\], got 9.0"),
            ({"reported_numbers": np.array([0.5, np.nan, 0.5])}, r"net_delta must be in \[-3, 3\], got nan"),
            ({"reported_numbers": np.array([0.5, 0.1])}, r"must have shape \(3,\)"),
            ({"reported_numbers": "high"}, r"reported_numbers'\] must be 3 numbers"),
            ({"claims": np.array([3, 0, 0, 0, 0])}, r"the intent entry must be in \[0, 2\], got 3"),
            ({"claims": np.array([0, 0, 0, 0, 2])}, r"the confidence entry must be in \[0, 1\], got 2"),
            ({"claims": np.array([0.0, 0, 0, 0, 0])}, r"claims'\] must be 5 integers"),
            ({"claim_values": np.array([0.5, 3.0])}, r"confidence must be in \[-1, 2\], got 3.0"),
            ({"text": 42}, r"text'\] must be a str"),
            ({"text": "bell\x07"}, r"contains the control character U\+0007 at position 4"),
            ({"word_count": 61}, r"word_count'\] must be an integer in \[0, 60\], got 61"),
            ({"token_count": 5000}, r"token_count'\] must be an integer in \[0, 4096\], got 5000"),
        ],
    )
    def test_field_out_of_space_names_the_field(self, change: dict[str, Any], match: str) -> None:
        self._bad(fresh(), change, match)

    def test_text_too_long(self) -> None:
        self._bad(fresh(max_text_chars=10), {"text": "x" * 11}, r"has 11 characters; at most 10 are allowed")

    @pytest.mark.parametrize(
        "text", ["risk 10\u202f% ok", "a\xa0b", "zero\u200bwidth", "résumé ≤ 0.3 ✓", "line\nbreak\ttab"]
    )
    def test_any_text_without_control_characters_is_accepted(self, text: str) -> None:
        env = fresh()
        action = honest_action(env)
        action["text"] = text
        assert env.action_space(P)["text"].contains(text)
        env.step(action)
        assert env.observe(V)["text"] == " ".join(text.split())

    def test_numbers_must_be_numbers(self) -> None:
        self._bad(fresh(), {"claim_values": ["1", "0.5"]}, r"claim_values'\] must be 2 numbers")
        self._bad(fresh(), {"claims": np.array([True, False, False, False, False])}, r"must be 5 integers")
        self._bad(fresh(), {"reported_numbers": np.array([True, False, True])}, r"must be 3 numbers")

    def test_invalid_action_leaves_the_env_unchanged(self) -> None:
        env = fresh()
        with pytest.raises(ActionError):
            env.step({"action": 5})
        assert env.agent_selection == P
        env.step(honest_action(env))  # still playable
        assert env.agent_selection == V

    def test_validator_out_of_space(self) -> None:
        env = fresh()
        env.step(honest_action(env))
        with pytest.raises(ActionError, match=r"validator_0's action \(0 BLOCK, 1 APPROVE\).*got 2"):
            env.step(2)
        with pytest.raises(ActionError, match=r"must be an integer"):
            env.step("APPROVE")

    def test_approving_a_no_trade_is_illegal_in_strict_mode(self) -> None:
        env = fresh(illegal_actions="raise")
        env.step(honest_action(env, action=ProposerAction.NO_TRADE))
        assert env.observe(V)["action_mask"].tolist() == [1, 0]
        with pytest.raises(ActionError, match="nothing to approve"):
            env.step(1)
        env.step(0)
        assert all(env.terminations.values())

    @pytest.mark.parametrize("make", ["env", "parallel_env"])
    @pytest.mark.parametrize("game", ["exchange_audit_v0", "exchange_audit_repeated_v0"])
    def test_approving_a_no_trade_ends_the_episode_as_pettingzoo_classic_does(self, make: str, game: str) -> None:
        """By default (``illegal_actions="terminate"``) a masked action ends the episode, the offender rewarded -1
        and the other agent 0 (TerminateIllegalWrapper's convention), the info naming the offender; the game
        plays the only legal decision, BLOCK. The repeated game ends too, in its first round."""
        import eq_env

        module = getattr(eq_env, game)
        env = getattr(module, make)()
        no_trade = honest_action(fresh(), action=ProposerAction.NO_TRADE)  # (a valid NO_TRADE in both games)
        env.reset(seed=0)
        if make == "env":
            env.step(no_trade)
            env.step(np.int64(1))
            rewards, infos, done = dict(env.rewards), env.infos, env.terminations
        else:
            env.step({P: no_trade})
            _, rewards, done, _, infos = env.step({V: 1})
        assert rewards == {P: 0.0, V: -1.0}
        assert all(done.values()) and infos[P]["illegal_action"] == infos[V]["illegal_action"] == V
        assert infos[V]["decision"] == "BLOCK" and infos[V]["proposer_action"] == "NO_TRADE"

    @pytest.mark.parametrize("game", ["exchange_audit_v0", "exchange_audit_repeated_v0"])
    def test_the_episode_record_shows_the_illegal_action(self, game: str) -> None:
        """The record of an episode an illegal action ended names the offender (and survives JSON); a legal
        episode's record has no such entry, as before."""
        import eq_env
        from eq_env.core.spec import spec_for_config

        records = {}
        for decision in (0, 1):  # BLOCK is legal after a NO_TRADE; APPROVE is not
            env = getattr(eq_env, game).env(rounds=3) if "repeated" in game else exchange_audit_v0.env()
            env.reset(seed=0)
            env.step(honest_action(env, action=ProposerAction.NO_TRADE))
            env.step(decision)
            if "repeated" in game and decision == 0:  # (the repeated game plays on: NO_TRADE, BLOCK to the end)
                while not all(env.terminations.values()):
                    env.step(honest_action(env, action=ProposerAction.NO_TRADE))
                    env.step(0)
            spec = spec_for_config(env.unwrapped.config)
            record = spec.record(env.unwrapped, 0, 0, {})
            assert spec.record_from_dict(record.to_dict()) == record
            records[decision] = record
        assert records[1].illegal_action == "validator_0" and "illegal_action" in records[1].to_dict()
        assert records[0].illegal_action is None and "illegal_action" not in records[0].to_dict()

    def test_a_legal_game_has_no_illegal_action_in_its_info(self) -> None:
        env = fresh()
        env.step(honest_action(env, action=ProposerAction.NO_TRADE))
        env.step(0)
        assert "illegal_action" not in env.infos[V] and env.rewards[V] == env.rewards[P] > 0

    def test_an_unknown_illegal_actions_convention_is_refused_in_one_line(self) -> None:
        with pytest.raises(ValueError, match=r"^illegal_actions must be 'terminate' or 'raise', got 'ignore'$"):
            exchange_audit_v0.env(illegal_actions="ignore")

    def test_unknown_agent(self) -> None:
        with pytest.raises(KeyError, match="unknown agent 'trader'"):
            fresh().action_space("trader")

    def test_numpy_and_python_scalars_are_accepted(self) -> None:
        env = fresh()
        action = honest_action(env)
        action["action"] = 1
        action["reported_numbers"] = [float(x) for x in action["reported_numbers"]]
        action["claims"] = [int(x) for x in action["claims"]]
        env.step(action)
        env.step(np.int32(1))
        assert all(env.terminations.values())


# ---------------------------------------------------------------------------
# Observations, masks, rewards, infos
# ---------------------------------------------------------------------------
class TestEpisode:
    def test_masks_and_phases(self) -> None:
        env = fresh()
        assert env.agent_selection == P
        assert int(env.observe(P)["phase"]) == 0 and int(env.observe(V)["phase"]) == 0
        env.step(honest_action(env))
        obs = env.observe(V)
        assert int(obs["phase"]) == 1 and obs["action_mask"].tolist() == [1, 1]
        assert int(obs["proposer_action"]) == ProposerAction.REQUEST_APPROVAL
        env.step(1)
        assert int(env.observe(V)["phase"]) == 2

    @pytest.mark.parametrize("mode", ["welfare", "individual"])
    def test_rewards_and_infos(self, mode: str) -> None:
        env = exchange_audit_v0.env(reward_mode=mode, q=0.5)
        for seed in range(30):
            env.reset(seed=seed)
            env.step(honest_action(env, words=5))
            env.step(int(env.observe(V)["action_mask"][1]))
            info = env.infos[P]
            assert info == env.infos[V]
            assert info["welfare"] == info["proposer_payoff"] + info["validator_payoff"]
            if mode == "welfare":
                assert env.rewards == {P: info["welfare"], V: info["welfare"]}
            else:
                assert env.rewards == {P: info["proposer_payoff"], V: info["validator_payoff"]}
            assert sum(env.rewards.values()) == pytest.approx(info["welfare"] * (2 if mode == "welfare" else 1))
            for key in ("decision", "compliant", "ambiguous", "approved", "words", "audit", "state", "episode"):
                assert key in info
            assert info["words"] == 5
            assert set(info["audit"]) == {"audited", "outcome", "checked", "failed", "revealed_compliant"}
            # rewards reach each agent through last(), then the agents leave
            paid = dict(env.rewards)
            for agent in (P, V):
                assert env.agent_selection == agent
                _, reward, term, trunc, _ = env.last()
                assert term and not trunc and reward == paid[agent]
                env.step(None)
            assert env.agents == []

    def test_infos_are_empty_until_the_end(self) -> None:
        env = fresh()
        assert env.infos == {P: {}, V: {}}
        env.step(honest_action(env))
        assert env.infos == {P: {}, V: {}} and env.rewards == {P: 0.0, V: 0.0}

    def test_typed_views_round_trip(self) -> None:
        env = exchange_audit_v0.env(q=1.0, B=2)
        for seed in range(20):
            env.reset(seed=seed)
            view = decode_proposer_observation(env.observe(P))
            assert view == env.unwrapped.game.proposer_view
            env.step(honest_action(env, words=7))
            vview = decode_validator_observation(env.observe(V))
            assert vview == env.unwrapped.game.validator_view

    def test_text_reaches_the_validator_truncated(self) -> None:
        env = fresh(max_words=3)
        action = honest_action(env)
        action["text"] = "one two three four five"
        env.step(action)
        obs = env.observe(V)
        assert obs["text"] == "one two three" and int(obs["word_count"]) == 3

    def test_observations_stay_in_their_spaces_over_many_episodes(self) -> None:
        for kwargs in ({}, {"noise_sd": 1.0, "reveal_compliance": False}, {"q": 1.0, "B": 0, "max_words": 0}):
            env = exchange_audit_v0.env(**kwargs)
            for agent in env.possible_agents:
                env.action_space(agent).seed(1)
            for i in range(300):
                env.reset(seed=4) if i == 0 else env.reset()
                for agent in env.agent_iter():
                    obs, _, term, _, _ = env.last()
                    assert env.observation_space(agent).contains(obs), (kwargs, agent, obs)
                    env.step(None if term else env.action_space(agent).sample(obs.get("action_mask")))
            assert env.unwrapped.state_space.contains(env.unwrapped.state())


# ---------------------------------------------------------------------------
# Seeding and common random numbers
# ---------------------------------------------------------------------------
class TestSeeding:
    def test_episode_option_jumps_to_the_same_episode(self) -> None:
        env = exchange_audit_v0.env()
        env.reset(seed=7)
        sequential = [env.unwrapped.game.state]
        for _ in range(9):
            env.reset()
            sequential.append(env.unwrapped.game.state)
        for i in (0, 3, 9):
            env.reset(seed=7, options={"episode": i})
            assert env.unwrapped.game.state == sequential[i] and env.unwrapped.episode_index == i
        env.reset(seed=7, options={"episode": 4})
        env.reset()  # continues from there
        assert env.unwrapped.game.state == sequential[5]

    @pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
    def test_bad_episode_option(self, bad: Any) -> None:
        with pytest.raises(ValueError, match=r"options\['episode'\] must be a non-negative integer"):
            exchange_audit_v0.env().reset(seed=0, options={"episode": bad})

    def test_same_states_under_every_condition(self) -> None:
        def states(**kwargs: Any) -> list[Any]:
            env = exchange_audit_v0.env(**kwargs)
            out = []
            for i in range(100):
                env.reset(seed=3) if i == 0 else env.reset()
                out.append((env.unwrapped.game.state, env.observe(P)["observed_numbers"].tolist()))
            return out

        base = states()
        for kwargs in ({"q": 0.0}, {"q": 1.0, "B": 1}, {"V": 2.0, "L": 1.0}, {"max_words": 0}):
            assert states(**kwargs) == base

    def test_audited_sets_are_nested_in_q(self) -> None:
        def audited(q: float) -> set[int]:
            env = exchange_audit_v0.env(q=q)
            out = set()
            for i in range(300):
                env.reset(seed=1) if i == 0 else env.reset()
                env.step(honest_action(env))
                if env.unwrapped.game.audit.audited:
                    out.add(i)
            return out

        low, high = audited(0.3), audited(0.5)
        assert low < high and 60 < len(low) < 120

    def test_different_seeds_differ(self) -> None:
        a, b = exchange_audit_v0.env(), exchange_audit_v0.env()
        a.reset(seed=0)
        b.reset(seed=1)
        assert a.unwrapped.game.state != b.unwrapped.game.state


# ---------------------------------------------------------------------------
# Configuration through the environment
# ---------------------------------------------------------------------------
class TestConfiguration:
    @pytest.mark.parametrize(
        "kwargs, match",
        [
            ({"q": 1.5}, r"q must be a number in \[0, 1\], got 1.5"),
            ({"B": -2}, r"B must be an integer in \[0, inf\), got -2"),
            ({"L": -1.0}, r"L must be a number in \[0, "),
            ({"alpha": -0.1}, r"alpha must be"),
            ({"qq": 0.3}, r"unknown exchange-audit parameter\(s\) \['qq'\]"),
            ({"preset": "gpt"}, r"unknown preset 'gpt'"),
            ({"reward_mode": "selfish"}, r"reward_mode must be one of"),
            ({"render_mode": "rgb"}, r"render_mode must be one of"),  # (rgb_array is one: eq_env.core.render)
        ],
    )
    def test_invalid_configuration(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            exchange_audit_v0.env(**kwargs)

    def test_config_object_and_overrides(self) -> None:
        env = exchange_audit_v0.env(config=ExchangeAuditConfig(q=0.7), B=2)
        assert env.unwrapped.config == ExchangeAuditConfig(q=0.7, B=2)
        public = env.observation_space(V)["public"]
        assert public.shape == (16,)

    def test_spaces_are_the_same_objects_every_call(self) -> None:
        env = exchange_audit_v0.env()
        for agent in env.possible_agents:
            assert env.action_space(agent) is env.action_space(agent)
            assert env.observation_space(agent) is env.observation_space(agent)


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
class TestRender:
    def test_ansi_tells_the_whole_episode(self) -> None:
        env = exchange_audit_v0.env(render_mode="ansi", q=1.0)
        env.reset(seed=2)
        assert "waiting for proposer_0" in env.render()
        action = honest_action(env, words=0)
        action["text"] = "a careful hedge within limits"
        env.step(action)
        assert "waiting for validator_0" in env.render()
        env.step(0)
        text = env.render()
        for heading in ("private state", "proposer sees", "proposal", "claims", "text", "audit", "decision", "payoffs"):
            assert re.search(rf"^{heading}\s", text, re.M), heading
        assert '"a careful hedge within limits"' in text and "BLOCK" in text

    def test_human_prints(self, capsys: pytest.CaptureFixture[str]) -> None:
        env = exchange_audit_v0.env(render_mode="human")
        env.reset(seed=2)
        env.step(honest_action(env))
        env.step(0)
        assert "payoffs" in capsys.readouterr().out

    def test_no_render_mode_warns(self) -> None:
        env = fresh()
        with pytest.warns(UserWarning, match="render_mode"):
            assert env.render() is None


def test_manual_is_the_module_docstring() -> None:
    doc = exchange_audit_v0.__doc__
    assert doc is not None
    for section in ("## Proposer action", "## Observations", "## The audit", "## Rewards", "## Version history"):
        assert section in doc
    assert Intent.HEDGE.name in doc
