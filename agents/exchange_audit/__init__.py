"""The exchange–audit game's LLM agents: proposer and validator on any OpenAI-compatible endpoint.

========================  ==========  ====================================================
name                      role        policy
========================  ==========  ====================================================
``llm``                   proposer    :class:`~eq_env.agents.exchange_audit.policies.LLMProposer`
``llm``                   validator   :class:`~eq_env.agents.exchange_audit.policies.LLMValidator` (gated by the
                                      rule engine)
========================  ==========  ====================================================

Prompts (``prompts/<role>_<version>.txt``; the proposer's variants ``v1``, ``terse_v1``, ``compliance_v1``,
``payoff_v1``, ``roleplay_v1``), reply schemas (:mod:`.schema`), a scripted honest participant for the local
test server (:mod:`.scripts`) and the scripted models of ``eq-env sensitivity --demo`` (:mod:`.demo`) live
here too.
"""

from eq_env.agents.exchange_audit.policies import LLMProposer, LLMValidator
from eq_env.core.policy import register_policy
from eq_env.exchange_audit.spec import ID

__all__ = ["LLMProposer", "LLMValidator"]

register_policy("llm", "proposer", LLMProposer, env=ID)
register_policy("llm", "validator", LLMValidator, env=ID)
