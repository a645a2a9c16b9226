"""What is done with the games: every ``eq-env`` command, experiment, bench task and tool, one folder per game.

This layer sits above the games (:mod:`eq_env.exchange_audit`, :mod:`eq_env.einstein_puzzle`,
:mod:`eq_env.belief_coordination`) and who plays them (:mod:`eq_env.agents`, :mod:`eq_env.baselines`); nothing
below imports it. Each game's package lists its commands in ``COMMANDS``; each command's module carries its
manual (its docstring), its flags, its run and its :class:`~eq_env.core.spec.Command`.
"""
