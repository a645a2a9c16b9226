"""Scripted and RL baselines for eq_env, registered as named policies.

=================  ==========  ====================================================
name               role        policy
=================  ==========  ====================================================
``honest``         proposer    :class:`~baselines.scripted.HonestProposer`
``silent``         proposer    :class:`~baselines.scripted.SilentProposer`
``strategic``      proposer    :class:`~baselines.scripted.StrategicProposer`
``rule``           validator   :class:`~baselines.scripted.RuleValidator`
``approve``        validator   :class:`~baselines.scripted.AlwaysApprove`
``block``          validator   :class:`~baselines.scripted.AlwaysBlock`
``sb3``            either      :class:`~baselines.rl.SB3Policy` (``sb3:path=DIR``, a model ``eq-env train`` saved)
=================  ==========  ====================================================

``eq_env.policy.make_policy("honest:claims_from=observation,words=18")`` builds
one from a spec; ``eq-env policies`` lists them with their parameters.
"""

from baselines.rl import sb3_proposer, sb3_validator
from baselines.scripted import (
    AlwaysApprove,
    AlwaysBlock,
    HonestProposer,
    RuleValidator,
    SilentProposer,
    StrategicProposer,
)
from eq_env.policy import register_policy

__all__ = [
    "AlwaysApprove",
    "AlwaysBlock",
    "HonestProposer",
    "RuleValidator",
    "SilentProposer",
    "StrategicProposer",
]

register_policy("honest", "proposer", HonestProposer)
register_policy("silent", "proposer", SilentProposer)
register_policy("strategic", "proposer", StrategicProposer)
register_policy("rule", "validator", RuleValidator)
register_policy("approve", "validator", AlwaysApprove)
register_policy("block", "validator", AlwaysBlock)
register_policy("sb3", "proposer", sb3_proposer)
register_policy("sb3", "validator", sb3_validator)
