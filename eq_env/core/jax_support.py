"""What the games' JAX engines share: JaxMARL's base class and spaces, imported quietly.

The engine (``eq_env.exchange_audit.jax_engine``) and the jitted PPO (``eq_env.baselines.jax_ppo``) need the
``jax`` extra: ``pip install 'eq-env[jax]'`` (JAX, JaxMARL, optax).
Nothing else in the package imports them.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["jaxmarl_base"]


def jaxmarl_base() -> tuple[Any, Any]:
    """JaxMARL's ``MultiAgentEnv`` class and its ``spaces`` module. (JaxMARL prints a line about optional
    environments when first imported: kept off the user's output.)"""
    try:
        with _quiet_stdout():
            from jaxmarl.environments import spaces
            from jaxmarl.environments.multi_agent_env import MultiAgentEnv
    except ImportError as err:
        raise ImportError(f"the JAX engines need JaxMARL: pip install 'eq-env[jax]' ({err})") from None
    return MultiAgentEnv, spaces


class _quiet_stdout:  # noqa: N801 - used as a context manager
    """Standard output closed at the file descriptor (JaxMARL's import prints past ``sys.stdout``'s redirection)."""

    def __enter__(self) -> None:
        sys.stdout.flush()
        self._saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)
