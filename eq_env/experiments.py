"""Moved to :mod:`eq_env.core.experiments` (conditions, resumable runs and results, for any game); this name
stays for the code that imports it from here."""

from eq_env.core.experiments import *  # noqa: F403
from eq_env.core.experiments import __all__ as _core_all
from eq_env.core.experiments import llm_columns

LLM_COLUMNS = llm_columns("exchange-audit")  # the columns of the exchange–audit game's llm_costs.csv
__all__ = [*_core_all, "LLM_COLUMNS"]
