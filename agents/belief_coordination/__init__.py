"""Belief coordination's LLM parts: the answerer of the executors and the coordinator policy.

==========  ============  ======================================================================
name        role          policy
==========  ============  ======================================================================
``llm``     coordinator   :class:`~eq_env.agents.belief_coordination.coordinator.LLMCoordinator`: commits one
                          executor's answer (majority vote when the model's reply is of no use)
``llm``     executor      :class:`~eq_env.agents.belief_coordination.executor.LLMExecutor`: samples at a fixed
                          (T, p), its answers from a model (``eq-env bench``)
``hf``      both          the ``llm`` policy, its model a ``transformers`` checkpoint in this process
                          (``hf:path=DIR``; ``eq_env.agents.hf``)
==========  ============  ======================================================================

The executors' answers come from an *answerer*, not a policy (the executors' policies choose
only T and p): :class:`~eq_env.agents.belief_coordination.answerer.LLMAnswerer` is the one backed by a
model. Prompts (``prompts/<role>_<version>.txt``) and scripted participants for the local test
server and the game's offline stand-in (:mod:`.scripts`, ``STAND_IN``) live here too.
"""

from eq_env.agents.belief_coordination.answerer import LLMAnswerer
from eq_env.agents.belief_coordination.coordinator import ID, LLMCoordinator
from eq_env.agents.belief_coordination.executor import LLMExecutor
from eq_env.agents.hf import hf_policy
from eq_env.agents.stand_in import register_stand_in
from eq_env.core.policy import register_policy
from eq_env.core.spec import registered_envs

__all__ = ["LLMAnswerer", "LLMCoordinator", "LLMExecutor"]

register_stand_in("belief-coordination", "eq_env.agents.belief_coordination.scripts:STAND_IN")

try:
    register_policy("llm", "coordinator", LLMCoordinator, env=ID)
    register_policy("llm", "executor", LLMExecutor, env=ID)
    register_policy("hf", "coordinator", hf_policy(LLMCoordinator), env=ID)
    register_policy("hf", "executor", hf_policy(LLMExecutor), env=ID)
except ValueError:
    if any(spec.id == ID for spec in registered_envs()):
        raise  # the game is there: a real error (its roles, say)
    # the game is not registered in this build: the answerer and the coordinator still work on their own
