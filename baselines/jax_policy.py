"""Policies trained by the jitted PPO (:mod:`eq_env.baselines.jax_ppo`), played in numpy: no JAX needed to play.

A training directory holds ``params.npz`` (each network's layers) and ``policy.json`` (the game, its
configuration, which agent learned with which network, the hyperparameters, the seed, the per-update
returns, the times). A role of it is a policy like any other: ``JaxPPOPolicy(DIR, role)``, or the spec
``jax:path=DIR`` for a role the training learned (registered with each game's baselines). It reads the game's
observations through the game's numeric adapter (:class:`~eq_env.core.numeric.NumericSpaces`), exactly what the
JAX engine gave the network in training (the engines equal the numeric mode, ``tests/jax_engines``), so it plays
in the PettingZoo environment, the runner, ``eq-env play`` and beside any other policy. ``deterministic``
(default) plays the most likely legal action, else one drawn from the masked distribution with the policy's
own generator, seeded by ``reset``.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FORMAT", "MASKED", "JaxPPOPolicy", "jax_policy_for", "load", "mlp_logits", "save"]

FORMAT = 1  # of policy.json; a training of another format is refused, with "train again"
MASKED = -1e9  # the logit of an illegal action


def _mlp(layers: Any, x: Any, xp: Any) -> Any:
    for i, layer in enumerate(layers):
        x = x @ layer["w"] + layer["b"]
        if i < len(layers) - 1:
            x = xp.tanh(x)
    return x


def mlp_logits(params: Mapping[str, Any], obs: Any, mask: Any, xp: Any = np) -> Any:
    """The actor's masked logits (``xp``: numpy to play, jax.numpy in training)."""
    return xp.where(mask, _mlp(params["actor"], obs, xp), MASKED)


def save(path: str | Path, params: Mapping[str, Any], meta: Mapping[str, Any]) -> Path:
    """Write ``params.npz`` (per network, its actor's and critic's layers) and ``policy.json`` (``meta``)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    arrays = {
        f"{net}/{part}/{i}/{name}": np.asarray(value)
        for net, parts in params.items()
        for part, layers in parts.items()
        for i, layer in enumerate(layers)
        for name, value in layer.items()
    }
    tmp = path / "params.npz.tmp"
    with tmp.open("wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]  # (numpy's stub takes the keyword allow_pickle for **)
    tmp.replace(path / "params.npz")  # (whole or absent: a kill mid-write leaves the old file)
    text = json.dumps({"format": FORMAT, "library": "eq_env.jax_ppo", **meta}, indent=1, allow_nan=False) + "\n"
    (path / "policy.json.tmp").write_text(text)
    (path / "policy.json.tmp").replace(path / "policy.json")
    return path


def load(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The networks (numpy arrays) and the metadata :func:`save` wrote, or a one-line ValueError."""
    path = Path(path)
    meta_path = path / "policy.json"
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else None
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{meta_path} is not valid JSON ({err}): train again into {path}") from None
    if not isinstance(meta, dict) or meta.get("library") != "eq_env.jax_ppo":
        raise ValueError(f"{path} is not a JAX PPO training: no policy.json of one (eq_env.baselines.jax_ppo)")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{meta_path} has format {meta.get('format')!r}, this version reads {FORMAT}: train again")
    for key, kind in (("env", str), ("config", dict), ("agents", dict)):
        if not isinstance(meta.get(key), kind):
            raise ValueError(f"{meta_path}: {key!r} must be a {kind.__name__}, got {meta.get(key)!r}: train again")
    params: dict[str, Any] = {}
    try:
        with np.load(path / "params.npz") as data:
            for key in data.files:
                net, part, i, name = key.split("/")
                layers = params.setdefault(net, {}).setdefault(part, [])
                while len(layers) <= int(i):
                    layers.append({})
                layers[int(i)][name] = np.asarray(data[key], np.float32)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # (missing, truncated or foreign)
        raise ValueError(
            f"{path}/params.npz is not a saved JAX PPO network ({type(err).__name__}): train again"
        ) from None
    for net in set(meta["agents"].values()):
        layers = params.get(net, {}).get("actor")
        if not layers or any(set(layer) != {"w", "b"} for layer in layers):
            raise ValueError(f"{path}/params.npz has no actor of network {net!r}: train again")
        if not all(np.isfinite(v).all() for layer in layers for v in layer.values()):
            raise ValueError(f"{path}/params.npz: network {net!r} has weights that are not finite: train again")
    return params, meta


class JaxPPOPolicy:
    """One role of a game played by the network a jitted PPO training gave its agent.

    Args:
        path: the directory the training wrote (``params.npz`` and ``policy.json``).
        role: the role to play (an agent of it must have learned in the training).
        deterministic: the most likely legal action (default), else one drawn from the masked distribution.
    """

    def __init__(self, path: str | Path, role: str, deterministic: bool = True) -> None:
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {deterministic!r}")
        from eq_env.core.numeric import NumericSpaces, numeric_adapter, trained_game

        self.path, self.role, self.deterministic = Path(path), role, deterministic
        self.rng = np.random.default_rng()
        params, self.meta = load(self.path)
        spec, self.config = trained_game(self.meta, self.path / "policy.json")
        roles = spec.agent_roles(self.config)
        learned = [a for a in self.meta["agents"] if roles.get(a) == role]
        if not learned:
            raise ValueError(
                f"{self.path}: no agent of role {role!r} learned in this training (it trained "
                f"{', '.join(sorted(self.meta['agents']))}; the game's roles: {', '.join(spec.roles)})"
            )
        self.agent = learned[0]
        self.params = params[self.meta["agents"][self.agent]]
        self.numbers = NumericSpaces(numeric_adapter(spec.id), self.config, roles)
        features: Any = self.numbers.observation_spaces[self.agent]["observation"]
        self._width = int(features.shape[0])
        if self.params["actor"][0]["w"].shape[0] != self._width:
            raise ValueError(
                f"{self.path}/params.npz: the {self.agent} network reads {self.params['actor'][0]['w'].shape[0]} "
                f"features, the game's {role} observes {self._width}: train again"
            )

    def __repr__(self) -> str:
        how = "greedy" if self.deterministic else "sampled"  # (what a score of it must say)
        return f"JaxPPOPolicy({str(self.path)!r}, role={self.role!r}, {how})"

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def choose(self, features: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Actions (``Discrete`` indices) for rows of features and masks."""
        logits = np.asarray(mlp_logits(self.params, np.asarray(features, np.float32), np.asarray(mask, bool)))
        if self.deterministic:
            return np.argmax(logits, axis=-1)
        z = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
        p = np.exp(z)
        cdf = np.cumsum(p / p.sum(axis=-1, keepdims=True), axis=-1)
        u = self.rng.random((*cdf.shape[:-1], 1))
        legal_last = mask.shape[-1] - 1 - np.argmax(np.asarray(mask, bool)[..., ::-1], axis=-1)
        return np.minimum((cdf <= u).sum(axis=-1), legal_last)

    def act(self, observation: Mapping[str, Any]) -> Any:
        seen = self.numbers.observe(self.agent, observation)
        if seen["observation"].shape != (self._width,):
            raise ValueError(
                f"jax:path={self.path} was trained on another configuration of the game ({self.role} observes "
                f"{seen['observation'].shape}, trained on ({self._width},); its policy.json has the configuration)"
            )
        index = int(self.choose(seen["observation"][None, :], seen["action_mask"][None, :].astype(bool))[0])
        return self.numbers.env_action(self.agent, index, observation)


def jax_policy_for(role: str, cls: type[JaxPPOPolicy] = JaxPPOPolicy) -> Any:
    """The policy factory ``jax:path=DIR`` of ``role`` (registered by each game's baselines)."""

    def factory(path: str, deterministic: bool = True) -> JaxPPOPolicy:
        return cls(path, role, deterministic)

    factory.__doc__ = f"The {role} of a jitted JAX PPO training (eq_env.baselines.jax_ppo), loaded from its directory."
    return factory
