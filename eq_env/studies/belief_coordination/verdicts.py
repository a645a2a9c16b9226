"""Verdicts on ECON's claims over seeds: paired t-tests, Holm's correction over one run's claims, undefined seeds.

``eq-env reproduce --env belief-coordination`` (:mod:`eq_env.studies.belief_coordination.reproduce`) measures each
claim as a per-seed paired difference (ECON − a baseline on the same questions, draws and seed). Here:

* :func:`estimate` — the mean over seeds, its 95% Student-t half-width and the two-sided p-value of the
  paired t-test of "no difference" (``P(|T| > |t|)`` with ``seeds − 1`` degrees of freedom, as ``t²`` is
  F(1, seeds − 1): :func:`eq_env.core.stats.f_survival`). Seeds whose value is undefined (NaN: every
  question of a method failed, say) are left out *and listed* (``dropped``), never dropped silently.
* :func:`holm` — Holm–Bonferroni adjusted p-values over the claims one run tests. A run tests up to seven
  (+10.9% over single agents, +11.2% over multi-LLM methods, 21.4% fewer tokens, +18.1% with nine
  executors, F1, F3, ECON vs the tuned fixed point): at 95% each, a run of seven true null claims would
  call at least one a difference about 30% of the time. Holm keeps that family-wise error at 5% (for any
  dependence between the tests), and rejects everything Bonferroni rejects, often more.
* :func:`verdict` — what the summary says of a claim: a direction only where Holm rejects.

The ± shown beside each claim stays the unadjusted 95% interval of its own mean (what one claim's
measurement says); the verdict is the corrected test, so a claim whose interval just excludes 0 may still
read "no difference we can detect after Holm's correction".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eq_env.core.experiments import t_quantile_975
from eq_env.core.stats import f_survival

__all__ = ["ALPHA", "Estimate", "estimate", "holm", "left_out", "verdict"]

ALPHA = 0.05  # the family-wise error of one run's verdicts


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds (see :func:`estimate`).

    Attributes:
        mean: over the seeds with a defined value (NaN when none has one).
        half: half-width of its 95% t-interval (NaN with fewer than two seeds).
        p: two-sided p-value of the paired t-test of a zero mean (NaN with fewer than two seeds; 1 when
            every value is 0, 0 when all are the same non-zero value).
        seeds: the seeds used; dropped: the seeds left out, their value undefined.
    """

    mean: float
    half: float
    p: float
    seeds: tuple[int, ...]
    dropped: tuple[int, ...]


def estimate(values: Mapping[int, float]) -> Estimate:
    """The :class:`Estimate` of ``values`` (seed → value; NaN: undefined, left out and listed)."""
    seeds = tuple(sorted(s for s, v in values.items() if not math.isnan(v)))
    dropped = tuple(sorted(s for s, v in values.items() if math.isnan(v)))
    xs = [float(values[s]) for s in seeds]
    n = len(xs)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, seeds, dropped)
    mean = math.fsum(xs) / n
    if n == 1:
        return Estimate(mean, math.nan, math.nan, seeds, dropped)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    if sd == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        t = mean / (sd / math.sqrt(n))
        p = f_survival(t * t, 1, n - 1)
    return Estimate(mean, half, p, seeds, dropped)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given: with the m defined p-values sorted,
    ``p_(1) ≤ … ≤ p_(m)``, the i-th is ``max_{j ≤ i} min(1, (m − j + 1)·p_(j))``. A claim is rejected at
    family-wise error α where its adjusted p-value is ≤ α. NaN (no test: one seed) stays NaN and does not
    count in m."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    m = len(tested)
    adjusted = [math.nan] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def left_out(est: Estimate) -> str:
    """``" (seed 3 left out: undefined)"``, or nothing when every seed has a value."""
    if not est.dropped:
        return ""
    seeds = ", ".join(map(str, est.dropped))
    return f" (seed{'s' if len(est.dropped) > 1 else ''} {seeds} left out: undefined)"


def verdict(est: Estimate, adjusted: float, words: tuple[str, str] = ("higher", "lower")) -> str:
    """What the summary says of one claim: its direction where Holm's adjusted p-value is ≤ :data:`ALPHA`."""
    if math.isnan(est.mean):
        return "no seed has a value: no verdict"
    if math.isnan(adjusted):
        return "one seed: no interval, no test"
    said = f"Holm-adjusted p = {adjusted:.3g}"
    if adjusted <= ALPHA:
        return f"{words[0] if est.mean > 0 else words[1]} ({said})"
    return f"no difference we can detect ({said})"
