"""The repeated exchange–audit game's named policies: the one-shot game's scripted ones, round by round.

A round's observation is the one-shot game's (its ``public`` vector shows the round's q_t) plus a
``"history"`` entry these policies ignore, so each plays every round as it plays the one-shot game;
``strategic:trigger=payoff`` lies in a round whose q_t makes lying pay, so it cashes in a decayed q
(myopically: it does not build a reputation on purpose; :class:`~eq_env.exchange_audit.repeated.dp.DPProposer`
plays the best response that does).

===============  ==========  ======================================================
name             role        policy
===============  ==========  ======================================================
``honest``       proposer    :class:`~eq_env.baselines.exchange_audit.scripted.HonestProposer`
``silent``       proposer    :class:`~eq_env.baselines.exchange_audit.scripted.SilentProposer`
``strategic``    proposer    :class:`~eq_env.baselines.exchange_audit.scripted.StrategicProposer`
``rule``         validator   :class:`~eq_env.baselines.exchange_audit.scripted.RuleValidator`
``approve``      validator   :class:`~eq_env.baselines.exchange_audit.scripted.AlwaysApprove`
``block``        validator   :class:`~eq_env.baselines.exchange_audit.scripted.AlwaysBlock`
``text_reader``  validator   :class:`~eq_env.baselines.exchange_audit.scripted.TextReaderValidator`
===============  ==========  ======================================================
"""

from eq_env.baselines.exchange_audit import SCRIPTED
from eq_env.core.policy import register_policy
from eq_env.exchange_audit.repeated.spec import ID

for _name, _role, _factory in SCRIPTED:
    register_policy(_name, _role, _factory, env=ID)
