"""LLM agents for eq_env: proposer and validator policies on any OpenAI-compatible endpoint.

========================  ==========  ====================================================
name                      role        policy
========================  ==========  ====================================================
``llm``                   proposer    :class:`~agents.policies.LLMProposer`
``llm``                   validator   :class:`~agents.policies.LLMValidator` (gated by the rule engine)
========================  ==========  ====================================================

Endpoint, model and sampling parameters are the policies' parameters
(``llm:model=gpt-4.1,base_url=http://localhost:8000/v1``); the API key comes
from ``OPENAI_API_KEY``; cache, retries and prices from :func:`agents.client.configure`.
:mod:`agents.fake_server` is a local scripted endpoint for tests and benchmarks.
"""

from agents.client import LLMClient, LLMSettings, configure
from agents.policies import LLMProposer, LLMValidator
from eq_env.policy import on_new_run, register_policy

__all__ = ["LLMProposer", "LLMSettings", "LLMValidator", "configure"]

register_policy("llm", "proposer", LLMProposer)
register_policy("llm", "validator", LLMValidator)
on_new_run(LLMClient.forget)  # a new run asks again what the previous one failed to get
