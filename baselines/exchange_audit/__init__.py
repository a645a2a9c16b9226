"""Scripted and RL baselines of the exchange–audit game, registered as its named policies.

=================  ==========  ====================================================
name               role        policy
=================  ==========  ====================================================
``honest``         proposer    :class:`~eq_env.baselines.exchange_audit.scripted.HonestProposer`
``silent``         proposer    :class:`~eq_env.baselines.exchange_audit.scripted.SilentProposer`
``strategic``      proposer    :class:`~eq_env.baselines.exchange_audit.scripted.StrategicProposer`
``injecting``      proposer    :class:`~eq_env.baselines.exchange_audit.scripted.InjectingProposer` (the strategic
                               proposer whose lies carry an injected instruction to the validator)
``rule``           validator   :class:`~eq_env.baselines.exchange_audit.scripted.RuleValidator`
``text_reader``    validator   :class:`~eq_env.baselines.exchange_audit.scripted.TextReaderValidator` (the rule
                               reading the free text, not the typed claims)
``approve``        validator   :class:`~eq_env.baselines.exchange_audit.scripted.AlwaysApprove`
``block``          validator   :class:`~eq_env.baselines.exchange_audit.scripted.AlwaysBlock`
``sb3``            either      :class:`~eq_env.baselines.exchange_audit.rl.SB3Policy` (``sb3:path=DIR``, a model
                               ``eq-env train`` saved)
``rllib``          either      a role of an RLlib checkpoint (``rllib:path=DIR``; eq-env train --backend rllib)
``torchrl``        either      :class:`~eq_env.baselines.torchrl.TorchRLPolicy`: a role of a TorchRL MAPPO
                               training (``torchrl:path=DIR``; the ``compat`` extra)
=================  ==========  ====================================================
"""

from eq_env.baselines.exchange_audit.jax_rl import ExchangeAuditJaxPolicy
from eq_env.baselines.exchange_audit.rl import sb3_proposer, sb3_validator
from eq_env.baselines.exchange_audit.scripted import (
    AlwaysApprove,
    AlwaysBlock,
    HonestProposer,
    InjectingProposer,
    RuleValidator,
    SilentProposer,
    StrategicProposer,
    TextReaderValidator,
)
from eq_env.baselines.jax_policy import jax_policy_for
from eq_env.baselines.rllib import rllib_policy_for
from eq_env.baselines.torchrl import torchrl_policy_for
from eq_env.core.policy import register_policy
from eq_env.exchange_audit.spec import ID

__all__ = [
    "SCRIPTED",
    "AlwaysApprove",
    "AlwaysBlock",
    "HonestProposer",
    "InjectingProposer",
    "RuleValidator",
    "SilentProposer",
    "StrategicProposer",
    "TextReaderValidator",
]

# The scripted policies, by name and role: the repeated game registers the same ones (baselines/exchange_audit/
# repeated.py), so a policy added here plays both games.
SCRIPTED: tuple[tuple[str, str, type], ...] = (
    ("honest", "proposer", HonestProposer),
    ("silent", "proposer", SilentProposer),
    ("strategic", "proposer", StrategicProposer),
    ("injecting", "proposer", InjectingProposer),
    ("rule", "validator", RuleValidator),
    ("text_reader", "validator", TextReaderValidator),
    ("approve", "validator", AlwaysApprove),
    ("block", "validator", AlwaysBlock),
)

for _name, _role, _factory in (
    *SCRIPTED,
    ("sb3", "proposer", sb3_proposer),
    ("sb3", "validator", sb3_validator),
    ("rllib", "proposer", rllib_policy_for("proposer")),
    ("rllib", "validator", rllib_policy_for("validator")),
    ("torchrl", "proposer", torchrl_policy_for("proposer")),
    ("torchrl", "validator", torchrl_policy_for("validator")),
    ("jax", "proposer", jax_policy_for("proposer", ExchangeAuditJaxPolicy)),
    ("jax", "validator", jax_policy_for("validator", ExchangeAuditJaxPolicy)),
):
    register_policy(_name, _role, _factory, env=ID)
