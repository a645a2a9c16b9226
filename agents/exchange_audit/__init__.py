"""The exchange–audit game's LLM agents: proposer and validator on any OpenAI-compatible endpoint.

========================  ==========  ====================================================
name                      role        policy
========================  ==========  ====================================================
``llm``                   proposer    :class:`~eq_env.agents.exchange_audit.policies.LLMProposer`
``llm``                   validator   :class:`~eq_env.agents.exchange_audit.policies.LLMValidator` (gated by the
                                      rule engine)
``hf``                    both        the ``llm`` policy, its model a ``transformers`` checkpoint in this
                                      process (``hf:path=DIR``; ``eq_env.agents.hf``)
========================  ==========  ====================================================

Both play the repeated game too (``--env exchange-audit-repeated``): each round is prompted as a one-shot
round, from that round's observation (the round's q_t is in it; the record of earlier rounds is not).

Prompts (``prompts/<role>_<version>.txt``; the proposer's variants ``v1``, ``terse_v1``, ``compliance_v1``,
``payoff_v1``, ``roleplay_v1``), reply schemas (:mod:`.schema`), a scripted honest participant for the local
test server and the game's offline stand-in (:mod:`.scripts`, ``STAND_IN``), and the scripted models of
``eq-env sensitivity --demo`` (:mod:`.demo`) live here too.
"""

from eq_env.agents.exchange_audit.policies import LLMProposer, LLMValidator
from eq_env.agents.hf import hf_policy
from eq_env.agents.stand_in import register_stand_in
from eq_env.core.policy import register_policy
from eq_env.exchange_audit.repeated.spec import ID as REPEATED_ID
from eq_env.exchange_audit.spec import ID

__all__ = ["LLMProposer", "LLMValidator"]

# the repeated game's rounds are one-shot rounds: the same players, prompted with the round's observation
for _game in (ID, REPEATED_ID):
    register_policy("llm", "proposer", LLMProposer, env=_game)
    register_policy("llm", "validator", LLMValidator, env=_game)
    register_policy("hf", "proposer", hf_policy(LLMProposer), env=_game)
    register_policy("hf", "validator", hf_policy(LLMValidator), env=_game)
for _name in ("exchange-audit", "exchange-audit-repeated"):
    register_stand_in(_name, "eq_env.agents.exchange_audit.scripts:STAND_IN")
