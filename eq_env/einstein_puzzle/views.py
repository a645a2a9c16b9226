"""The single-agent Gymnasium view of the Einstein puzzle: one seat, a fixed partner in the other.

``gymnasium.make("eq_env/EinsteinPuzzle-v0", partner="planner", n=4, comm_mode="provide_only")``
plays ``seat`` (``"player_0"``, the bottom seat that moves first, by default)
with any partner policy in the other seat (a spec or an object: ``planner``,
``random``, ``oracle``, an LLM, a trained model). Each step is one turn of
this seat; the partner's turns are played in between.

* Observations: the seat's numeric observation (:mod:`.spaces`), a flat
  float32 vector; the text is left out.
* Actions: ``Discrete(48·n + 1)``, the environment's action space;
  ``action_masks()`` gives the legal ones (sb3-contrib's MaskablePPO). An
  unmasked action is played as the environment plays it: a failed turn.
* Rewards: the team reward accrued from this action until this seat's next
  turn (or the end), partner's turns included.
* ``info``: ``success``, ``turns`` and ``placed`` when the episode ends.

* ``render_mode``: ``"ansi"`` (the board as text), ``"human"`` (printed) or
  ``"rgb_array"`` (the board as a picture, one shape for every frame:
  :mod:`eq_env.core.render`, for ``RecordVideo`` and SB3's ``make_vec_env``).
  An unknown keyword is a ``TypeError``, a bad value a ``ValueError``. The
  view pickles (``AsyncVectorEnv`` with ``context="spawn"``: give the workers
  ``gymnasium.make("eq_env:eq_env/EinsteinPuzzle-v0")`` or the ``EnvSpec``).

``reset(seed=s)`` then ``reset()``… play episodes 0, 1, 2… of seed ``s``, as
the AEC environment does; the partner is seeded as the runner seeds it.

Train with one torch thread on a small machine (``eq-env`` commands do; SB3's
default, a thread per core, contends on small networks: on 2 cores
``benchmarks/torch_threads.py`` measures the cost)::

    import torch
    from sb3_contrib import MaskablePPO
    torch.set_num_threads(1)
    model = MaskablePPO("MlpPolicy", gymnasium.make("eq_env/EinsteinPuzzle-v0"))

Version history:

* v0: first version (eq_env 0.1.0).
* v0, before its first release: ``render_mode`` takes ``"human"`` and ``"rgb_array"``; the view
  pickles (its partner's per-seat class could not be found by name); an unknown keyword is a ``TypeError``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from eq_env.core.policy import Policy, make_policy
from eq_env.core.render import RENDER_MODES, check_render_mode
from eq_env.core.runner import decide_now, policy_seed
from eq_env.core.spec import env_spec
from eq_env.einstein_puzzle.config import EinsteinPuzzleConfig
from eq_env.einstein_puzzle.env import raw_env
from eq_env.einstein_puzzle.spaces import layout, n_actions

__all__ = ["EinsteinPuzzleEnv", "EinsteinPuzzleSelfPlayEnv"]

SEATS = ("player_0", "player_1")


class _View(gymnasium.Env):
    """What both views share: the game's configuration, its AEC environment, the spaces and the mask."""

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012 - Gymnasium's name

    def _setup(
        self, config: EinsteinPuzzleConfig | None, preset: str | None, render_mode: str | None, overrides: Any
    ) -> None:
        check_render_mode(render_mode)
        if config is not None and preset is not None:
            raise ValueError("give config or preset, not both")
        if config is not None and not isinstance(config, EinsteinPuzzleConfig):
            raise ValueError(f"config must be an EinsteinPuzzleConfig, got {type(config).__name__}")
        self.config = (config or EinsteinPuzzleConfig.from_preset(preset)).replace(**overrides)
        self.render_mode = render_mode
        self._env = raw_env(config=self.config, render_mode=render_mode)
        n = self.config.n
        self.observation_space = spaces.Box(0.0, 1.0, (layout(n).size,), np.float32)
        self.action_space = spaces.Discrete(n_actions(n))
        self._mask = np.zeros(n_actions(n), np.int8)

    @property
    def game(self) -> Any:
        """The game in progress (:class:`~eq_env.einstein_puzzle.rules.State`)."""
        return self._env.game

    def _observe_seat(self, seat: str) -> np.ndarray:
        obs = self._env.observe(seat)
        self._mask = obs["action_mask"]
        return np.asarray(obs["observation"], np.float32)

    @staticmethod
    def _no_options(options: dict[str, Any] | None) -> None:
        if options:
            raise ValueError(
                f"this view takes no reset options (game parameters go to gymnasium.make), got {options!r}"
            )

    def action_masks(self) -> np.ndarray:
        """The legal actions of the seat to act now (bool), for MaskablePPO."""
        return self._mask.astype(bool)

    def render(self) -> str | np.ndarray | None:
        return self._env.render()


class EinsteinPuzzleEnv(_View):
    """One seat of the Einstein puzzle against a fixed partner (see the module docstring)."""

    def __init__(
        self,
        partner: Policy | str = "planner",
        *,
        seat: str = "player_0",
        config: EinsteinPuzzleConfig | None = None,
        preset: str | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
        self._setup(config, preset, render_mode, overrides)
        self.seat, self.partner_seat = seat, SEATS[1 - SEATS.index(seat)]
        try:
            self.partner = make_policy(partner, self.partner_seat, "einstein-puzzle")
        except ValueError as err:
            raise ValueError(f"partner: {err}") from None
        self._seeded = False

    def _partner_act(self, observation: Any) -> int:
        """The partner's action, however it acts (privileged, waiting or plain: the runner's :func:`decide`)."""
        return int(decide_now(self.partner, observation, self._env)[0])

    def _advance(self) -> float:
        """Play the partner until it is this seat's turn or the game ends; the team reward it earned."""
        env, reward = self._env, 0.0
        while env.agents and env.agent_selection == self.partner_seat:
            if env.terminations[self.partner_seat] or env.truncations[self.partner_seat]:
                break
            env.step(self._partner_act(env.observe(self.partner_seat)))
            reward += float(env.rewards[self.seat])
        return reward

    def _observe(self) -> np.ndarray:
        return self._observe_seat(self.seat)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        self._no_options(options)
        super().reset(seed=seed)
        if seed is not None:
            streams = env_spec("einstein-puzzle").roles  # the partner is seeded as the runner seeds its role
            self.partner.reset(seed=policy_seed(seed, streams[self.partner_seat]))
            self._env.reset(seed=seed)
            self._seeded = True
        else:
            if not self._seeded:
                self.partner.reset(seed=None)
                self._seeded = True
            self._env.reset()
        self._advance()  # (the partner moves first when this view plays the top seat)
        return self._observe(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        env = self._env
        if not env.agents or env.terminations[self.seat] or env.truncations[self.seat]:
            raise RuntimeError("the episode is over: call reset()" if self._seeded else "step() before reset()")
        env.step(action)  # (the environment checks it: a ValueError names the space)
        reward = float(env.rewards[self.seat])
        reward += self._advance()
        observation = self._observe()
        terminated, truncated = bool(env.terminations[self.seat]), bool(env.truncations[self.seat])
        info = dict(env.infos[self.seat]) if terminated or truncated else {}
        return observation, reward, terminated, truncated, info


class EinsteinPuzzleSelfPlayEnv(_View):
    """Both seats of the Einstein puzzle played by one policy: self-play with a shared policy, as one
    Gymnasium environment.

    Each step is one turn of whichever seat is to act: the observation is that seat's (its numeric
    observation says which seat it is, and each seat sees only what it knows), the action that seat's, the
    reward the team reward of that turn. The game is fully cooperative, so one policy maximising the team
    return in both seats is the team's policy, each seat acting on its own observation (decentralised
    execution, shared parameters). ``action_masks()``, ``info`` at the end, seeds and ``render_mode`` are as
    in :class:`EinsteinPuzzleEnv`; there is no partner to seed.

    ``eq-env train --env einstein-puzzle --partner self`` trains on it (:mod:`eq_env.baselines.einstein_puzzle.rl`).
    """

    def __init__(
        self,
        *,
        config: EinsteinPuzzleConfig | None = None,
        preset: str | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self._setup(config, preset, render_mode, overrides)
        self._started = False

    @property
    def seat(self) -> str:
        """The seat to act now (whose observation the last step returned)."""
        return str(self._env.agent_selection)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        self._no_options(options)
        super().reset(seed=seed)
        self._env.reset(seed=seed)
        self._started = True
        return self._observe_seat(self.seat), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        env = self._env
        if not self._started:
            raise RuntimeError("step() before reset()")
        seat = env.agent_selection
        if env.terminations[seat] or env.truncations[seat]:
            raise RuntimeError("the episode is over: call reset()")
        env.step(action)  # (the environment checks it: a ValueError names the space)
        reward = float(env.rewards[seat])
        terminated, truncated = bool(env.terminations[seat]), bool(env.truncations[seat])
        info = dict(env.infos[seat]) if terminated or truncated else {}
        # (at the end the observation is the seat that just acted: the one whose episode ends)
        observation = self._observe_seat(seat if terminated or truncated else self.seat)
        return observation, reward, terminated, truncated, info
