"""Intervals and tests over seeds, for any game's experiments (scipy is not a dependency).

* :func:`mean_interval` — a mean over seeds with its 95% Student-t interval;
* :func:`blocked_anova` — do several treatments (prompt variants, say) differ by more than seed noise?
  A two-way analysis of variance without replication, seeds as blocks: every treatment is played on the
  same seeds (common random numbers), so the seed-to-seed variation shared by all treatments is taken
  out before the treatments are compared, and the test is the F-test of the treatment effect;
* :func:`f_survival` — P(F > f) for Fisher's F distribution, from the regularised incomplete beta
  function (a continued fraction, as in Numerical Recipes §6.4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eq_env.core.experiments import t_quantile_975

__all__ = ["BlockedAnova", "blocked_anova", "f_survival", "mean_interval", "regularized_beta"]


def mean_interval(values: Sequence[float]) -> tuple[float, float, float, int]:
    """(mean, low, high, n) of the defined values (NaN left out): the 95% t-interval of the mean.

    One value has no interval (NaN bounds); none has no mean."""
    xs = [float(v) for v in values if not math.isnan(v)]
    n = len(xs)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = math.fsum(xs) / n
    if n == 1:
        return mean, math.nan, math.nan, 1
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile_975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half, n


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function, for a, b > 0 and x in [0, 1]."""
    if not (a > 0 and b > 0 and 0.0 <= x <= 1.0):
        raise ValueError(f"regularized_beta needs a, b > 0 and x in [0, 1], got a={a}, b={b}, x={x}")
    if x in (0.0, 1.0):
        return x
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):  # where the fraction converges fast; else by symmetry
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def f_survival(f: float, d1: float, d2: float) -> float:
    """P(F > f) for F with (d1, d2) degrees of freedom; 1 for f ≤ 0, 0 for f = inf, NaN for NaN."""
    if math.isnan(f):
        return math.nan
    if f <= 0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return regularized_beta(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


@dataclass(frozen=True)
class BlockedAnova:
    """Treatments compared over common blocks (seeds); see :func:`blocked_anova`.

    Attributes:
        treatments, blocks: how many entered the test (blocks where every treatment is defined).
        between_sd: the standard deviation of the treatment means (how far apart the treatments are).
        within_sd: the residual standard deviation, √MS_residual: a treatment's noise from block to block
            once what all treatments share on a block is taken out.
        f, p: the F statistic of the treatment effect, MS_treatment / MS_residual with (treatments − 1,
            (treatments − 1)(blocks − 1)) degrees of freedom, and its p-value. F is inf (p 0) when the
            treatments differ and nothing else varies, NaN (p NaN) when nothing varies at all or there
            are fewer than two treatments or blocks.
    """

    treatments: int
    blocks: int
    between_sd: float
    within_sd: float
    f: float
    df_treatments: int
    df_residual: int
    p: float


def blocked_anova(values: Mapping[str, Mapping[int, float]]) -> BlockedAnova:
    """The two-way analysis of variance without replication of ``values[treatment][block]``.

    Only blocks where every treatment has a defined (non-NaN) value are used. Sums of squares:
    treatments n·Σ(mean_t − mean)², blocks k·Σ(mean_b − mean)², residual the rest of the total.
    """
    names = list(values)
    common = sorted(set.intersection(*(set(values[t]) for t in names))) if names else []
    blocks = [b for b in common if not any(math.isnan(values[t][b]) for t in names)]
    k, n = len(names), len(blocks)
    nan = BlockedAnova(k, n, math.nan, math.nan, math.nan, max(k - 1, 0), max((k - 1) * (n - 1), 0), math.nan)
    if k < 1 or n < 1:
        return nan
    grid = [[float(values[t][b]) for b in blocks] for t in names]
    grand = math.fsum(x for row in grid for x in row) / (k * n)
    t_means = [math.fsum(row) / n for row in grid]
    b_means = [math.fsum(grid[i][j] for i in range(k)) / k for j in range(n)]
    between_sd = math.sqrt(math.fsum((m - grand) ** 2 for m in t_means) / (k - 1)) if k > 1 else math.nan
    if k < 2 or n < 2:
        return BlockedAnova(k, n, between_sd, math.nan, math.nan, k - 1, (k - 1) * (n - 1), math.nan)
    ss_t = n * math.fsum((m - grand) ** 2 for m in t_means)
    residuals = [grid[i][j] - t_means[i] - b_means[j] + grand for i in range(k) for j in range(n)]
    ss_r = math.fsum(r * r for r in residuals)
    df_t, df_r = k - 1, (k - 1) * (n - 1)
    scale = max(1.0, *(abs(x) for row in grid for x in row))
    ss_t = 0.0 if ss_t <= (1e-12 * scale) ** 2 * k * n else ss_t  # float dust is no effect
    ss_r = 0.0 if ss_r <= (1e-12 * scale) ** 2 * k * n else ss_r
    if ss_r == 0.0:
        f = math.inf if ss_t > 0 else math.nan
    else:
        f = (ss_t / df_t) / (ss_r / df_r)
    return BlockedAnova(k, n, between_sd, math.sqrt(ss_r / df_r), f, df_t, df_r, f_survival(f, df_t, df_r))
