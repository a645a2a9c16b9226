"""LLM players of the Einstein puzzle (policy ``llm``, both seats; the prompt: :mod:`.prompt`).

==========  ======================  =====================================================================
name        roles                   policy
==========  ======================  =====================================================================
``llm``     player_0, player_1      :class:`~eq_env.agents.einstein_puzzle.policies.LLMPlayer`; with ``verifier``
                                    or ``k``, :class:`~eq_env.agents.einstein_puzzle.policies.VerifiedLLMPlayer`
``hf``      player_0, player_1      the ``llm`` player, its model a ``transformers`` checkpoint in this process
                                    (``hf:path=DIR``; ``eq_env.agents.hf``)
==========  ======================  =====================================================================

Scripted participants for the local test server, and the game's offline stand-in (``STAND_IN``,
``python -m eq_env.agents.fake_server``), live in :mod:`.scripts`.
"""

from eq_env.agents.einstein_puzzle.policies import LLMPlayer, VerifiedLLMPlayer, player_factory
from eq_env.agents.hf import hf_policy
from eq_env.agents.stand_in import register_stand_in
from eq_env.core.policy import register_policy
from eq_env.einstein_puzzle.spec import ID

__all__ = ["LLMPlayer", "VerifiedLLMPlayer"]

for _role in ("player_0", "player_1"):
    register_policy("llm", _role, player_factory(_role), env=ID)
    register_policy("hf", _role, hf_policy(player_factory(_role)), env=ID)
register_stand_in("einstein-puzzle", "eq_env.agents.einstein_puzzle.scripts:STAND_IN")
