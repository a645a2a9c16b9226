"""LLM agents for eq_env: the generic machinery, and one package per game.

* :mod:`eq_env.agents.client` — chat completions on any OpenAI-compatible endpoint: structured output, retries,
  a replayable cache, fail-fast checks, costs; :func:`configure` sets its runtime settings;
* :mod:`eq_env.agents.llm` — the base of every game's LLM policies (asking, re-asking, falling back);
* :mod:`eq_env.agents.replies` — JSON replies checked against a schema;
* :mod:`eq_env.agents.fake_server` — a local scripted OpenAI-compatible server for tests and benchmarks;
* :mod:`eq_env.agents.exchange_audit` — the exchange–audit game's LLM proposer and validator (policy ``llm``).

Endpoint, model and sampling parameters are the policies' parameters
(``llm:model=gpt-4.1,base_url=http://localhost:8000/v1``); the API key comes
from ``OPENAI_API_KEY``; cache, retries and prices from :func:`eq_env.agents.client.configure`.
"""

from eq_env.agents.client import LLMClient, LLMSettings, configure, settings
from eq_env.agents.exchange_audit import LLMProposer, LLMValidator
from eq_env.core.experiments import set_price_source
from eq_env.core.policy import on_new_run

__all__ = ["LLMProposer", "LLMSettings", "LLMValidator", "configure"]

on_new_run(LLMClient.forget)  # a new run asks again what the previous one failed to get
set_price_source(lambda: (settings().price_prompt, settings().price_completion))  # llm_costs.csv's dollars
