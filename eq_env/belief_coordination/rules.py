"""The pure rules of belief coordination: equal answers, the majority commit, and the shared reward.

Everything here works on arrays of answers, one row per question (``values``:
float, NaN where an executor gave no number), so that the environment (one
question) and the batch engine (thousands) compute the same thing.

The reward (the same for every agent) is ``w_ts·TS + w_al·AL + w_cc·CC``
(0.5, 0.3, 0.2 by default), with

* **TS** (task success): 1 if the committed answer equals the correct one, else 0;
* **AL** (alignment): the share of the N executors whose final answer equals the
  committed one (0 when the commitment is no number);
* **CC** (collaborative contribution): the share of the N executors whose final
  answer is correct.

Answers are equal when both are numbers within 1e-6 (plus a relative 1e-12 for
huge ones): GSM8K answers may be written ``1,234.0``, and a wrong digit of a
large answer is wrong. The paper's AL and CC also mix in text-similarity
and answer-diversity scores computed with an embedding model; ours keep only
the parts defined on the committed numbers, so that the reward is exact and
needs no model (the README lists this departure).
"""

from __future__ import annotations

import numpy as np

__all__ = ["EXECUTOR_FEATURES", "WEIGHTS", "equal", "executor_features", "majority", "reward_terms", "support"]

WEIGHTS = (0.5, 0.3, 0.2)  # TS, AL, CC: the paper's
ATOL = 1e-6  # 1234.0000001 is 1234 ...
RTOL = 1e-12  # ... but 5,000,003 is not 5,000,000: answers are exact numbers, not measurements


def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: both are numbers and equal within a relative 1e-6 (NaN equals nothing)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.abs(a - b) <= ATOL + RTOL * np.abs(b)  # type: ignore[no-any-return]


def support(values: np.ndarray) -> np.ndarray:
    """For each executor, how many executors (itself included) gave the same number: shape (B, N), 0 for
    an executor with no number."""
    values = np.asarray(values, dtype=float)
    same = equal(values[..., :, None], values[..., None, :])
    return same.sum(axis=-1)  # type: ignore[no-any-return]


def majority(values: np.ndarray) -> np.ndarray:
    """The majority coordinator's commit: for each row, the executor whose number has the most support;
    among equals, the lowest-indexed executor (so ties go to the group of the first executor to give one of
    the tied numbers). With no number at all, executor 0 (a commitment to nothing)."""
    return np.argmax(support(values), axis=-1)  # type: ignore[no-any-return]


EXECUTOR_FEATURES = 5  # what an executor observes (the environment's manual lists them)


def executor_features(
    difficulty: np.ndarray, n: int, rounds: int, round_: int, values: np.ndarray | None
) -> np.ndarray:
    """The executors' observation vectors, shape (B, N, 5), as the environment's manual defines them:
    difficulty, round scaled to [0, 1], then about each executor's previous number (``values``, (B, N), NaN for
    none; None in the first round): the share of the others that gave it, whether it had the most support,
    whether it was a number at all."""
    difficulty = np.asarray(difficulty, dtype=float)
    features = np.zeros((len(difficulty), n, EXECUTOR_FEATURES), np.float32)
    features[..., 0] = difficulty[:, None]
    features[..., 1] = min(round_, rounds - 1) / max(rounds - 1, 1)
    if values is not None:
        valid = ~np.isnan(values)
        given = support(values)
        features[..., 2] = np.where(valid, (given - 1) / max(n - 1, 1), 0)
        features[..., 3] = np.where(valid, given == given.max(axis=-1, keepdims=True), 0)
        features[..., 4] = valid
    return features


def reward_terms(values: np.ndarray, committed: np.ndarray, gold: np.ndarray) -> dict[str, np.ndarray]:
    """TS, AL and CC (module docstring) per row: ``values`` (B, N), ``committed`` (B,) executor indices,
    ``gold`` (B,) correct answers."""
    values = np.asarray(values, dtype=float)
    rows = np.arange(values.shape[0])
    chosen = values[rows, np.asarray(committed)]
    gold = np.asarray(gold, dtype=float)
    ts = equal(chosen, gold).astype(float)
    al = equal(values, chosen[:, None]).mean(axis=-1)
    cc = equal(values, gold[:, None]).mean(axis=-1)
    return {"ts": ts, "al": al, "cc": cc}


def reward(terms: dict[str, np.ndarray], weights: tuple[float, float, float] = WEIGHTS) -> np.ndarray:
    """The shared reward from :func:`reward_terms`."""
    w_ts, w_al, w_cc = weights
    return w_ts * terms["ts"] + w_al * terms["al"] + w_cc * terms["cc"]  # type: ignore[no-any-return]
