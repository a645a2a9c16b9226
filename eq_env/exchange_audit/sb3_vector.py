"""The SB3 ``VecEnv`` forms of the exchange–audit game's vectorised views: :class:`ProposerVecEnv` and
:class:`ValidatorVecEnv` (the manual is :mod:`eq_env.exchange_audit.vector`, which re-exports them).

They need Stable-Baselines3 (the ``rl`` extra), which this module imports; :mod:`eq_env.exchange_audit.vector`
imports it only when one of them is asked for, so its Gymnasium ``VectorEnv`` forms work without SB3.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from eq_env.core.policy import Policy
from eq_env.exchange_audit.vector import _core

__all__ = ["ProposerVecEnv", "ValidatorVecEnv"]


class _SB3(VecEnv):
    render_mode = None
    core: Any

    def __init__(self, core: Any) -> None:
        self.core = core
        super().__init__(core.n, core.observation_space, core.action_space)
        self._actions: Any = None

    def reset(self) -> np.ndarray:
        obs = self.core.reset(list(self._seeds))
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs  # type: ignore[no-any-return]

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        played, rewards, obs, infos = self.core.step(self._actions)
        for i, info in enumerate(infos):
            info["terminal_observation"] = played[i]
        return obs, rewards.astype(np.float32), np.ones(self.num_envs, dtype=bool), infos

    def action_masks(self) -> np.ndarray:
        """Legal actions of every environment's current episode, (num_envs, mask size)."""
        return self.core.mask  # type: ignore[no-any-return]

    def close(self) -> None:
        pass

    def _indices(self, indices: int | Iterable[int] | None) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def get_attr(self, attr_name: str, indices: int | Iterable[int] | None = None) -> list[Any]:
        if attr_name == "action_masks":
            return [self.action_masks for _ in self._indices(indices)]
        if attr_name in ("render_mode", "configs", "config", "reward_mode", "role", "other", "template"):
            value = getattr(self, attr_name) if attr_name == "render_mode" else getattr(self.core, attr_name)
            return [value for _ in self._indices(indices)]
        raise AttributeError(f"{type(self).__name__} environments have no attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: int | Iterable[int] | None = None) -> None:
        raise AttributeError(f"{type(self).__name__}: attributes are set at construction")

    def env_method(
        self, method_name: str, *method_args: Any, indices: int | Iterable[int] | None = None, **method_kwargs: Any
    ) -> list[Any]:
        if method_name == "action_masks":
            masks = self.core.mask
            return [masks[i] for i in self._indices(indices)]
        raise AttributeError(f"{type(self).__name__} environments have no method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: int | Iterable[int] | None = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


class ProposerVecEnv(_SB3):
    """``num_envs`` proposer views as one SB3 ``VecEnv`` (see the module docstring); keyword arguments
    as :class:`~eq_env.exchange_audit.views.ExchangeAuditProposerEnv` (``config``, ``preset``,
    ``reward_mode``, ``action_encoding``, game parameters)."""

    def __init__(self, num_envs: int = 8, validator: Policy | str = "rule", **kwargs: Any) -> None:
        super().__init__(_core("proposer", num_envs, validator, kwargs))


class ValidatorVecEnv(_SB3):
    """``num_envs`` validator views as one SB3 ``VecEnv`` (see the module docstring); keyword arguments
    as :class:`~eq_env.exchange_audit.views.ExchangeAuditValidatorEnv` (``skip_no_trade``,
    ``audit_intensities``, ``max_skips``...)."""

    def __init__(self, num_envs: int = 8, proposer: Policy | str = "honest", **kwargs: Any) -> None:
        super().__init__(_core("validator", num_envs, proposer, kwargs))
