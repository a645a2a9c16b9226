"""Scripted and RL baselines for eq_env: one package per game, plus the generic RL plumbing.

* :mod:`eq_env.baselines.exchange_audit` — the exchange–audit game's scripted proposers and validators and its
  SB3 training (``eq-env train``, ``eq-env selfplay``), registered as its policies (``eq-env policies``);
* :mod:`eq_env.baselines.sb3` — Stable-Baselines3 training for any game's single-agent view.

The exchange–audit classes are importable from here too (``from baselines import HonestProposer``), as
they were before the package held several games.
"""

from eq_env.baselines.exchange_audit import *  # noqa: F403
from eq_env.baselines.exchange_audit import __all__ as __all__
