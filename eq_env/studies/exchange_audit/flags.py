"""Flag types the exchange–audit game's commands share."""

from __future__ import annotations

from eq_env.core.cli import list_of, number_type

__all__ = ["audit_intensities", "audit_intensity", "rate"]

audit_intensity = number_type(float, "an audit intensity in [0, 1]", lambda v: 0.0 <= v <= 1.0)
audit_intensities = list_of(audit_intensity, "audit intensities in [0, 1]", distinct=True)
rate = number_type(float, "a rate in [0, 1]", lambda v: 0.0 <= v <= 1.0)
