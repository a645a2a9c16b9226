"""TorchRL's ``PettingZooWrapper`` with a multi-agent PPO (its MAPPO tutorial's pieces), on every game.

The parallel environment (numeric mode) wrapped as it is: TorchRL groups the agents by name (exchange–audit:
a ``proposer`` and a ``validator`` group, each with its own L and A; belief coordination: the executors
together, the coordinator apart), reads each agent's ``action_mask`` and keeps it updated in the specs. Per
group: a ``MultiAgentMLP`` actor (parameters shared within the group) behind a ``ProbabilisticActor`` with
a ``MaskedCategorical`` over the mask, a centralised ``MultiAgentMLP`` critic (MAPPO), a ``ClipPPOLoss``
with GAE; one ``Collector`` (the tutorial's ``SyncDataCollector``, renamed in TorchRL 0.14) for all groups.
"""

from __future__ import annotations

import pytest
from recipes import games, need, parallel_env

need("torchrl", "tensordict", "torch")

import torch  # noqa: E402
from tensordict.nn import TensorDictModule, TensorDictSequential  # noqa: E402
from torchrl.collectors import Collector  # noqa: E402 - (SyncDataCollector before 0.14)
from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type  # noqa: E402
from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor  # noqa: E402
from torchrl.objectives import ClipPPOLoss, ValueEstimators  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.compat]

FRAMES_PER_BATCH = 500  # environment steps per collection (every agent of every group acts in each)
BATCHES = 4  # 2000 environment steps in all


def _group_modules(env: PettingZooWrapper, group: str) -> tuple[ProbabilisticActor, TensorDictModule]:
    """The group's masked actor and its centralised critic."""
    n_agents = len(env.group_map[group])
    features = (group, "observation", "observation")  # (the Dict's features; its mask moves to the group)
    width = env.observation_spec[features].shape[-1]
    actions = env.full_action_spec[group, "action"].space.n
    actor_net = MultiAgentMLP(
        n_agent_inputs=width,
        n_agent_outputs=actions,
        n_agents=n_agents,
        centralized=False,
        share_params=True,
        depth=2,
        num_cells=64,
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=[features], out_keys=[(group, "logits")]),
        spec=env.full_action_spec[group, "action"],
        in_keys={"logits": (group, "logits"), "mask": (group, "action_mask")},
        out_keys=[(group, "action")],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=(group, "sample_log_prob"),
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=width,
        n_agent_outputs=1,
        n_agents=n_agents,
        centralized=True,
        share_params=True,
        depth=2,
        num_cells=64,
    )
    critic = TensorDictModule(critic_net, in_keys=[features], out_keys=[(group, "state_value")])
    return actor, critic


@pytest.mark.parametrize("spec", games(), ids=lambda s: s.name)
def test_mappo_trains_each_group_with_masked_actions_and_evaluates(spec) -> None:
    torch.manual_seed(0)
    env = PettingZooWrapper(parallel_env(spec), categorical_actions=True, seed=0)
    check_env_specs(env, seed=0)  # TorchRL's own check: specs match what reset/step return
    groups = list(env.group_map)
    assert sorted(a for g in groups for a in env.group_map[g]) == sorted(parallel_env(spec).possible_agents)

    modules = {group: _group_modules(env, group) for group in groups}
    policy = TensorDictSequential(*(actor for actor, _ in modules.values()))
    losses = {}
    for group, (actor, critic) in modules.items():
        loss = ClipPPOLoss(actor_network=actor, critic_network=critic, entropy_coeff=0.01, normalize_advantage=False)
        loss.set_keys(
            reward=(group, "reward"),
            action=(group, "action"),
            sample_log_prob=(group, "sample_log_prob"),
            value=(group, "state_value"),
            done=(group, "done"),
            terminated=(group, "terminated"),
        )
        loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
        losses[group] = loss
    params = [p for loss in losses.values() for p in loss.parameters()]
    optim = torch.optim.Adam(params, lr=3e-4)

    collector = Collector(
        env,
        policy,
        frames_per_batch=FRAMES_PER_BATCH,
        auto_register_policy_transforms=False,
        total_frames=FRAMES_PER_BATCH * BATCHES,
        device="cpu",
    )
    batches = 0
    for data in collector:
        batches += 1
        assert data.batch_size == torch.Size([FRAMES_PER_BATCH])
        for group, loss in losses.items():
            n_agents = len(env.group_map[group])
            action, mask = data[group, "action"], data[group, "action_mask"]
            assert action.shape == (FRAMES_PER_BATCH, n_agents) and mask.shape[:2] == action.shape
            assert mask.gather(-1, action.unsqueeze(-1)).all(), f"{group}: an action outside its mask was sampled"
            assert data["next", group, "reward"].shape == (FRAMES_PER_BATCH, n_agents, 1)
            with torch.no_grad():
                loss.value_estimator(
                    data, params=loss.critic_network_params, target_params=loss.target_critic_network_params
                )
            terms = loss(data)
            total = terms["loss_objective"] + terms["loss_critic"] + terms["loss_entropy"]
            assert torch.isfinite(total), (group, {k: float(v) for k, v in terms.items() if k.startswith("loss")})
            optim.zero_grad()
            total.backward()
            optim.step()
        collector.update_policy_weights_()
    collector.shutdown()
    assert batches == BATCHES

    # Evaluation on the PettingZoo env (through the wrapper): the deterministic policy, every action in its mask.
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        rollout = env.rollout(max_steps=200, policy=policy, auto_reset=True, break_when_any_done=True)
    assert rollout["next", "done"][-1].all()
    for group in groups:
        action, mask = rollout[group, "action"], rollout[group, "action_mask"]
        assert mask.gather(-1, action.unsqueeze(-1)).all(), group
        assert torch.isfinite(rollout["next", group, "reward"]).all()
    env.close()
