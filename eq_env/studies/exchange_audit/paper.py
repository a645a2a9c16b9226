"""The numbers the paper reports (GPT-4.1 trader, 5 seeds x 200 episodes), for comparison.

Source: Bańka & Chudziak, "Toward Explanatory Equilibrium" (2026), Table 1,
Table 2 and Figure 4, as transcribed in the project's spec. Values are
(mean, std) over seeds; ``None`` where the paper gives no number.
"""

from __future__ import annotations

__all__ = [
    "FIGURE4_ACTION_ONLY_APPROVAL",
    "FIGURE4_ARTIFACTS_APPROVAL_MIN",
    "FIGURE4_BAD_APPROVAL_MAX",
    "TABLE1",
    "TABLE1_QS",
    "TABLE2",
    "TABLE2_SCENARIOS",
]

TABLE1_QS = (0.0, 0.1, 0.3, 0.5, 0.7, 1.0)

# q -> ambiguous welfare: with artifacts, action only, net gain
TABLE1: dict[float, dict[str, tuple[float, float] | float]] = {
    0.0: {"artifacts": (1.64, 0.01), "action_only": (0.24, 0.06), "net_gain": 1.40},
    0.1: {"artifacts": (1.64, 0.01), "action_only": (0.18, 0.05), "net_gain": 1.46},
    0.3: {"artifacts": (1.61, 0.02), "action_only": (0.13, 0.04), "net_gain": 1.48},
    0.5: {"artifacts": (1.61, 0.01), "action_only": (0.10, 0.04), "net_gain": 1.51},
    0.7: {"artifacts": (1.58, 0.01), "action_only": (0.04, 0.04), "net_gain": 1.54},
    1.0: {"artifacts": (1.54, 0.03), "action_only": (-0.07, 0.03), "net_gain": 1.61},
}

# Figure 4 gives ambiguous approval only in words: with artifacts above 0.96 at
# every q; action only about 9% at q = 0 falling to 0% at q = 1; bad approval
# below 1% everywhere.
FIGURE4_ARTIFACTS_APPROVAL_MIN = 0.96
FIGURE4_ACTION_ONLY_APPROVAL: dict[float, float] = {0.0: 0.09, 1.0: 0.0}
FIGURE4_BAD_APPROVAL_MAX = 0.01

# Table 2, at q = 0.3: scenario -> parameters and (audit fail, bad approval, ambiguous approval)
TABLE2_SCENARIOS: dict[str, dict[str, float | int]] = {
    "baseline": {"V": 1.0, "L": 2.0, "B": 4},
    "temptation": {"V": 2.0, "L": 1.0, "B": 4},
    "punishment": {"V": 1.0, "L": 4.0, "B": 4},
    "spot_check": {"V": 1.0, "L": 2.0, "B": 1},
    "partial_audit": {"V": 1.0, "L": 2.0, "B": 2},
    "full_audit": {"V": 1.0, "L": 2.0, "B": 4},
}
TABLE2: dict[str, dict[str, tuple[float, float]]] = {
    "baseline": {"audit_fail": (0.20, 0.02), "bad_approval": (0.002, 0.00), "ambiguous_approval": (0.97, 0.02)},
    "temptation": {"audit_fail": (0.20, 0.02), "bad_approval": (0.004, 0.00), "ambiguous_approval": (0.99, 0.01)},
    "punishment": {"audit_fail": (0.17, 0.01), "bad_approval": (0.000, 0.00), "ambiguous_approval": (0.96, 0.03)},
    "spot_check": {"audit_fail": (0.00, 0.00), "bad_approval": (0.006, 0.01), "ambiguous_approval": (0.99, 0.02)},
    "partial_audit": {"audit_fail": (0.22, 0.06), "bad_approval": (0.012, 0.01), "ambiguous_approval": (0.98, 0.01)},
    "full_audit": {"audit_fail": (0.26, 0.04), "bad_approval": (0.010, 0.01), "ambiguous_approval": (0.98, 0.01)},
}
