"""Moved to :mod:`eq_env.agents.exchange_audit.policies` (the game's LLM policies) and
:mod:`eq_env.agents.llm` (what every game's LLM policies share);
this name stays for the code that imports it from here."""

from eq_env.agents.exchange_audit.policies import *  # noqa: F403
from eq_env.agents.exchange_audit.policies import __all__ as __all__
