"""Scripted baselines of the Einstein puzzle, registered as its named policies for both seats.

=================  ====================================================================
name               policy
=================  ====================================================================
``random``         :class:`~eq_env.baselines.einstein_puzzle.scripted.RandomPlayer`: a random legal action
``mover``          :class:`~eq_env.baselines.einstein_puzzle.scripted.Mover`: no communication, guesses
``planner``        :class:`~eq_env.baselines.einstein_puzzle.scripted.Planner`: the decentralised planner
                   (``planner:guess=true`` guesses in every mode when nothing else is left)
``oracle``         :class:`~eq_env.baselines.einstein_puzzle.scripted.Oracle`: the exact shortest joint plan
                   (privileged: it reads the hidden goal)
``verified``       :class:`~eq_env.baselines.einstein_puzzle.scripted.Verified`: any of these screened by a
                   verifier (``verified:base=random,verifier=reasoning,k=4``)
``sb3``            :class:`~eq_env.baselines.sb3.SB3ViewPolicy`: a seat trained with ``eq-env train --backend
                   sb3`` (``sb3:path=DIR``; :mod:`~eq_env.baselines.einstein_puzzle.rl`)
``rllib``          a seat of an RLlib checkpoint (``rllib:path=DIR``)
``torchrl``        :class:`~eq_env.baselines.torchrl.TorchRLPolicy`: a seat of a TorchRL MAPPO training
                   (``torchrl:path=DIR``; the ``compat`` extra)
``jax``            :class:`~eq_env.baselines.jax_policy.JaxPPOPolicy`: a seat of a jitted self-play PPO training
                   (``jax:path=DIR``; :mod:`~eq_env.baselines.einstein_puzzle.jax_rl`, the ``jax`` extra to train;
                   plays in numpy)
=================  ====================================================================

Each name serves both roles, ``player_0`` (bottom, moves first) and ``player_1`` (top).
"""

from eq_env.baselines.einstein_puzzle.noisy import Noisy
from eq_env.baselines.einstein_puzzle.rl import SB3_SUMMARY, SB3Seat
from eq_env.baselines.einstein_puzzle.scripted import Mover, Oracle, Planner, RandomPlayer, Verified
from eq_env.baselines.jax_policy import jax_policy_for
from eq_env.baselines.rllib import rllib_policy_for
from eq_env.baselines.torchrl import torchrl_policy_for
from eq_env.core.policy import register_policy
from eq_env.einstein_puzzle.spec import ID

__all__ = ["Mover", "Oracle", "Planner", "RandomPlayer", "Verified"]

for _name, _cls in (
    ("random", RandomPlayer),
    ("mover", Mover),
    ("planner", Planner),
    ("oracle", Oracle),
    ("verified", Verified),
    ("noisy", Noisy),
):
    for _role in ("player_0", "player_1"):
        # One subclass per seat: a policy object knows the role it plays. Each is this module's attribute
        # Planner_player_0... (its __qualname__), so that pickle finds it and a policy, or a view or runner holding
        # one, pickles (gymnasium's AsyncVectorEnv with "spawn"); its __name__ stays the policy's name (Planner).
        _qualname = f"{_cls.__name__}_{_role}"
        _seat = type(
            _cls.__name__,
            (_cls,),
            {"role": _role, "__doc__": _cls.__doc__, "__module__": __name__, "__qualname__": _qualname},
        )
        globals()[_qualname] = _seat
        register_policy(_name, _role, _seat, env=ID)

for _role in ("player_0", "player_1"):  # a seat of a checkpoint of eq-env train --env einstein-puzzle
    register_policy("rllib", _role, rllib_policy_for(_role), env=ID)
    register_policy("torchrl", _role, torchrl_policy_for(_role), env=ID)
    register_policy("jax", _role, jax_policy_for(_role), env=ID)  # eq_env.baselines.einstein_puzzle.jax_rl.train
    register_policy("sb3", _role, SB3Seat(_role), SB3_SUMMARY, env=ID)  # eq-env train --backend sb3
