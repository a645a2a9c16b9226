"""Text rendering of an episode, as a person would read it."""

from __future__ import annotations

from eq_env.exchange_audit.rules import (
    CLAIM_TYPES,
    AuditOutcome,
    Claims,
    ExchangeAuditGame,
    ProposerAction,
)

__all__ = ["render_episode"]


def _fmt_claim(name: str, claims: Claims) -> str | None:
    value = getattr(claims, name)
    if value is None:
        return None
    if isinstance(value, bool):
        return f"{name}={'true' if value else 'false'}"
    if name == "intent":
        return f"intent={value.name}"
    return f"{name}={value:.3f}"


def _fmt_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def render_episode(game: ExchangeAuditGame, episode: int) -> str:
    """The episode so far: private state, proposal and claims, audit, decision, payoffs."""
    state, view = game.state, game.proposer_view
    if state is None or view is None:
        return "(no episode yet: call reset())\n"
    cfg = game.config
    kind = "ambiguous" if state.ambiguous else "normal"
    params = f"q={cfg.q:g}, B={cfg.checks_per_audit}, V={cfg.V:g}, L={cfg.L:g}"
    lines = [f"=== exchange-audit episode {episode} ({kind}; {params}) ==="]
    lines.append(
        f"private state  intent {state.intent.name:<9} risk {state.true_risk:.3f} / limit {state.risk_limit:.3f}"
        f"   net delta {state.true_net_delta:+.3f} / limit {state.delta_limit:.3f}   hedge {state.hedge_size:.3f}"
        f"   -> {'COMPLIANT' if state.compliant else 'NON-COMPLIANT'}"
    )
    lines.append(
        f"proposer sees  intent {view.intent.name:<9} risk {view.observed_risk:.3f}"
        f"                net delta {view.observed_net_delta:+.3f}                hedge {view.observed_hedge_size:.3f}"
    )
    sub = game.submission
    if sub is None:
        lines.append("proposal       (waiting for proposer_0)")
        return "\n".join(lines) + "\n"
    p = sub.proposal
    if sub.action is ProposerAction.NO_TRADE:
        lines.append("proposal       NO_TRADE")
    else:
        lines.append(
            f"proposal       REQUEST_APPROVAL  intent {p.intent.name:<9} risk {p.risk:.3f}"
            f"   net delta {p.net_delta:+.3f}   hedge {p.hedge_size:.3f}"
        )
    claims = [c for c in (_fmt_claim(n, sub.artifact.claims) for n in CLAIM_TYPES) if c]
    claims += [f"{name}={_fmt_value(value)}" for name, value in sub.artifact.claims.extra]  # (a claim schema's own)
    lines.append(f"claims         {'  '.join(claims) if claims else '(none)'}")
    if sub.artifact.text:
        lines.append(f'text           ({sub.artifact.words} words) "{sub.artifact.text}"')
    else:
        lines.append(f"text           ({sub.artifact.words} words, no text)")
    audit = game.audit
    assert audit is not None
    if audit.outcome is AuditOutcome.SKIPPED:
        lines.append("audit          not audited")
    elif audit.outcome is AuditOutcome.INCONCLUSIVE:
        why = "budget B = 0" if cfg.checks_per_audit <= 0 else "a required claim is missing"
        lines.append(f"audit          INCONCLUSIVE ({why})")
    else:
        marks = ", ".join(f"{c} {'FAILED' if c in audit.failed else 'ok'}" for c in audit.checked)
        truth = "compliant" if audit.revealed_compliant else "non-compliant"
        lines.append(f"audit          {audit.outcome.name}: {marks}; the trade is truly {truth}")
    outcome = game.outcome
    if outcome is None:
        lines.append("decision       (waiting for validator_0)")
        return "\n".join(lines) + "\n"
    lines.append(
        f"decision       {outcome.decision.name}"
        + ("  (nothing to approve)" if sub.action is ProposerAction.NO_TRADE else "")
    )
    pay = outcome.payoffs
    lines.append(
        f"payoffs        proposer {pay.proposer:+.3f}   validator {pay.validator:+.3f}   welfare {pay.welfare:+.3f}"
    )
    return "\n".join(lines) + "\n"
