"""Moved to :mod:`eq_env.agents.exchange_audit.schema` (the game's reply schemas) and :mod:`eq_env.agents.replies` (JSON
replies for any game); this name stays for the code that imports it from here."""

from eq_env.agents.exchange_audit.schema import *  # noqa: F403
from eq_env.agents.exchange_audit.schema import __all__ as __all__
