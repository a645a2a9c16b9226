"""``--dry-run`` for the exchange–audit game: what each LLM policy would be sent for one state, and the schema
it must answer with (the commands print it instead of calling anything)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from eq_env.exchange_audit.config import ExchangeAuditConfig

__all__ = ["dry_run"]


def dry_run(config: ExchangeAuditConfig, policies: Mapping[str, Sequence[str]]) -> int:
    """Print what each LLM policy among ``policies`` (role → specs) would be sent for one state, and the
    schema it must answer with; call nothing."""
    from eq_env import exchange_audit_v0
    from eq_env.agents.exchange_audit.policies import render_proposer_prompt, render_validator_prompt
    from eq_env.agents.exchange_audit.schema import VALIDATOR_SCHEMA, proposer_schema
    from eq_env.baselines.exchange_audit import HonestProposer
    from eq_env.core.policy import make_policy
    from eq_env.exchange_audit.spaces import decode_proposer_observation, encode_submission

    env = exchange_audit_v0.env(config=config)
    env.reset(seed=0)
    view = decode_proposer_observation(env.observe("proposer_0"))
    env.step(encode_submission(HonestProposer(request="always").submission(view), config.claim_schema))  # a sample
    validator_view = env.unwrapped.game.validator_view
    shown = 0
    for role in ("proposer", "validator"):
        for spec in dict.fromkeys(policies.get(role, ())):
            policy = make_policy(spec, role)
            if not hasattr(policy, "prompt_version"):
                continue
            if role == "proposer":
                messages = render_proposer_prompt(view, policy.prompt_version)
                schema = proposer_schema(config.claim_schema)
            else:
                messages, schema = render_validator_prompt(validator_view, policy.prompt_version), VALIDATOR_SCHEMA
            print(f"===== {role}: {policy!r}, prompt {policy.prompt_version} =====")
            for m in messages:
                print(f"--- {m['role']} ---\n{m['content']}")
            print(f"--- reply schema ---\n{json.dumps(schema, indent=2)}\n")
            shown += 1
    if not shown:
        print("no LLM policy among the proposers and validators: nothing would be sent")
    return 0


# ---------------------------------------------------------------------------
# reproduce
# ---------------------------------------------------------------------------
