"""Moved to :mod:`agents.exchange_audit.policies` (the game's LLM policies) and :mod:`agents.llm` (what every
game's LLM policies share); this name stays for the code that imports it from here."""

from agents.exchange_audit.policies import *  # noqa: F403
from agents.exchange_audit.policies import __all__ as __all__
