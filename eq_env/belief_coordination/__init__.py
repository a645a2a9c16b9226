"""Belief coordination of several LLMs (ECON's setting, made testable): questions (:mod:`.questions`), answerers
(:mod:`.answerers`: the simulated one and its model), the pure rules (:mod:`.rules`: majority commit and the shared
reward), configuration (:mod:`.config`), the PettingZoo adapters (:mod:`.env`; the manual), records and metrics
(:mod:`.records`) and the registration (:mod:`.spec`)."""

from eq_env.belief_coordination.answerers import Answer, AnswerRequest, SimulatedAnswerer, SimulationParams
from eq_env.belief_coordination.config import PRESETS, BeliefCoordinationConfig
from eq_env.belief_coordination.questions import Question

__all__ = [
    "PRESETS",
    "Answer",
    "AnswerRequest",
    "BeliefCoordinationConfig",
    "Question",
    "SimulatedAnswerer",
    "SimulationParams",
]
