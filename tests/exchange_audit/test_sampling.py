"""Statistical tests of the state sampler against the spec's distributions.

The spec is /work/shared/spec/exchange_audit.md, sections "Hidden state" and
"One episode". Every draw comes from a fixed seed, so these tests are
deterministic; their tolerances are derived from the sample size (5 standard
errors for proportions, means and correlations, and the Kolmogorov–Smirnov
statistic against the exact CDF with the asymptotic critical value
1.95/sqrt(n), alpha ≈ 0.001), so each of them would fail for a sampler that
draws from a visibly different distribution.
"""

from __future__ import annotations

import gc
import itertools
import math
from functools import cache

import numpy as np
import pytest

from eq_env.exchange_audit.config import ExchangeAuditConfig
from eq_env.exchange_audit.rules import (
    CHECKABLE_CLAIMS,
    Artifact,
    AuditOutcome,
    Claims,
    DrawStream,
    Intent,
    Proposal,
    ProposerAction,
    State,
    Submission,
    observe_state,
    public_rules,
    run_audit,
    sample_state,
)

N_EPISODES = 200_000  # states drawn for the distribution tests
N_OBSERVED = 80_000  # of which the first ones are also observed (observe_state is the slow part)
SEED = 20260409
KS_CRIT = 1.95  # asymptotic KS critical value times sqrt(n), alpha ≈ 0.001
Z_TOL = 5.0  # tolerance in standard errors


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------
_erf = np.vectorize(math.erf, otypes=[float])


def normal_cdf(x: np.ndarray | float) -> np.ndarray:
    return 0.5 * (1.0 + _erf(np.asarray(x, dtype=float) / math.sqrt(2.0)))


def ks_statistic(x: np.ndarray, cdf) -> float:
    """Two-sided KS statistic of the sample ``x`` against a continuous CDF."""
    f = np.sort(np.asarray(cdf(np.asarray(x, dtype=float)), dtype=float))
    n = len(f)
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def assert_ks(x: np.ndarray, cdf, what: str) -> None:
    n = len(x)
    assert n > 1000, f"{what}: too few samples ({n}) for a meaningful KS test"
    d = ks_statistic(x, cdf)
    crit = KS_CRIT / math.sqrt(n)
    assert d < crit, f"{what}: KS statistic {d:.5f} >= critical value {crit:.5f} (n={n})"


def assert_ks_uniform(x: np.ndarray, lo: float, hi: float, what: str) -> None:
    x = np.asarray(x, dtype=float)
    assert np.all(x >= lo) and np.all(x <= hi), f"{what}: values outside [{lo}, {hi}]"
    assert_ks(x, lambda v: (v - lo) / (hi - lo), f"{what} ~ U({lo}, {hi})")


def assert_proportion(k: int | float, n: int, p: float, what: str) -> None:
    """Observed k successes out of n match probability p within 5 SE."""
    se = math.sqrt(p * (1.0 - p) / n)
    phat = k / n
    assert abs(phat - p) <= Z_TOL * se, f"{what}: {phat:.5f} vs expected {p:.5f} (5 SE = {Z_TOL * se:.5f}, n={n})"


def assert_mean(x: np.ndarray, mu: float, sd: float, what: str) -> None:
    """Sample mean equals mu within 5 SE, SE from the known SD."""
    se = sd / math.sqrt(len(x))
    m = float(np.mean(x))
    assert abs(m - mu) <= Z_TOL * se, f"{what}: mean {m:.5f} vs {mu:.5f} (5 SE = {Z_TOL * se:.5f})"


def assert_sd(x: np.ndarray, sd: float, what: str) -> None:
    """Sample SD equals sd within 5 SE; SE ≈ sd·sqrt((kurtosis − 1)/(4n)), kurtosis estimated."""
    x = np.asarray(x, dtype=float)
    c = x - x.mean()
    m2 = float(np.mean(c**2))
    kurt = float(np.mean(c**4)) / m2**2
    se = sd * math.sqrt((kurt - 1.0) / (4.0 * len(x)))
    s = math.sqrt(m2)
    assert abs(s - sd) <= Z_TOL * se, f"{what}: SD {s:.5f} vs {sd:.5f} (5 SE = {Z_TOL * se:.5f})"


def assert_uncorrelated(a: np.ndarray, b: np.ndarray, what: str) -> None:
    """Pearson correlation zero within 5 SE (SE = 1/sqrt(n) under independence)."""
    r = float(np.corrcoef(a, b)[0, 1])
    tol = Z_TOL / math.sqrt(len(a))
    assert abs(r) <= tol, f"{what}: correlation {r:.5f} exceeds {tol:.5f}"


def clipped_normal_moments(mu: float, sd: float, lo: float, hi: float) -> tuple[float, float]:
    """Mean and SD of clip(N(mu, sd), lo, hi), by numerical integration."""
    a, b = (lo - mu) / sd, (hi - mu) / sd
    t = np.linspace(a, b, 400_001)
    pdf = np.exp(-0.5 * t**2) / math.sqrt(2.0 * math.pi)
    p_lo, p_hi = float(normal_cdf(a)), 1.0 - float(normal_cdf(b))
    x = mu + sd * t
    mean = np.trapezoid(x * pdf, t) + lo * p_lo + hi * p_hi
    second = np.trapezoid(x**2 * pdf, t) + lo**2 * p_lo + hi**2 * p_hi
    return float(mean), math.sqrt(float(second) - float(mean) ** 2)


def truncated_normal_cdf(mu: float, sd: float, lo: float, hi: float):
    """CDF of N(mu, sd) conditioned on lo < X < hi (the unclipped part of a clip)."""
    f_lo, f_hi = float(normal_cdf((lo - mu) / sd)), float(normal_cdf((hi - mu) / sd))
    return lambda x: (normal_cdf((x - mu) / sd) - f_lo) / (f_hi - f_lo)


def prob_risk_within_limit(risk_lo: float, risk_hi: float, config: ExchangeAuditConfig) -> float:
    """P(risk ≤ limit) for risk ~ U(risk_lo, risk_hi) and limit ~ U(low, high), by numerical integration."""
    m = 400_000
    limit = config.risk_limit_low + (config.risk_limit_high - config.risk_limit_low) * (np.arange(m) + 0.5) / m
    return float(np.mean(np.clip((limit - risk_lo) / (risk_hi - risk_lo), 0.0, 1.0)))


@cache
def episodes(seed: int, n: int, config: ExchangeAuditConfig, n_observed: int | None = None) -> dict[str, np.ndarray]:
    """n episodes of seed as arrays of their fields; the first n_observed (default all) also observed.

    The observation arrays are shorter than the state arrays when n_observed < n.
    """
    # Hundreds of thousands of small objects: the cyclic GC would double the run time.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _episodes(seed, n, config, n if n_observed is None else n_observed)
    finally:
        if was_enabled:
            gc.enable()


def _episodes(seed: int, n: int, config: ExchangeAuditConfig, n_observed: int) -> dict[str, np.ndarray]:
    u, z, _ = DrawStream(seed).batch(n)
    u_rows, z_rows = u.tolist(), z.tolist()
    states = [sample_state(ur, zr, config) for ur, zr in zip(u_rows, z_rows, strict=True)]
    out = {
        "ambiguous": np.array([s.ambiguous for s in states]),
        "hedge_intent": np.array([s.intent is Intent.HEDGE for s in states]),
        "risk_limit": np.array([s.risk_limit for s in states]),
        "delta_limit": np.array([s.delta_limit for s in states]),
        "risk": np.array([s.true_risk for s in states]),
        "delta": np.array([s.true_net_delta for s in states]),
        "hedge": np.array([s.hedge_size for s in states]),
        "risk_ok": np.array([s.risk_within_limit for s in states]),
        "delta_ok": np.array([s.net_delta_bounded for s in states]),
        "compliant": np.array([s.compliant for s in states]),
    }
    if n_observed > 0:
        # the rules worked out once, as the environment does (working them out per view was half the time)
        rules = public_rules(config)
        views = [observe_state(s, zr, config, rules)
                 for s, zr in zip(states[:n_observed], z_rows[:n_observed], strict=True)]  # fmt: skip
        assert views[0] == observe_state(states[0], z_rows[0], config)
        out["obs_intent_ok"] = np.array([v.intent is s.intent for v, s in zip(views, states[:n_observed], strict=True)])
        out["obs_risk"] = np.array([v.observed_risk for v in views])
        out["obs_delta"] = np.array([v.observed_net_delta for v in views])
        out["obs_hedge"] = np.array([v.observed_hedge_size for v in views])
        out["known_risk_ok"] = np.array([v.known_risk_within_limit for v in views], dtype=object)
        out["known_delta_ok"] = np.array([v.known_net_delta_bounded for v in views], dtype=object)
        out["public_limits_ok"] = np.array(
            [
                v.public.risk_limit == s.risk_limit and v.public.delta_limit == s.delta_limit
                for v, s in zip(views, states[:n_observed], strict=True)
            ]
        )
    return out


PAPER = ExchangeAuditConfig()


@pytest.fixture(scope="module")
def ep() -> dict[str, np.ndarray]:
    return episodes(SEED, N_EPISODES, PAPER, N_OBSERVED)


@pytest.fixture(scope="module")
def obs(ep) -> dict[str, np.ndarray]:
    """The observed episodes: every field cut to the first N_OBSERVED."""
    return {k: v[:N_OBSERVED] for k, v in ep.items()}


def _subset(ep: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, np.ndarray]:
    # State fields only: the observation fields cover fewer episodes (see the ``obs`` fixture).
    return {k: v[mask] for k, v in ep.items() if len(v) == len(mask)}


@pytest.fixture(scope="module")
def amb(ep) -> dict[str, np.ndarray]:
    return _subset(ep, ep["ambiguous"])


@pytest.fixture(scope="module")
def hedge(ep) -> dict[str, np.ndarray]:
    return _subset(ep, ~ep["ambiguous"] & ep["hedge_intent"])


@pytest.fixture(scope="module")
def spec(ep) -> dict[str, np.ndarray]:
    return _subset(ep, ~ep["ambiguous"] & ~ep["hedge_intent"])


# ---------------------------------------------------------------------------
# Ambiguity and limits
# ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("rate", [0.5, 0.4])
def test_ambiguous_fraction_matches_rate(rate):
    # Spec: "Each episode is ambiguous with probability ambiguous_rate".
    n = N_EPISODES if rate == 0.5 else 100_000
    config = PAPER.replace(ambiguous_rate=rate)
    # At 0.5 (the paper preset) these are the module's cached episodes.
    data = episodes(SEED, n, config, N_OBSERVED) if config == PAPER else episodes(SEED, n, config, 0)
    assert_proportion(int(data["ambiguous"].sum()), n, rate, f"ambiguous fraction at rate {rate}")


@pytest.mark.parametrize("rate", [0.0, 1.0])
def test_ambiguous_rate_extremes_are_exact(rate):
    # Spec: "ambiguous with probability ambiguous_rate" — 0 means never, 1 means always.
    data = episodes(SEED + 1, 20_000, PAPER.replace(ambiguous_rate=rate), 0)
    assert np.all(data["ambiguous"] == bool(rate))


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
def test_risk_limit_uniform(ep, amb, hedge, spec):
    # Spec: "delta_limit = 0.3 (fixed). risk_limit ~ U(0.8, 1.2)." — overall and in every kind of episode
    # (the limit is drawn independently of ambiguity and intent).
    assert np.all(ep["delta_limit"] == 0.3)
    assert_ks_uniform(ep["risk_limit"], 0.8, 1.2, "risk_limit")
    for name, part in (("ambiguous", amb), ("hedge", hedge), ("speculate", spec)):
        assert_ks_uniform(part["risk_limit"], 0.8, 1.2, f"risk_limit in {name} episodes")


def test_compliance_definition(ep):
    # Spec: "compliant ⇔ true_risk ≤ risk_limit AND |true_net_delta| ≤ delta_limit (both inclusive)".
    assert np.array_equal(ep["risk_ok"], ep["risk"] <= ep["risk_limit"])
    assert np.array_equal(ep["delta_ok"], np.abs(ep["delta"]) <= ep["delta_limit"])
    assert np.array_equal(ep["compliant"], ep["risk_ok"] & ep["delta_ok"])


# ---------------------------------------------------------------------------
# Ambiguous episodes
# ---------------------------------------------------------------------------
def test_ambiguous_always_compliant_hedge(amb):
    # Spec: "Ambiguous episodes (always compliant, near the boundary): intent HEDGE".
    assert len(amb["risk"]) > 90_000
    assert np.all(amb["compliant"])
    assert np.all(amb["hedge_intent"])


def test_ambiguous_risk_margin_uniform(amb):
    # Spec: "eps_r ~ U(0, 0.08·risk_limit); true_risk = risk_limit − eps_r".
    eps_r = amb["risk_limit"] - amb["risk"]
    assert np.all(eps_r >= 0.0)
    assert_ks_uniform(eps_r / (0.08 * amb["risk_limit"]), 0.0, 1.0, "eps_r/(0.08·risk_limit)")


def test_ambiguous_delta_margin_uniform(amb):
    # Spec: "eps_d ~ U(0, 0.08·0.3); true_net_delta = ±(0.3 − eps_d)".
    eps_d = 0.3 - np.abs(amb["delta"])
    assert np.all(np.abs(amb["delta"]) <= 0.3)
    assert_ks_uniform(np.clip(eps_d / (0.08 * 0.3), 0.0, 1.0), 0.0, 1.0, "eps_d/(0.08·0.3)")
    assert np.all(eps_d <= 0.08 * 0.3 + 1e-12)


def test_ambiguous_delta_sign_balanced(amb):
    # Spec: "a random sign; true_net_delta = ±(0.3 − eps_d)" — each sign half the time.
    n = len(amb["delta"])
    assert np.all(amb["delta"] != 0.0)
    assert_proportion(int((amb["delta"] > 0).sum()), n, 0.5, "positive sign among ambiguous deltas")


def test_ambiguous_hedge_size_uniform(amb):
    # Spec: "hedge ~ U(0.4, 1.0)" (ambiguous episodes).
    assert_ks_uniform(amb["hedge"], 0.4, 1.0, "ambiguous hedge size")


def test_ambiguous_components_independent(amb):
    # Spec: eps_r, eps_d, the sign and the hedge size are separate draws, independent of the risk limit.
    parts = {
        "risk_limit": amb["risk_limit"],
        "eps_r": (amb["risk_limit"] - amb["risk"]) / (0.08 * amb["risk_limit"]),
        "eps_d": (0.3 - np.abs(amb["delta"])) / (0.08 * 0.3),
        "sign": np.sign(amb["delta"]),
        "hedge": amb["hedge"],
    }
    for (na, a), (nb, b) in itertools.combinations(parts.items(), 2):
        assert_uncorrelated(a, b, f"ambiguous {na} vs {nb}")


# ---------------------------------------------------------------------------
# Normal episodes
# ---------------------------------------------------------------------------
def test_normal_intent_half_hedge(ep):
    # Spec: "Normal episodes: intent uniform over {HEDGE, SPECULATE}".
    normal = ~ep["ambiguous"]
    assert_proportion(int(ep["hedge_intent"][normal].sum()), int(normal.sum()), 0.5, "HEDGE among normal episodes")


def test_hedge_risk_and_hedge_size_uniform(hedge):
    # Spec: "HEDGE: true_risk ~ U(0.2, 1.0); ... hedge ~ U(0.5, 1.0)".
    assert_ks_uniform(hedge["risk"], 0.2, 1.0, "HEDGE true_risk")
    assert_ks_uniform(hedge["hedge"], 0.5, 1.0, "HEDGE hedge size")
    assert_uncorrelated(hedge["risk"], hedge["hedge"], "HEDGE risk vs hedge size")
    assert_uncorrelated(hedge["risk"], hedge["risk_limit"], "HEDGE risk vs risk limit")


def test_hedge_delta_clipped_normal(hedge):
    # Spec: "HEDGE: delta = clip(N(0, 0.1), −0.3, 0.3)".
    d = hedge["delta"]
    n = len(d)
    assert np.all(np.abs(d) <= 0.3)
    assert np.any(d == 0.3) and np.any(d == -0.3)  # clipped to exactly the bounds
    mean, sd = clipped_normal_moments(0.0, 0.1, -0.3, 0.3)
    assert abs(sd - 0.1) < 0.001  # clipping at 3 SD barely shrinks the SD
    assert_mean(d, mean, sd, "HEDGE delta")
    assert_sd(d, sd, "HEDGE delta")
    # Clipping puts mass 1 − Φ(3) on each bound, and the rest is N(0, 0.1) truncated to (−0.3, 0.3).
    p_edge = 1.0 - float(normal_cdf(3.0))
    assert_proportion(int((d == 0.3).sum()), n, p_edge, "HEDGE delta clipped at +0.3")
    assert_proportion(int((d == -0.3).sum()), n, p_edge, "HEDGE delta clipped at −0.3")
    inner = d[np.abs(d) < 0.3]
    assert_ks(inner, truncated_normal_cdf(0.0, 0.1, -0.3, 0.3), "HEDGE delta inside the clip")


def test_hedge_compliance_rate(hedge):
    # Spec: "(About 94% compliant; only risk breaches.)" — the exact rate is P(U(0.2,1.0) ≤ U(0.8,1.2))
    # since the clipped delta always satisfies |delta| ≤ 0.3 (inclusive).
    n = len(hedge["compliant"])
    p = prob_risk_within_limit(0.2, 1.0, PAPER)
    assert abs(p - 0.9375) < 1e-6  # closed form: 1/2 + 1/2 · 0.7/0.8
    assert abs(p - 0.94) < 0.005
    assert_proportion(int(hedge["compliant"].sum()), n, p, "HEDGE compliance")
    assert np.all(hedge["delta_ok"])  # only risk breaches
    assert np.all(~hedge["risk_ok"][~hedge["compliant"]])


def test_speculate_risk_and_hedge_size_uniform(spec):
    # Spec: "SPECULATE: true_risk ~ U(0.9, 2.0); ... hedge ~ U(0, 0.3)".
    assert_ks_uniform(spec["risk"], 0.9, 2.0, "SPECULATE true_risk")
    assert_ks_uniform(spec["hedge"], 0.0, 0.3, "SPECULATE hedge size")
    assert_uncorrelated(spec["risk"], spec["hedge"], "SPECULATE risk vs hedge size")


def test_speculate_delta_clipped_normal(spec):
    # Spec: "SPECULATE: delta = clip(N(0.8, 0.2), 0.3, 1.5)".
    d = spec["delta"]
    n = len(d)
    assert np.all((d >= 0.3) & (d <= 1.5))
    assert np.any(d == 0.3) and np.any(d == 1.5)  # clipped to exactly the bounds
    mean, sd = clipped_normal_moments(0.8, 0.2, 0.3, 1.5)
    assert_mean(d, mean, sd, "SPECULATE delta")
    assert_sd(d, sd, "SPECULATE delta")
    assert_proportion(int((d == 0.3).sum()), n, float(normal_cdf(-2.5)), "SPECULATE delta clipped at 0.3")
    assert_proportion(int((d == 1.5).sum()), n, 1.0 - float(normal_cdf(3.5)), "SPECULATE delta clipped at 1.5")
    inner = d[(d > 0.3) & (d < 1.5)]
    assert_ks(inner, truncated_normal_cdf(0.8, 0.2, 0.3, 1.5), "SPECULATE delta inside the clip")


def test_speculate_almost_never_compliant(spec):
    # Spec: "(Almost never compliant.)" — compliant only when risk ≤ limit and the delta is clipped
    # to exactly 0.3 (inclusive bound), so the exact rate is P(U(0.9,2.0) ≤ limit) · Φ(−2.5).
    n = len(spec["compliant"])
    p = prob_risk_within_limit(0.9, 2.0, PAPER) * float(normal_cdf(-2.5))
    rate = float(spec["compliant"].mean())
    assert rate < 0.01
    assert_proportion(int(spec["compliant"].sum()), n, p, "SPECULATE compliance")


# ---------------------------------------------------------------------------
# Observation
# ---------------------------------------------------------------------------
def test_observation_intent_and_limits_exact(obs):
    # Spec: "Proposer's observation: the true intent; ... the limits".
    assert np.all(obs["obs_intent_ok"])
    assert np.all(obs["public_limits_ok"])


def test_observation_delta_noise(obs):
    # Spec: "obs_net_delta = true_net_delta + N(0, 0.05)" (unclipped).
    noise = obs["obs_delta"] - obs["delta"]
    assert_mean(noise, 0.0, 0.05, "net-delta observation noise")
    assert_sd(noise, 0.05, "net-delta observation noise")
    assert_ks(noise, lambda x: normal_cdf(x / 0.05), "net-delta observation noise ~ N(0, 0.05)")
    assert np.any(obs["obs_delta"] < -0.3) and np.any(obs["obs_delta"] > 1.5)  # the observation is not clipped
    # The noise is a fresh draw, not the normal that made the HEDGE delta.
    hedge = ~obs["ambiguous"] & obs["hedge_intent"]
    assert_uncorrelated(noise[hedge], obs["delta"][hedge], "HEDGE delta vs its observation noise")


def test_observation_risk_noise(obs):
    # Spec: "obs_risk = max(0, true_risk + N(0, 0.05))".
    assert np.all(obs["obs_risk"] >= 0.0)
    far = obs["risk"] > 0.5  # 10 SD from the floor: no clipping possible in practice
    noise = (obs["obs_risk"] - obs["risk"])[far]
    assert_mean(noise, 0.0, 0.05, "risk observation noise")
    assert_sd(noise, 0.05, "risk observation noise")
    assert_ks(noise, lambda x: normal_cdf(x / 0.05), "risk observation noise ~ N(0, 0.05)")
    assert_uncorrelated(noise, (obs["obs_delta"] - obs["delta"])[far], "risk vs delta observation noise")


def test_observation_hedge_noise(obs):
    # Spec: "obs_hedge = max(0, hedge + N(0, 0.05))".
    assert np.all(obs["obs_hedge"] >= 0.0)
    far = obs["hedge"] > 0.4
    noise = (obs["obs_hedge"] - obs["hedge"])[far]
    assert_mean(noise, 0.0, 0.05, "hedge observation noise")
    assert_sd(noise, 0.05, "hedge observation noise")
    assert_uncorrelated(noise, (obs["obs_risk"] - obs["risk"])[far], "hedge vs risk observation noise")
    # SPECULATE hedges ~ U(0, 0.3) sit near the floor: P(obs = 0) = E[Φ(−h/0.05)], by numerical integration.
    h = np.linspace(0.0, 0.3, 300_001)
    p_zero = float(np.trapezoid(normal_cdf(-h / 0.05), h) / 0.3)
    assert abs(p_zero - 0.05 / 0.3 / math.sqrt(2.0 * math.pi)) < 1e-4
    spec_hedge = obs["obs_hedge"][~obs["ambiguous"] & ~obs["hedge_intent"]]
    assert_proportion(int((spec_hedge == 0.0).sum()), len(spec_hedge), p_zero, "SPECULATE observed hedge = 0")


def test_observation_floors_at_zero():
    # Spec: "obs_risk = max(0, …)", "obs_hedge = max(0, …)" — the risk floor is statistically invisible
    # (true_risk ≥ 0.2 is 4 noise SDs above it), so check it on a hand-made position.
    state = State(
        ambiguous=False,
        intent=Intent.SPECULATE,
        risk_limit=1.0,
        delta_limit=0.3,
        true_risk=0.01,
        true_net_delta=-0.02,
        hedge_size=0.01,
    )
    view = observe_state(state, (0.0, -3.0, -3.0, -3.0), PAPER)
    assert view.observed_risk == 0.0 and view.observed_hedge_size == 0.0
    assert view.observed_net_delta == -0.02 + 0.05 * -3.0  # the net delta is not floored
    assert view.intent is Intent.SPECULATE
    view = observe_state(state, (0.0, 1.0, 1.0, 1.0), PAPER)
    assert view.observed_risk == 0.01 + 0.05 and view.observed_hedge_size == 0.01 + 0.05


def test_noise_free_observation_is_truth():
    # Spec: the observation noise is N(0, noise_sd); with noise_sd = 0 the proposer sees the truth.
    data = episodes(SEED + 2, 20_000, PAPER.replace(noise_sd=0.0))
    assert np.array_equal(data["obs_risk"], data["risk"])
    assert np.array_equal(data["obs_delta"], data["delta"])
    assert np.array_equal(data["obs_hedge"], data["hedge"])
    assert np.all(data["obs_intent_ok"])


@pytest.mark.parametrize("reveal", [True, False])
def test_reveal_compliance(reveal):
    # Config reveal_compliance: the paper's scripted trader reads the true limit checks from the state.
    data = episodes(SEED + 3, 5_000, PAPER.replace(reveal_compliance=reveal))
    if reveal:
        assert [bool(x) for x in data["known_risk_ok"]] == data["risk_ok"].tolist()
        assert [bool(x) for x in data["known_delta_ok"]] == data["delta_ok"].tolist()
        assert all(isinstance(x, bool) for x in data["known_risk_ok"])
    else:
        assert all(x is None for x in data["known_risk_ok"])
        assert all(x is None for x in data["known_delta_ok"])


# ---------------------------------------------------------------------------
# Common random numbers
# ---------------------------------------------------------------------------
def test_states_identical_across_q_B_V_L():
    # Spec, known weaknesses: "states differ between q values (no common random numbers)" — ours must not.
    configs = [
        PAPER,
        PAPER.replace(q=0.0),
        PAPER.replace(q=1.0, B=1),
        PAPER.replace(B=2, V=2.0, L=1.0),
        PAPER.replace(B=None, L=4.0),
        PAPER.replace(q=0.7, B=0),
    ]
    n = 2_000
    runs = []
    for config in configs:
        stream = DrawStream(7)
        run = []
        for _ in range(n):
            draws = stream.next()
            state = sample_state(draws.state_u, draws.noise_z, config)
            view = observe_state(state, draws.noise_z, config)
            run.append((state, view.observed_risk, view.observed_net_delta, view.observed_hedge_size, draws.audit_u))
        runs.append(run)
    for run in runs[1:]:
        assert run == runs[0]
    # And a different seed gives different states.
    other = DrawStream(8).next()
    assert sample_state(other.state_u, other.noise_z, PAPER) != runs[0][0][0]


def test_batch_equals_successive_next():
    # Module contract: n calls to next() equal one batch(n), bitwise.
    n = 500
    u, z, a = DrawStream(11).batch(n)
    stream = DrawStream(11)
    rows = [stream.next() for _ in range(n)]
    assert np.array_equal(u, np.array([r.state_u for r in rows]))
    assert np.array_equal(z, np.array([r.noise_z for r in rows]))
    assert np.array_equal(a, np.array([r.audit_u for r in rows]))
    assert all(r.state_u == tuple(row) for r, row in zip(rows, u.tolist(), strict=True))
    # Mixing batch, next and skip keeps the same stream.
    mixed = DrawStream(11)
    first = mixed.batch(100)
    mixed.skip(150)
    middle = mixed.next()
    rest = mixed.batch(n - 251)
    assert np.array_equal(first[0], u[:100]) and np.array_equal(rest[0], u[251:])
    assert middle.state_u == tuple(u[250].tolist()) and middle.audit_u == tuple(a[250].tolist())
    assert middle.noise_z == tuple(z[250].tolist())
    assert mixed.episodes_drawn == n


# ---------------------------------------------------------------------------
# The audit draw
# ---------------------------------------------------------------------------
def _complete_submission() -> Submission:
    claims = Claims(intent=Intent.HEDGE, risk_within_limit=True, net_delta_bounded=True, confidence=0.9)
    return Submission(
        ProposerAction.REQUEST_APPROVAL, Proposal(Intent.HEDGE, 0.5, 0.0, 0.7), Artifact(claims=claims, words=5)
    )


@pytest.mark.slow  # (over 0.5 s: the fast default stays under a minute)
@pytest.mark.parametrize("budget", [1, 2, 3])
def test_audit_subset_uniform(budget):
    # Spec: "0 < B < 4 samples B of them uniformly without replacement".
    config = PAPER.replace(q=1.0, B=budget)
    _, _, audit_u = DrawStream(100 + budget).batch(20_000)
    draws = DrawStream(0).next()
    state = sample_state(draws.state_u, draws.noise_z, config)
    submission = _complete_submission()
    counts: dict[tuple[str, ...], int] = {}
    for row in audit_u.tolist():
        record = run_audit(submission, state, tuple(row), config)
        assert record.outcome in (AuditOutcome.PASS, AuditOutcome.FAIL)
        counts[record.checked] = counts.get(record.checked, 0) + 1
    subsets = set(itertools.combinations(CHECKABLE_CLAIMS, budget))
    assert set(counts) == subsets  # every subset, in pool order, and nothing else
    n = len(audit_u)
    p = 1.0 / math.comb(4, budget)
    for subset in subsets:
        assert_proportion(counts[subset], n, p, f"audit subset {subset} at B={budget}")


def test_audit_drawn_with_probability_q():
    # Spec: "Audit draw: audited with probability q (drawn for every episode, NO_TRADE included)".
    config = PAPER.replace(q=0.3)
    _, _, audit_u = DrawStream(99).batch(20_000)
    draws = DrawStream(0).next()
    state = sample_state(draws.state_u, draws.noise_z, config)
    no_trade = Submission(ProposerAction.NO_TRADE, Proposal(Intent.HEDGE, 0.0, 0.0, 0.0))
    audited = sum(run_audit(no_trade, state, tuple(row), config).audited for row in audit_u.tolist())
    assert_proportion(audited, len(audit_u), 0.3, "audited fraction at q = 0.3")
