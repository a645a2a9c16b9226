"""A scripted, honest participant of the exchange–audit game, for the local test server.

:func:`honest_script` plays the game sensibly: it reads the observation the
prompt embeds (between ``<observation>`` tags) and answers as the honest
scripted proposer, or as the paper's rule validator, would. It is the default
script of :class:`agents.fake_server.ScriptedLLMServer`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.exchange_audit.schema import claims_from_json
from agents.fake_server import Reply, reply_json
from eq_env.exchange_audit.game import (
    Artifact,
    AuditOutcome,
    AuditRecord,
    Intent,
    Proposal,
    ProposerAction,
    PublicInfo,
    Submission,
    ValidatorView,
    rule_decision,
)

__all__ = ["honest_script", "observation_in", "text_in", "view_from_observation"]


def observation_in(request: dict[str, Any]) -> dict[str, Any] | None:
    """The observation JSON a prompt embeds between ``<observation>`` tags (None if absent)."""
    for message in request.get("messages", []):
        content = message.get("content") or ""
        m = re.search(r"<observation>\s*(\{.*?\})\s*</observation>", content, re.S)
        if m:
            return json.loads(m.group(1))
    return None


def text_in(request: dict[str, Any]) -> str:
    """The proposer's text a validator prompt fences between ``<proposer_text>`` tags ("" if absent)."""
    for message in request.get("messages", []):
        m = re.search(r"<proposer_text>\n?(.*?)\n?</proposer_text>", message.get("content") or "", re.S)
        if m:
            return "" if m.group(1) == "(no text)" else m.group(1)
    return ""


def honest_script(request: dict[str, Any], n: int) -> Reply:
    """Answer as a sensible, honest participant, from the embedded observation."""
    obs = observation_in(request)
    if obs is None:
        return Reply(status=400, body={"error": {"message": "no <observation> in the prompt"}})
    if obs.get("role") == "validator":
        return reply_json({"decision": rule_decision(view_from_observation(obs, text_in(request))).name,
                           "reason": "follows the audit and the typed claims"})  # fmt: skip
    seen = obs["observed"]
    limits = obs["limits"]
    risk_ok = seen["risk"] <= limits["risk_limit"]
    delta_ok = abs(seen["net_delta"]) <= limits["delta_limit"]
    known = obs.get("known_compliance") or {}
    risk_ok = known.get("risk_within_limit", risk_ok)
    delta_ok = known.get("net_delta_bounded", delta_ok)
    ok = bool(risk_ok and delta_ok)
    return reply_json({
        "action": "REQUEST_APPROVAL" if ok else "NO_TRADE",
        "proposal": {"intent": obs["intent"], "risk": seen["risk"], "net_delta": seen["net_delta"],
                     "hedge_size": seen["hedge_size"]},
        "claims": {"intent": obs["intent"], "risk_within_limit": bool(risk_ok), "net_delta_bounded": bool(delta_ok),
                   "risk_metric": seen["risk"], "confidence": 0.9},
        "text": "Position reported as observed; both limit checks stated plainly for the auditor to verify.",
    })  # fmt: skip


def view_from_observation(obs: dict[str, Any], text: str = "") -> ValidatorView:
    """The :class:`ValidatorView` a validator prompt's embedded observation describes (the text is
    fenced apart in the prompt, not in the observation: pass it from :func:`text_in`)."""
    sub, audit = obs["submission"], obs["audit"]
    p = sub["proposal"]
    claims = claims_from_json(sub["claims"], obs["public"].get("claim_schema", "paper"))
    submission = Submission(
        ProposerAction[sub["action"]],
        Proposal(Intent[p["intent"]], p["risk"], p["net_delta"], p["hedge_size"]),
        Artifact(claims, text, sub["words"], sub["tokens"]),
    )
    record = AuditRecord(AuditOutcome[audit["outcome"]], tuple(audit["checked"]), tuple(audit["failed"]),
                         audit["revealed_compliant"])  # fmt: skip
    return ValidatorView(submission, record, PublicInfo(**obs["public"]), obs["ambiguous"])
