"""The noisy player: any policy that, with probability ε, plays a random legal action instead.

``noisy:base=planner,epsilon=0.2`` stands in for an imperfect model: it plays what the decentralised
planner would, except that on each turn, with probability ``epsilon``, it plays a uniformly random legal
action (one the observation's ``action_mask`` allows). ``epsilon=0`` is the base policy itself, turn for
turn; ``epsilon=1`` is :class:`~eq_env.baselines.einstein_puzzle.scripted.RandomPlayer`'s uniform legal choice.

The noise is drawn from the policy's own ``rng``, seeded by :meth:`Noisy.reset` on a stream of its own
(``(seed, NOISE_STREAM)``), so it is reproducible and independent of the base's draws; the base is reset
with the same seed as the noisy policy, so at ``epsilon=0`` even a random base plays exactly as it would
alone. Drawn as a candidate generator by ``verified`` (``verified:base="noisy:base=planner,epsilon=0.2"``),
each of the k candidates gets its own coin.

A privileged base (``oracle``, ``verified``) is asked through ``act_privileged``; the noisy policy is
then privileged too (it reads nothing itself).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from eq_env.baselines.einstein_puzzle.scripted import _Seat
from eq_env.core.policy import make_policy

__all__ = ["NOISE_STREAM", "Noisy"]

NOISE_STREAM = 0x6E6F6973  # "nois": the noise's seed stream, apart from the base's


class Noisy(_Seat):
    """``base``'s action, or with probability ``epsilon`` a uniformly random legal one.

    Args:
        base: the policy spec of the base player (default ``planner``), for the same seat.
        epsilon: the probability, in [0, 1], of a random legal action on each turn.
    """

    def __init__(self, base: str = "planner", epsilon: float = 0.2) -> None:
        super().__init__()
        if not isinstance(base, str):
            raise ValueError(f"base must be a policy spec, got {base!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be a number in [0, 1], got {epsilon!r}")
        self.base = make_policy(base, self.role, "einstein-puzzle")
        self.epsilon = float(epsilon)
        self.spec = base
        self.random_actions = 0  # random actions played since the last reset

    def reset(self, seed: int | None = None) -> None:
        """Seed the noise (stream ``(seed, NOISE_STREAM)``) and reset the base with ``seed``."""
        self.rng = np.random.default_rng(None if seed is None else (seed, NOISE_STREAM))
        self.base.reset(seed)
        self.random_actions = 0

    def _noise(self, observation: Mapping[str, Any]) -> int | None:
        """A random legal action with probability ``epsilon``, else ``None`` (one coin per call)."""
        if self.rng.random() >= self.epsilon:
            return None
        self.random_actions += 1
        return int(self.rng.choice(np.flatnonzero(observation["action_mask"])))

    def act(self, observation: Mapping[str, Any]) -> int:
        noise = self._noise(observation)
        if noise is not None:
            return noise
        if callable(getattr(self.base, "act_privileged", None)):
            raise TypeError(f"the base {self.spec!r} reads the hidden state: the runner calls act_privileged")
        return int(self.base.act(observation))

    def act_privileged(self, observation: Mapping[str, Any], env: Any) -> tuple[int, dict[str, Any] | None]:
        """As :meth:`act`, asking a privileged base with the environment; the base's info is passed on
        (none for a random action)."""
        noise = self._noise(observation)
        if noise is not None:
            return noise, None
        privileged = getattr(self.base, "act_privileged", None)
        if callable(privileged):
            index, info = privileged(observation, env)
            return int(index), info
        return int(self.base.act(observation)), None

    def __repr__(self) -> str:
        return f"Noisy(base={self.spec!r}, epsilon={self.epsilon:g})"
