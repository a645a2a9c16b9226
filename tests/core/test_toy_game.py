"""The core serves a game it was not written for: the suite's toy game (tests/toy_game.py, three agents in
two roles, multi-turn episodes) through the runner, experiments, sweeps, the CLI and the policy registry,
with no change to core code; and the core imports no game."""

from __future__ import annotations

import ast
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import toy_game
from toy_game import ID, RelayConfig, RelayRecord, TeamRelay

from eq_env.core import policy as core_policy
from eq_env.core.experiments import Condition, ResultsStore, run_all
from eq_env.core.policy import available_policies, make_policy, register_policy
from eq_env.core.runner import FailedEpisode, evaluate, play, play_concurrent
from eq_env.core.spec import env_spec, spec_for_config
from eq_env.core.sweep import SweepSpec, run_sweep

ROOT = Path(__file__).resolve().parents[2]
RANDOM = {"leader": "random", "runner": "random"}


def test_the_toy_game_is_registered_and_found_by_name_id_and_config() -> None:
    spec = env_spec("relay")
    assert spec is env_spec(ID) is spec_for_config(RelayConfig()) is toy_game.SPEC
    assert spec.agent_roles(RelayConfig()) == {"leader_0": "leader", "runner_0": "runner", "runner_1": "runner"}
    assert env_spec().name == "exchange-audit"  # the package's game stays the default


def test_the_runner_plays_multi_turn_episodes_of_three_agents() -> None:
    records = play("relay", RelayConfig(), RANDOM, episodes=40, seed=3)
    assert len(records) == 40 and all(isinstance(r, RelayRecord) for r in records)
    assert max(r.turns for r in records) > 3  # several rounds of three turns
    assert all(r.final == RelayConfig().target for r in records if r.success)
    # same seed, same episodes, bit for bit; each episode is the one its index names
    assert play("relay", RelayConfig(), RANDOM, episodes=40, seed=3) == records
    assert play("relay", RelayConfig(), RANDOM, episodes=40, seed=4) != records


def test_each_agent_of_a_role_has_its_own_seeded_policy() -> None:
    from eq_env.core.runner import agent_policies

    policies = agent_policies("relay", RelayConfig(), RANDOM)
    assert policies["runner_0"] is not policies["runner_1"]  # one instance per agent, from the role's spec
    shared = make_policy("greedy", "runner", "relay")
    given = agent_policies("relay", RelayConfig(), {"leader": "random", "runner": shared})
    assert given["runner_0"] is given["runner_1"] is shared  # an object given for a role plays all its agents


def test_evaluate_measures_the_games_own_metrics() -> None:
    ev = evaluate("relay", RelayConfig(target=9), {"leader": "random", "runner": "greedy"}, episodes=60, seeds=[0, 1])
    assert set(ev.summary) == {"success_rate", "turns"} and len(ev.per_seed) == 2
    assert 0 < ev.summary["success_rate"][0] <= 1 and ev.summary["turns"][0] > 3
    assert ev.policies["runner"].startswith("GreedyRelay")


class AsyncRunner:
    """An async policy (as LLM policies are): the concurrent runner plays it, and records what it reports."""

    role = "runner"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Mapping[str, Any]) -> int:  # (never used: aact is)
        raise AssertionError("the concurrent runner awaits aact")

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        await asyncio.sleep(0)
        return 0, {"prompt_tokens": 1, "completion_tokens": 1, "transport": {"requests": 1}}


def test_async_policies_are_played_concurrently_with_their_infos_merged_over_turns() -> None:
    out = play_concurrent("relay", RelayConfig(), {"leader": "random", "runner": AsyncRunner()}, episodes=12, seed=0,
                          concurrency=4)  # fmt: skip
    assert len(out) == 12 and not any(isinstance(e, FailedEpisode) for e in out)
    for record in out:
        turns = record.infos["runner_0"]["prompt_tokens"]  # one info per turn, summed over the episode
        assert turns >= 1 and record.infos["runner_0"]["transport"]["requests"] == turns
    from eq_env.core.runner import llm_summary

    summary = llm_summary("relay", RelayConfig(), out)
    assert summary["runner"]["transport"]["requests"] == sum(
        r.infos[a]["transport"]["requests"] for r in out for a in ("runner_0", "runner_1") if a in r.infos
    )


def test_a_joint_policy_decides_for_all_its_agents_at_once() -> None:
    team = TeamRelay()
    records = play("relay", RelayConfig(target=30, max_turns=9), {"leader": "random", "runner": team}, episodes=5,
                   seed=0)  # fmt: skip
    # nine turns: three rounds; each round the joint policy is asked once, for both runners
    assert all(r.turns == 9 for r in records) and team.calls == 5 * 3


def test_a_failing_policy_fails_its_episode_and_names_the_agent() -> None:
    class Broken(AsyncRunner):
        async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
            raise RuntimeError("boom")

    out = play_concurrent("relay", RelayConfig(), {"leader": "random", "runner": Broken()}, episodes=3, seed=0)
    assert all(isinstance(e, FailedEpisode) and e.role == "runner" and e.agent == "runner_0" for e in out)


def test_experiments_and_resume_on_the_toy_game(tmp_path: Path) -> None:
    conditions = [Condition(RelayConfig(target=t), RANDOM, 20, (("target", t),)) for t in (5, 8)]
    assert all(c.identity()["env"] == ID for c in conditions)  # a second game's keys name it
    store = ResultsStore(tmp_path / "results.jsonl")
    first = run_all(conditions, [0, 1], store, progress=False)
    assert [r["env"] for r in first] == [ID] * 4 and set(first[0]["metrics"]) == {"success_rate", "turns"}
    again = run_all(conditions, [0, 1], store, progress=False)  # resumed: nothing left to run
    assert again == first and store.path.read_text().count("\n") == 4


@pytest.mark.slow  # (a quarter of a second or more: the fast run stays under a minute)
def test_a_sweep_of_the_toy_game(tmp_path: Path) -> None:
    spec = SweepSpec(env="relay", grid={"target": [5, 9]}, policies={"runner": ["random", "greedy"]}, seeds=[0, 1],
                     episodes=20)  # fmt: skip
    rows = run_sweep(spec, tmp_path, progress=False)
    assert len(rows) == 4 and {r["runner"] for r in rows} == {"random", "greedy"}
    assert {"target", "leader", "runner", "success_rate_mean", "turns_mean"} <= set(rows[0])
    for name in ("summary.csv", "summary.md", "paired.csv", "sweep.png", "sweep.json", "results.jsonl"):
        assert (tmp_path / name).exists(), name
    saved = json.loads((tmp_path / "sweep.json").read_text())
    assert saved["env"] == ID and saved["policies"]["leader"] == ["random"]
    from_file = SweepSpec.from_mapping({"env": "relay", "runners": ["greedy"], "grid": {"target": [4]}, "seeds": 1})
    assert from_file.policies == {"leader": ["random"], "runner": ["greedy"]}
    with pytest.raises(ValueError, match="unknown key"):
        SweepSpec.from_mapping({"env": "relay", "proposers": ["honest"]})  # another game's role


def test_the_cli_plays_and_lists_the_toy_game(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from eq_env.cli import main

    assert main(["play", "--env", "relay", "--runner", "greedy", "--target", "9", "--episodes", "30"]) == 0
    out = capsys.readouterr().out
    assert "success_rate" in out and "runner    GreedyRelay" in out and "'target': 9" in out
    assert main(["play", "--env", "relay", "--episodes", "10", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["metrics"]) == {"success_rate", "turns"}
    assert main(["policies", "--env", "relay"]) == 0
    listed = capsys.readouterr().out
    assert "greedy" in listed and "team" in listed and "honest" not in listed
    assert main(["envs"]) == 0
    assert "relay" in capsys.readouterr().out
    assert main(["sweep", "--env", "relay", "--out", str(tmp_path), "--grid", "target=4,6", "--seeds", "2",
                 "--episodes", "10"]) == 0  # fmt: skip
    assert (tmp_path / "summary.md").exists()
    with pytest.raises(SystemExit):  # the flags are the game's: relay has no --q
        main(["play", "--env", "relay", "--q", "0.3"])


def test_policies_are_keyed_by_game() -> None:
    register_policy("honest", "leader", toy_game.RandomLeader, "a name another game uses too", env=ID)
    try:
        assert {e.env for e in available_policies(env="relay") if e.name == "honest"} == {ID}
        assert make_policy("honest", "proposer").role == "proposer"  # the exchange–audit game's is untouched
        with pytest.raises(ValueError, match="unknown policy 'rule'"):
            make_policy("rule", "leader", "relay")
    finally:
        del core_policy._REGISTRY[(ID, "honest", "leader")]


def test_installed_packages_add_policies_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an installed distribution whose entry point in the eq_env.policies group names a module that registers
    (tmp_path / "relay_plugin.py").write_text(
        "from eq_env.core.policy import register_policy\n"
        "from toy_game import ID, GreedyRelay\n"
        "register_policy('plugged', 'runner', GreedyRelay, 'from a plugin', env=ID)\n"
    )
    dist = tmp_path / "relay_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: relay-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[eq_env.policies]\nrelay = relay_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(core_policy, "_entry_points_loaded", False)
    try:
        assert make_policy("plugged", "runner", "relay").role == "runner"
    finally:
        core_policy._REGISTRY.pop((ID, "plugged", "runner"), None)
        sys.modules.pop("relay_plugin", None)


def _imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    return modules


# (that the core imports no game, and nothing above it, is tests/core/test_layers.py's: every module, function
# bodies included)


def test_generic_agent_and_baseline_modules_import_no_game_at_module_level() -> None:
    generic = ("client.py", "llm.py", "replies.py", "fake_server.py", "stand_in.py")
    for path in [ROOT / "agents" / n for n in generic] + [ROOT / "baselines" / "sb3.py"]:
        top_level = {
            node.module for node in ast.parse(path.read_text()).body if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not any("exchange_audit" in m for m in top_level), path.name


def test_infos_of_several_turns_merge_into_one() -> None:
    from eq_env.core.runner import merge_infos

    one = {"tokens": 3, "fallback": False, "errors": ["a"], "transport": {"requests": 1}, "model": "m"}
    two = {"tokens": 4, "fallback": True, "errors": ["b"], "transport": {"requests": 2}, "model": "m"}
    assert merge_infos([one]) == one and merge_infos([one]) is not one
    assert merge_infos([one, two]) == {"tokens": 7, "fallback": True, "errors": ["a", "b"],
                                       "transport": {"requests": 3}, "model": "m"}  # fmt: skip
    assert one["errors"] == ["a"]  # the inputs are not changed
    assert merge_infos([]) is None


# ---------------------------------------------------------------------------
# Joint policies, optional defaults, game entry points, --env (a review's findings)
# ---------------------------------------------------------------------------
class _Schedule:
    """Just enough of an AEC environment for the turn loop: a fixed order of turns, some of them forced."""

    def __init__(self, turns: list[tuple[str, bool]]) -> None:
        self.turns, self.agents, self.played = turns, ["r0", "r1"], []  # type: ignore[var-annotated]
        self._now = ""

    def agent_iter(self) -> Any:
        for agent, forced in self.turns:
            self._now, self._forced = agent, forced
            yield agent

    def observe(self, agent: str) -> dict[str, Any]:
        import numpy as np

        return {"action_mask": np.array([1, 0] if agent == self._now and self._forced else [1, 1])}

    def last(self) -> tuple[Any, float, bool, bool, dict]:
        return self.observe(self._now), 0.0, False, False, {}

    def step(self, action: Any) -> None:
        self.played.append((self._now, action))


class _Numbered:
    role = "runner"

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, seed: int | None = None) -> None:
        pass

    def act_joint(self, observations: Mapping[str, Any]) -> dict[str, int]:
        self.calls += 1
        return dict.fromkeys(observations, 10 + self.calls)  # an action that says which call made it


def test_a_joint_answer_is_never_replayed_in_a_later_round() -> None:
    from eq_env.core.runner import _Agents, _Turns

    policy = _Numbered()
    agents = _Agents.__new__(_Agents)
    agents.by_agent = {"r0": policy, "r1": policy}
    # r0 is asked (call 1, which answers for r1 too); r1's move is forced; the next round begins with r1
    env = _Schedule([("r0", False), ("r1", True), ("r1", False), ("r0", False)])
    asyncio.run(_Turns(env, agents).play())
    assert env.played == [("r0", 11), ("r1", 0), ("r1", 12), ("r0", 12)] and policy.calls == 2


def test_a_joint_policy_from_a_spec_decides_for_all_its_agents() -> None:
    from eq_env.core.runner import agent_policies

    policies = agent_policies("relay", RelayConfig(), {"leader": "random", "runner": "team"})
    assert isinstance(policies["runner_0"], TeamRelay) and policies["runner_0"] is policies["runner_1"]
    records = play("relay", RelayConfig(target=30, max_turns=9), {"leader": "random", "runner": "team"},
                   episodes=2, seed=0)  # fmt: skip
    assert all(r.turns == 9 for r in records)


def test_joint_policies_are_checked() -> None:
    class Forgetful(TeamRelay):
        def act_joint(self, observations: Mapping[str, Any]) -> dict[str, int]:
            return {"runner_0": 0}  # nothing for runner_1

    class AsyncTeam(TeamRelay):
        async def aact_joint(self, observations: Mapping[str, Any]) -> tuple[dict[str, int], dict]:
            return dict.fromkeys(observations, 0), {"transport": {"requests": 1}}

    with pytest.raises(Exception, match="gave no action for runner_1"):
        play("relay", RelayConfig(), {"leader": "random", "runner": Forgetful()}, episodes=1, seed=0)
    with pytest.raises(ValueError, match="plays 'runner', not 'leader'"):
        play("relay", RelayConfig(), {"leader": TeamRelay(), "runner": "random"}, episodes=1, seed=0)
    out = play_concurrent("relay", RelayConfig(target=30, max_turns=6), {"leader": "random", "runner": AsyncTeam()},
                          episodes=2, seed=0)  # an async joint policy is played concurrently  # fmt: skip
    assert [r.turns for r in out] == [6, 6] and out[0].infos["runner_0"]["transport"]["requests"] == 2


def test_a_choice_whose_value_is_none_is_not_none(tmp_path: Path) -> None:
    spec = SweepSpec.from_mapping({"env": "relay", "grid": {"chatter": ["none", "some"]}, "seeds": 1, "episodes": 2})
    assert spec.grid == {"chatter": ["none", "some"]} and len(spec.conditions()) == 2
    from eq_env.cli import main

    assert main(["sweep", "--env", "relay", "--out", str(tmp_path), "--grid", "chatter=none,some", "--seeds", "1",
                 "--episodes", "3"]) == 0  # fmt: skip


def test_a_game_without_a_default_policy_for_a_role_asks_for_one(capsys: pytest.CaptureFixture[str]) -> None:
    from dataclasses import replace

    from eq_env.cli import main
    from eq_env.core import spec as core_spec

    bare = replace(toy_game.SPEC, id="eq_env/relay-bare-v0", name="relay-bare", default_policies={"leader": "random"})
    core_spec.register_env(bare)
    register_policy("random", "leader", toy_game.RandomLeader, env=bare.id)  # (the registry is keyed by game)
    register_policy("greedy", "runner", toy_game.GreedyRelay, env=bare.id)
    try:
        with pytest.raises(SystemExit):
            main(["play", "--env", "relay-bare", "--episodes", "3"])
        assert "the following arguments are required: --runner" in capsys.readouterr().err
        assert main(["play", "--env", "relay-bare", "--runner", "greedy", "--episodes", "3"]) == 0
        with pytest.raises(ValueError, match="at least one runner policy"):
            SweepSpec(env="relay-bare").validate()
        assert SweepSpec(env="relay-bare", policies={"runner": ["greedy"]}).policies["leader"] == ["random"]
    finally:
        del core_spec._SPECS[bare.id]
        for key in [k for k in core_policy._REGISTRY if k[0] == bare.id]:
            del core_policy._REGISTRY[key]


def test_a_game_registers_under_a_pettingzoo_without_a_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """PettingZoo 1.24-1.26 (AgileRL pins pettingzoo<1.27) have no registry: a game still registers, is found by
    name, made from its module and passes the battery's agent check."""
    from dataclasses import replace

    import pettingzoo

    from eq_env.core import spec as core_spec
    from eq_env.core.conformance import check_agents

    for name in ("register", "make", "aec_registry", "parallel_registry"):  # what 1.26 lacks
        monkeypatch.delattr(pettingzoo, name, raising=False)
    old = replace(toy_game.SPEC, id="eq_env/relay-old-pz-v0", name="relay-old-pz")
    try:
        core_spec.register_env(old)
        assert env_spec("relay-old-pz") is old
        check_agents(old.id, {})
    finally:
        core_spec._SPECS.pop(old.id, None)


def test_the_env_flag_is_given_once_and_in_full(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from eq_env.cli import main

    assert main(["play", "--env", "relay", "--env", "exchange-audit"]) == 2
    assert "given 2 times" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["play", "--en", "relay"])  # no abbreviations: --en is not --env
    spec_file = tmp_path / "s.json"
    spec_file.write_text(json.dumps({"env": "relay", "seeds": 1, "episodes": 2}))
    assert main(["sweep", "--out", str(tmp_path / "o"), "--config", str(spec_file)]) == 2
    assert "add --env relay" in capsys.readouterr().err
    assert main(["sweep", "--env", "relay", "--out", str(tmp_path / "o"), "--config", str(spec_file)]) == 0


def test_installed_packages_add_games_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eq_env.core import spec as core_spec

    (tmp_path / "plugged_game.py").write_text(
        "from dataclasses import replace\n"
        "import toy_game\n"
        "from eq_env.core.spec import register_env\n"
        "register_env(replace(toy_game.SPEC, id='eq_env/plugged-v0', name='plugged'))\n"
    )
    (tmp_path / "broken_game.py").write_text("raise ImportError('this plugin is broken')\n")
    dist = tmp_path / "plugged-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: plugged\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[eq_env.envs]\nplugged = plugged_game\nbroken = broken_game\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(core_spec, "_entry_points_loaded", False)
    try:
        with pytest.warns(UserWarning, match="entry point 'broken' .*this plugin is broken"):
            game = env_spec("plugged")  # the broken one is named and skipped; the others load
        assert game.id == "eq_env/plugged-v0" and env_spec().name == "exchange-audit"
    finally:
        core_spec._SPECS.pop("eq_env/plugged-v0", None)
        for name in ("plugged_game", "broken_game"):
            sys.modules.pop(name, None)


class _Peeking:
    """A privileged runner policy: it reads the game itself (the counter) and reports what it saw."""

    role = "runner"

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: Mapping[str, Any]) -> int:
        raise AssertionError("a privileged policy is never asked to act blind")

    def act_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any]]:
        assert int(observation["observation"][0]) == env.counter  # the episode's own raw environment
        return 0, {"peeked": 1}


@pytest.mark.parametrize("concurrent", [False, True])
def test_a_privileged_policy_is_given_the_episodes_environment(concurrent: bool) -> None:
    peek = _Peeking()
    if concurrent:
        episodes = play_concurrent("relay", RelayConfig(), {"leader": "random", "runner": peek}, episodes=6, seed=1,
                                   concurrency=3)  # fmt: skip
    else:
        episodes = play("relay", RelayConfig(), {"leader": "random", "runner": peek}, episodes=6, seed=1)
    assert all(not isinstance(e, FailedEpisode) for e in episodes)
    assert all(e.infos["runner_0"]["peeked"] >= 1 for e in episodes)


class _AsyncPeeking(_Peeking):
    """The same, as a coroutine (an LLM screened by the game's verifiers is one)."""

    def act_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any]]:
        raise AssertionError("the coroutine is preferred")

    async def aact_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any]]:
        await asyncio.sleep(0)
        return _Peeking.act_privileged(self, observation, env)


def test_an_async_privileged_policy_is_awaited_with_the_environment() -> None:
    episodes = play_concurrent("relay", RelayConfig(), {"leader": "random", "runner": _AsyncPeeking()}, episodes=4,
                               seed=2, concurrency=2)  # fmt: skip
    assert all(not isinstance(e, FailedEpisode) and e.infos["runner_0"]["peeked"] >= 1 for e in episodes)
    assert play("relay", RelayConfig(), {"leader": "random", "runner": _AsyncPeeking()}, episodes=2, seed=2)


def test_a_policys_summary_is_its_docstrings_first_sentence_in_plain_text() -> None:
    # `eq-env policies` shows it: a sentence cut at a line end, or reST markup, read badly there.
    from eq_env.core.policy import _first_sentence

    doc = """The rule engine reading the text (:func:`~pkg.mod.read_text`, ``regime="text_only"``), as the
    paper's rule does. A second sentence.

    Args: none."""
    assert (
        _first_sentence(doc)
        == 'The rule engine reading the text (read_text, regime="text_only"), as the paper\'s rule does.'
    )
    assert _first_sentence("Approves whenever approving is legal.") == "Approves whenever approving is legal."
    assert _first_sentence("") == ""
