"""Tianshou 2's ``PettingZooEnv`` with its multi-agent policy manager, on every game (its tic-tac-toe tutorial).

The AEC environment (numeric mode) in Tianshou's ``PettingZooEnv``, which reads the ``Dict``'s
``observation`` and ``action_mask`` and asks for one space for every agent: padded first (``eq_env.pad_numeric``).
One DQN per agent (the tutorial's learner, for every seat) in a ``MultiAgentOffPolicyAlgorithm``, trained by
``run_training`` with ``OffPolicyTrainerParams``; DQN's greedy and epsilon-random actions both keep to the mask.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from recipes import aec_env, games, need

from eq_env import pad_numeric

need("tianshou", "torch")

import torch  # noqa: E402
from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import Collector, CollectStats, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv  # noqa: E402
from tianshou.env.pettingzoo_env import PettingZooEnv  # noqa: E402
from tianshou.trainer import OffPolicyTrainerParams  # noqa: E402
from tianshou.utils import LazyLogger  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.compat]

ENV_STEPS = 2000  # decisions of all agents together, over the training envs
TRAIN_ENVS = 2


class _Losses(LazyLogger):
    """Tianshou's do-nothing logger, keeping every number logged under a name with "loss" in it."""

    def __init__(self) -> None:
        super().__init__()
        self.update_interval = 1
        self.losses: list[float] = []

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        def walk(value: Any, name: str) -> None:
            if isinstance(value, dict):
                for key, inner in value.items():
                    walk(inner, f"{name}/{key}")
            elif "loss" in name and isinstance(value, (int, float, np.floating)):
                self.losses.append(float(value))

        walk(data, step_type)


def _make(spec: Any) -> PettingZooEnv:
    return PettingZooEnv(pad_numeric(aec_env(spec)))


@pytest.mark.parametrize("spec", games(), ids=lambda s: s.name)
def test_a_dqn_per_agent_trains_through_the_policy_manager_and_keeps_to_the_masks(spec) -> None:
    np.random.seed(0)
    torch.manual_seed(0)
    env = _make(spec)  # PettingZooEnv's own check: one observation and one action space for every agent
    features = env.observation_space["observation"].shape
    actions = int(env.action_space.n)

    def dqn() -> DQN:
        net = Net(state_shape=features, action_shape=actions, hidden_sizes=[64, 64])
        policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.2, eps_inference=0.0)
        return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.9, target_update_freq=50)

    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[dqn() for _ in env.agents], env=env)
    train_envs = DummyVectorEnv([lambda: _make(spec) for _ in range(TRAIN_ENVS)])
    test_envs = DummyVectorEnv([lambda: _make(spec)])
    train_envs.seed(0)
    test_envs.seed(100)
    buffer = VectorReplayBuffer(ENV_STEPS, TRAIN_ENVS)
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=False)
    train_collector.reset()
    logger = _Losses()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=1,
            epoch_num_steps=ENV_STEPS,
            collection_step_num_env_steps=20,
            test_step_num_episodes=2,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.1,
            logger=logger,
            test_in_training=False,
            show_progress=False,
            multi_agent_return_reduction=lambda rewards: rewards.sum(axis=1),
        )
    )
    assert result.train_step >= ENV_STEPS and result.update_step > 0 and result.test_episode >= 2
    assert logger.losses and np.isfinite(logger.losses).all()

    # What was collected: each agent's steps, its mask, and the action it took inside the mask.
    data = buffer.sample(0)[0]  # everything, in order
    assert len(data) == len(buffer) >= ENV_STEPS
    assert data.obs.obs.shape == (len(data), *features) and data.obs.mask.shape == (len(data), actions)
    assert set(np.unique(data.obs.agent_id)) == set(env.agents)
    assert data.obs.mask[np.arange(len(data)), data.act].all(), "an action outside its mask was taken"
    assert np.isfinite(data.rew).all()

    # Evaluation on the PettingZoo env (through PettingZooEnv): greedy, every action in its mask.
    evaluation = Collector[CollectStats](algorithm, DummyVectorEnv([lambda: _make(spec)]), VectorReplayBuffer(2000, 1))
    evaluation.reset()
    algorithm.policy.eval()
    stats = evaluation.collect(n_episode=3, reset_before_collect=True)
    played = evaluation.buffer.sample(0)[0]
    assert stats.n_collected_episodes == 3 and played.obs.mask[np.arange(len(played)), played.act].all()
    assert np.isfinite(stats.returns).all()
