"""``eq-env einstein``: the Einstein puzzle's own tools — ``plan`` (:mod:`.plan`), ``demos`` (:mod:`.demos`) and
``play`` (:mod:`.human`).
"""

from __future__ import annotations

import argparse

from eq_env.core.cli import Command


def _einstein_arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.studies.einstein_puzzle import demos, human, plan

    sub = parser.add_subparsers(dest="einstein_command", required=True, metavar="{plan,demos,play}")
    plan_parser = sub.add_parser(
        "plan",
        help="the oracle planner's optimal plan lengths per comm mode and size",
        description=plan.PLAN_DESCRIPTION,
    )
    plan.add_arguments(plan_parser)
    for name, module in (("demos", demos), ("play", human)):
        doc = (module.__doc__ or "").strip()
        cmd = sub.add_parser(name, help=doc.split("\n")[0], description=doc)
        module.add_arguments(cmd)


def _einstein(args: argparse.Namespace) -> int:
    from eq_env.studies.einstein_puzzle import demos, human, plan

    return {"plan": plan.run, "demos": demos.run, "play": human.run}[args.einstein_command](args)


COMMAND = Command(
    "einstein",
    "the Einstein puzzle's tools: plan, demos, play",
    _einstein_arguments,
    _einstein,
    "The collaborative Einstein puzzle's own tools: `plan` (the oracle planner's plan lengths), `demos` "
    "(fine-tuning data from the oracle's games), `play` (a person in one seat, in the terminal).",
)
