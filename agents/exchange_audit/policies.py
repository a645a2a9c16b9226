"""The exchange–audit game's LLM proposer and validator: the same policy interface as the scripted ones.

Both render their observation into a versioned prompt template
(``agents/exchange_audit/prompts/<role>_<version>.txt``), ask an
OpenAI-compatible endpoint for one JSON object
(:mod:`eq_env.agents.exchange_audit.schema`), and turn the reply into an action.
A reply that is not valid JSON or breaks the schema is sent back with the
error, up to ``max_reasks`` times; after that the policy falls back —
proposer: NO_TRADE, validator: BLOCK — and says so in its info
(``fallback=True`` and the reason). An endpoint that cannot answer after its
retries raises :class:`eq_env.core.policy.PolicyError`; the runner records the
episode as failed and goes on. The asking itself is :class:`eq_env.agents.llm.LLMPolicy`'s.

The validator is **gated** by default (``gate="rule"``): it approves only if
the paper's rule engine, which reads the typed claims and the audit, would
approve too. The free text is context; no text can turn the rule's BLOCK into
an approval. ``gate="none"`` lets the LLM decide alone, for studying it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from eq_env.agents.exchange_audit.schema import (
    PROPOSER_SCHEMA,
    VALIDATOR_SCHEMA,
    parse_proposer_reply,
    parse_validator_reply,
    proposer_schema,
)
from eq_env.agents.llm import LLMPolicy, template, template_digest, template_versions
from eq_env.exchange_audit.rules import (
    CLAIM_TYPES,
    Artifact,
    AuditOutcome,
    Claims,
    Decision,
    ProposerAction,
    ProposerView,
    PublicInfo,
    Submission,
    ValidatorView,
    rule_decision,
)
from eq_env.exchange_audit.schema import get_schema
from eq_env.exchange_audit.spaces import (
    decode_proposer_observation,
    decode_validator_observation,
    encode_submission,
)

__all__ = [
    "PROMPT_DIR",
    "LLMProposer",
    "LLMValidator",
    "prompt_variants",
    "render_proposer_prompt",
    "render_validator_prompt",
]

PROMPT_DIR = Path(__file__).parent / "prompts"
_PROPOSER_SCHEMA_TEXT = json.dumps(PROPOSER_SCHEMA)
_VALIDATOR_SCHEMA_TEXT = json.dumps(VALIDATOR_SCHEMA)
SYSTEM = "You are a careful agent in a multi-agent trading game. You answer with one JSON object only."


def _template(role: str, version: str) -> Any:
    return template(PROMPT_DIR, role, version)


def _json_block(data: Any) -> str:
    # "<" escaped so that no string inside can close the <observation> block early
    return json.dumps(data, indent=1).replace("<", "\\u003c")


def _public_dict(pub: PublicInfo) -> dict[str, Any]:
    out = {k: getattr(pub, k) for k in PublicInfo.__dataclass_fields__}
    if pub.claim_schema == "paper":
        del out["claim_schema"]  # (the paper's prompts: as they were before claim schemas)
    return out


def render_proposer_prompt(view: ProposerView, version: str = "v1") -> list[dict[str, str]]:
    """The chat messages a proposer observation becomes (its claims those of the view's claim schema)."""
    pub = view.public
    claims = get_schema(pub.claim_schema)
    known = ""
    if view.known_compliant is not None:
        known = (
            f"- you also know the truth: your true risk is {'within' if view.known_risk_within_limit else 'above'} "
            f"the risk limit and your true net delta is {'within' if view.known_net_delta_bounded else 'beyond'} "
            "the delta limit\n"
        )
    observation = {
        "role": "proposer",
        "intent": view.intent.name,
        "observed": {
            "risk": view.observed_risk,
            "net_delta": view.observed_net_delta,
            "hedge_size": view.observed_hedge_size,
        },
        "limits": {"risk_limit": pub.risk_limit, "delta_limit": pub.delta_limit},
        "known_compliance": None
        if not known
        else {"risk_within_limit": view.known_risk_within_limit, "net_delta_bounded": view.known_net_delta_bounded},
        "public": _public_dict(pub),
    }
    user = _template("proposer", version).substitute(
        intent=view.intent.name,
        observed_risk=f"{view.observed_risk:.4f}",
        observed_net_delta=f"{view.observed_net_delta:+.4f}",
        observed_hedge_size=f"{view.observed_hedge_size:.4f}",
        noise_sd=f"{pub.noise_sd:g}",
        known_compliance=known,
        risk_limit=f"{pub.risk_limit:.4f}",
        delta_limit=f"{pub.delta_limit:g}",
        no_trade_payoff=f"{pub.no_trade_payoff:g}",
        V=f"{pub.V:g}",
        bad_approval_loss=f"{pub.bad_approval_loss:g}",
        alpha=f"{pub.alpha:g}",
        cost_unit="token of your reply" if pub.cost_in_tokens else "word of free text",
        q=f"{pub.q:g}",
        checks_per_audit=pub.checks_per_audit,
        L=f"{pub.L:g}",
        max_words=pub.max_words,
        schema=_PROPOSER_SCHEMA_TEXT if pub.claim_schema == "paper" else json.dumps(proposer_schema(pub.claim_schema)),
        observation_json=_json_block(observation),
        # the claims, the audit's pool and the required claims, from the claim schema
        audit_pool=claims.pool_text(),
        required_claims=claims.required_text(),
        claim_lines=claims.prompt_lines(),
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _claims_dict(claims: Claims, claim_schema: str = "paper") -> dict[str, Any]:
    out: dict[str, Any] = {n: getattr(claims, n) for n in CLAIM_TYPES}
    if claims.intent is not None:  # HEDGE is 0: test for None, not truth
        out["intent"] = claims.intent.name
    if claim_schema != "paper":  # a claim schema's own claims, null where not made
        made = dict(claims.extra)
        out.update(
            {c.name: None if c.name not in made else c.to_json(made[c.name]) for c in get_schema(claim_schema).extra}
        )
    return out


def _claims_line(claims: Claims, claim_schema: str = "paper") -> str:
    made = []
    for name in CLAIM_TYPES:
        value = getattr(claims, name)
        if value is not None:
            made.append(f"{name}={value.name if hasattr(value, 'name') else json.dumps(value)}")
    if claim_schema != "paper":
        by_name = get_schema(claim_schema).by_name
        made += [f"{name}={json.dumps(by_name[name].to_json(value))}" for name, value in claims.extra]
    return ", ".join(made) or "none"


def _audit_lines(view: ValidatorView) -> str:
    audit = view.audit
    if audit.outcome is AuditOutcome.SKIPPED:
        return "- not audited this time"
    if audit.outcome is AuditOutcome.INCONCLUSIVE:
        return "- audited: INCONCLUSIVE (a required claim was missing, or no claim could be checked)"
    checks = ", ".join(f"{c} {'FAILED' if c in audit.failed else 'passed'}" for c in audit.checked)
    truth = "compliant" if audit.revealed_compliant else "NOT compliant"
    return f"- audited: {audit.outcome.name} ({checks})\n- the audit established that the trade is truly {truth}"


def render_validator_prompt(view: ValidatorView, version: str = "v1") -> list[dict[str, str]]:
    """The chat messages a validator observation becomes (the proposer's text fenced as untrusted data)."""
    sub, pub = view.submission, view.public
    p = sub.proposal
    text = sub.artifact.text.replace("<", "‹").replace(">", "›")  # no tag in the text can close the fence
    observation = {
        "role": "validator",
        "ambiguous": view.ambiguous,
        "submission": {
            "action": sub.action.name,
            "proposal": {"intent": p.intent.name, "risk": p.risk, "net_delta": p.net_delta, "hedge_size": p.hedge_size},
            "claims": _claims_dict(sub.artifact.claims, pub.claim_schema),
            "words": sub.artifact.words,
            "tokens": sub.artifact.tokens,
            # the text is not repeated here: it appears once, fenced as untrusted data
        },
        "audit": {
            "outcome": view.audit.outcome.name,
            "checked": list(view.audit.checked),
            "failed": list(view.audit.failed),
            "revealed_compliant": view.audit.revealed_compliant,
        },
        "public": _public_dict(pub),
    }
    user = _template("validator", version).substitute(
        action=sub.action.name,
        reported_intent=p.intent.name,
        reported_risk=f"{p.risk:.4f}",
        reported_net_delta=f"{p.net_delta:+.4f}",
        reported_hedge_size=f"{p.hedge_size:.4f}",
        claims=_claims_line(sub.artifact.claims, pub.claim_schema),
        words=sub.artifact.words,
        text=text or "(no text)",
        audit=_audit_lines(view),
        risk_limit=f"{pub.risk_limit:.4f}",
        delta_limit=f"{pub.delta_limit:g}",
        V=f"{pub.V:g}",
        bad_approval_loss=f"{pub.bad_approval_loss:g}",
        ambiguity="borderline (ambiguous): the position sits close to both limits"
        if view.ambiguous
        else "an ordinary one",
        schema=_VALIDATOR_SCHEMA_TEXT,
        observation_json=_json_block(observation),
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def prompt_variants(role: str = "proposer") -> list[str]:
    """The prompt variants of a role (its template versions): ``v1`` (the default), ``terse_v1``..."""
    return template_versions(PROMPT_DIR, role)


# The templates' texts from before results were keyed by digest: keyed without one, so that the runs recorded
# with them keep their keys (as a configuration field at its default is left out of a configuration's key).
# (proposer v1 since claim schemas: its claim lines are placeholders that render the same text for the paper's
# schema, pinned by tests/exchange_audit/golden/claim_schema_paper.json.)
_UNDIGESTED = {("proposer", "v1"): "ec15c571ef0564b4", ("validator", "v1"): "cef4660c4dbb4537"}


class _ExchangeAuditLLM(LLMPolicy):
    PROMPTS = PROMPT_DIR

    @classmethod
    def canonical_parameters(cls, params: dict[str, Any]) -> dict[str, Any]:
        """As :meth:`LLMPolicy.canonical_parameters`, and the digest of the template's text: results are keyed
        by what was asked, so a template edited under the same version name is a new experiment, and no two
        variants share a result. (The ``v1`` templates as first released are keyed without it; requests are
        keyed by their messages, which hold the rendered template.)"""
        keyed = super().canonical_parameters(params)
        role, version = cls.PROMPT_ROLE or cls.role, params.get("prompt_version", "v1")
        digest = template_digest(cls.PROMPTS, role, version)
        if _UNDIGESTED.get((role, version)) != digest:
            keyed["prompt_digest"] = digest
        return keyed


class LLMProposer(_ExchangeAuditLLM):
    """A proposer played by an LLM; ``prompt_version`` picks its template: v1, or a variant (terse_v1,
    compliance_v1, payoff_v1, roleplay_v1; the module docstring says more).

    Args:
        model: the model name the endpoint knows (``gpt-4.1``, a vLLM or Ollama model...), sent
            byte for byte. In a spec, quote a name that reads as a number or holds a comma:
            ``llm:model="007"``.
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI's). Credentials in it
            (``http://user:pass@host/v1``, ``?api-key=...``) are used, never recorded.
        temperature, max_tokens, seed: sampling parameters sent with every request.
        prompt_version: the template ``agents/exchange_audit/prompts/proposer_<version>.txt``, the
            prompt variant: ``v1`` (the default), ``terse_v1``, ``compliance_v1``, ``payoff_v1``,
            ``roleplay_v1`` (:func:`prompt_variants`; ``eq-env sensitivity`` compares them). Results
            are keyed by the version and the digest of the template's text.
        max_reasks: how many times an invalid reply is sent back before falling back to NO_TRADE.
        strip: send the same proposal without claims and text (the paper's action-only
            regime): the request is the same as without ``strip``, so both regimes share one
            sample per state (from the cache, or from memory within a process).
    """

    role = "proposer"

    def __init__(
        self,
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 400,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 2,
        strip: bool = False,
    ) -> None:
        super().__init__(model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks)
        self.strip = bool(strip)

    def __repr__(self) -> str:
        strip = ", strip=True" if self.strip else ""
        return f"{self.name}(model={self.model!r}, base_url={self.client.base_url!r}{strip})"

    async def submission(self, view: ProposerView) -> tuple[Submission, dict[str, Any]]:
        pub = view.public

        def parse(c: Any) -> Submission:
            # the artifact costs its completion tokens, capped by what the action space admits
            tokens = min(c.completion_tokens, pub.max_artifact_tokens)
            return parse_proposer_reply(
                c.content, pub.max_words, pub.max_text_chars, tokens=tokens, claim_schema=pub.claim_schema
            )

        sub, info = await self._ask(
            render_proposer_prompt(view, self.prompt_version), "proposal", proposer_schema(pub.claim_schema), parse
        )
        if sub is None:  # the documented fallback
            sub = Submission(ProposerAction.NO_TRADE, view.observed_proposal, Artifact())
        if self.strip:
            sub = Submission(sub.action, sub.proposal, Artifact())
            info["stripped"] = True
        return sub, info

    async def aact(self, observation: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        view = decode_proposer_observation(observation)
        sub, info = await self.submission(view)
        return encode_submission(sub, view.public.claim_schema), info


class LLMValidator(_ExchangeAuditLLM):
    """A validator played by an LLM, gated by the rule engine unless ``gate="none"``.

    Args:
        gate: ``"rule"`` approves only when both the LLM and the paper's rule engine
            (typed claims and audit) approve; ``"none"`` takes the LLM's decision as is.
        model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks: as for
            :class:`LLMProposer`; after ``max_reasks`` invalid replies it falls back to BLOCK.
    """

    role = "validator"

    def __init__(
        self,
        model: str = "gpt-4.1",
        base_url: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 200,
        seed: int | None = None,
        prompt_version: str = "v1",
        max_reasks: int = 2,
        gate: Literal["rule", "none"] = "rule",
    ) -> None:
        super().__init__(model, base_url, temperature, max_tokens, seed, prompt_version, max_reasks)
        gate = "none" if gate is None else gate  # a spec's "gate=none" parses as None
        if gate not in ("rule", "none"):
            raise ValueError(f"gate must be 'rule' or 'none', got {gate!r}")
        self.gate = gate

    def __repr__(self) -> str:
        return f"{self.name}(model={self.model!r}, base_url={self.client.base_url!r}, gate={self.gate!r})"

    async def decide(self, view: ValidatorView) -> tuple[Decision, dict[str, Any]]:
        result, info = await self._ask(
            render_validator_prompt(view, self.prompt_version),
            "decision",
            VALIDATOR_SCHEMA,
            lambda c: parse_validator_reply(c.content),
        )
        llm_decision, reason = result if result is not None else (Decision.BLOCK, None)
        rule = rule_decision(view)
        decision = llm_decision
        if self.gate == "rule" and rule is Decision.BLOCK:
            decision = Decision.BLOCK  # text and claims the rule rejects never buy an approval
        info.update(
            llm_decision=llm_decision.name, rule_decision=rule.name, reason=reason, gated=decision is not llm_decision
        )
        return decision, info

    async def aact(self, observation: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        decision, info = await self.decide(decode_validator_observation(observation))
        return int(decision), info
