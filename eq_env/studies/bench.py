"""``eq-env bench``: score a model on all three coordination tasks with one command, and compare models.

::

    eq-env bench --model gpt-4.1 --out runs/bench/gpt-4.1 --quick          # the quick battery (minutes)
    eq-env bench --model gpt-4.1 --out runs/bench/gpt-4.1                  # the full battery
    eq-env bench --model M --out DIR --dry-run --price-prompt 2 --price-completion 8   # requests, tokens, $
    eq-env bench --model M --out DIR --max-usd 5                           # stop before $5; run again to go on
    eq-env bench --model M --out DIR --quick --tasks einstein-puzzle          # one game's tasks (a part)
    eq-env bench --compare runs/bench/a runs/bench/b --out runs/leaderboard
    eq-env bench --demo --quick --out runs/bench-demo                      # offline: scripted models, no key

**The batteries.** ``bench-v1`` plays, with the model in the LLM roles (the tasks' manuals are their
modules' docstrings):

* the exchange–audit game (:mod:`eq_env.studies.exchange_audit.bench`): the model as proposer — artifacts vs
  action only, over the paper's q grid and in the temptation scenario — and as validator, gated and
  ungated, against scripted honest, strategic and text-injecting proposers;
* the collaborative Einstein puzzle (:mod:`eq_env.studies.einstein_puzzle.bench`): the frozen suite's puzzles with
  the model in both seats and beside the planner, in each comm mode, with and without the reasoning
  verifier;
* belief coordination (:mod:`eq_env.studies.belief_coordination.bench`): the model as the answerer under the
  fixed, majority-vote and debate baselines.

``bench-v1-quick`` (``--quick``) is the same tasks at small sizes: a few minutes against a real endpoint.
A battery's conditions, seeds and sizes are frozen under its name, so a published score can cite it;
changing any of them makes a new version. ``--tasks`` plays a part of a battery (task names, or a game for
all its tasks) — the same runs, so the card's rows are the whole battery's for those tasks, and the card says
it is a part (``part_of`` in ``card.json``); a part is compared only with cards of the same tasks.

**Recorded and resumable.** Every run goes through :func:`eq_env.core.experiments.run_all`: recorded in
``OUT/results.jsonl`` as it finishes, every answer in ``OUT/llm_cache`` (``--cache-dir``); the same command
run again plays only what is missing (a killed run resumes), and ``--cache read`` replays a recording
with no request — the same card, byte for byte, failures included.

**Cost before spending.** ``--dry-run`` prints, per task, the runs left, the requests and tokens they are
estimated to take and their price at ``--price-prompt``/``--price-completion`` (dollars per million
tokens), and calls nothing. ``--max-usd X`` stops cleanly before a chunk (a task's conditions on one seed)
whose estimated cost would take what this command has been billed past X; everything played is kept and
the same command (with a larger budget) goes on from there.

**Exit status.** 0: every card written; 3: cards written, but some episodes failed (the endpoint gave no
answer after the retries; run again to retry them, or see ``results.jsonl``); 4: stopped before the end —
by ``--max-usd``, or because every episode of a chunk failed (the endpoint is down or refuses), with what
was played kept: run the same command again; 2: bad flags or files, one line.

**The card.** ``OUT/card.md`` and a self-contained ``OUT/card.html`` (tables and plots embedded, no
script, opens offline), from ``OUT/card.json``: a summary of each task's main metric with its 95%
interval over seeds, then per task its table, the paper's reference numbers beside the model's, notes, a
figure, and its LLM calls, failures and tokens; the battery, prompt templates and package version at the
top. With several ``--model`` flags each model gets ``OUT/<model>/`` and ``OUT/leaderboard.md``/``.html``
compares them; ``--compare DIR ...`` does the same for finished runs.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from eq_env.core.bench import Battery, BenchModel
from eq_env.core.cli import Command, out_dir, path_arg, positive_float
from eq_env.core.report import markdown_table, printable

__all__ = ["BATTERIES", "COMMAND", "DEFAULT_BATTERY", "batteries", "battery"]

DEFAULT_BATTERY = "bench-v1"
STOPPED = 4  # exit status: stopped before the end (--max-usd, or an endpoint failing everything); run again
BATTERIES = ("bench-v1", "bench-v1-quick")


@functools.cache
def batteries() -> dict[str, Battery]:
    """The batteries by name (the games' task modules are imported on first use)."""
    from eq_env.studies.belief_coordination.bench import TASKS as BELIEF
    from eq_env.studies.einstein_puzzle.bench import TASKS as EINSTEIN
    from eq_env.studies.exchange_audit.bench import TASKS as EXCHANGE

    tasks = (*EXCHANGE, *EINSTEIN, *BELIEF)
    return {
        "bench-v1": Battery("bench-v1", tasks, quick=False, description="the full battery"),
        "bench-v1-quick": Battery("bench-v1-quick", tasks, quick=True, description="the quick battery"),
    }


def battery(name: str = DEFAULT_BATTERY, *, quick: bool = False) -> Battery:
    """A battery by name; ``quick`` picks its quick form (``bench-v1`` → ``bench-v1-quick``)."""
    found = batteries()
    if quick and not name.endswith("-quick"):
        name = f"{name}-quick"
    if name not in found:
        raise ValueError(f"--battery {name!r}: expected one of {', '.join(found)}")
    return found[name]


# ---------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------
def _arguments(parser: argparse.ArgumentParser) -> None:
    from eq_env.agents.cli import LLM_FLAGS

    parser.add_argument(
        "--out",
        type=out_dir,
        required=True,
        help="output directory (with several --model, a directory per model in it)",
    )
    parser.add_argument("--quick", action="store_true", help="the quick battery (bench-v1-quick): minutes, not hours")
    parser.add_argument(
        "--battery",
        choices=BATTERIES,
        default=DEFAULT_BATTERY,
        help=f"the battery's version (default {DEFAULT_BATTERY})",
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        metavar="TASK",
        help="play only these tasks of the battery (names as the card's, e.g. einstein-puzzle/with-planner, or "
        "a game: all its tasks); the card says it is a part. The same runs as the whole battery's: running "
        "the whole later in the same --out plays only the rest",
    )
    parser.add_argument(
        "--max-usd",
        type=positive_float,
        help="stop before the estimated bill of this command passes this many dollars (needs "
        "--price-prompt/--price-completion); run again to go on",
    )
    parser.add_argument(
        "--compare",
        type=path_arg,
        nargs="+",
        metavar="DIR",
        help="no run: put the cards of these finished bench directories side by side in --out",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="serve scripted models from a local server (no key, no network): bench-good, "
        "bench-mediocre and bench-hostile (numbers of scripts, not models)",
    )
    LLM_FLAGS.add(parser, "OUT/llm_cache", many_models=True)
    for action in parser._actions:  # (the LLM flags' --dry-run shows prompts; bench's prices the battery)
        if action.dest == "dry_run":
            action.help = (
                "print, per task, the runs left and their estimated requests, tokens and dollars "
                "(--price-prompt/--price-completion); call nothing"
            )


def _models(args: argparse.Namespace) -> list[BenchModel]:
    from eq_env.agents.bench_demo import DEMO_MODELS
    from eq_env.core.cli import fill_spec, model_names
    from eq_env.core.policy import parse_policy_spec

    names: list[str | None] = [*model_names(args, DEMO_MODELS)]
    models = []
    for name in names or [None]:  # (no --model: $EQ_ENV_MODEL, else gpt-4.1, as every LLM command)
        _, kwargs = parse_policy_spec(fill_spec("llm", argparse.Namespace(**{**vars(args), "model": name})))
        model, base_url = kwargs.pop("model"), kwargs.pop("base_url", None)
        models.append(BenchModel(str(model), base_url, kwargs))
    return models


def _slug(model: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in model).strip("._") or "model"


def _out_dirs(out: Path, models: list[BenchModel]) -> list[Path]:
    """Each model's directory: ``out`` itself for one model, ``out/<model>`` for several — never one for two
    models (their cards would overwrite each other) nor the answer cache's."""
    if len(models) == 1:
        return [out]
    taken: dict[str, str] = {"llm_cache": "the answer cache"}
    for m in models:
        slug = _slug(m.model)
        if slug in taken:
            raise ValueError(
                f"--model {m.model!r}: its directory {out / slug} is {taken[slug]}'s too; rename one, "
                "or run them into separate --out directories"
            )
        taken[slug] = repr(m.model)
    return [out / _slug(m.model) for m in models]


def _print_plan(bat: Battery, model: BenchModel, out: Path, prices: tuple[float, float]) -> None:
    from eq_env.core.bench import plan

    p = plan(bat, model, out, prices)
    rows = [
        [
            r["task"],
            f"{r['runs_left']} of {r['runs']}",
            f"{r['episodes_left']:,}",
            f"{r['requests']:,.0f}",
            f"{r['prompt_tokens']:,.0f}",
            f"{r['completion_tokens']:,.0f}",
            f"{r['usd']:.2f}",
        ]
        for r in p.rows
    ]
    rows.append(
        [
            "total",
            f"{p.total('runs_left'):.0f} of {p.total('runs'):.0f}",
            f"{p.total('episodes_left'):,.0f}",
            f"{p.total('requests'):,.0f}",
            f"{p.total('prompt_tokens'):,.0f}",
            f"{p.total('completion_tokens'):,.0f}",
            f"{p.total('usd'):.2f}",
        ]
    )
    # (the model's name and the directory are the user's text, shown escaped: the name is sent as given)
    print(
        f"{bat.name} for {printable(model.model)} into {printable(out)}: what is left, estimated (cached "
        "answers cost nothing; nothing is called)"
    )
    print(
        markdown_table(["task", "runs left", "episodes", "requests", "prompt tokens", "completion tokens", "$"], rows)
    )


def _compare(args: argparse.Namespace) -> int:
    from eq_env.core.card import load_card, render_leaderboard

    # (a --dry-run would write the leaderboard all the same; --max-usd and --quick would mean nothing)
    given = [a for a in ("model", "base_url", "demo", "dry_run", "max_usd", "quick", "tasks") if getattr(args, a)]
    if given:
        raise ValueError(f"--compare reads finished runs: drop --{given[0].replace('_', '-')}")
    seen: dict[Path, Path] = {}
    for d in args.compare:
        if d.resolve() in seen:
            raise ValueError(f"--compare: {d} is {seen[d.resolve()]} again: name each benchmark directory once")
        seen[d.resolve()] = d
    cards = [load_card(d) for d in args.compare]
    wrote = render_leaderboard(cards, [str(d) for d in args.compare], args.out)
    print(printable((args.out / "leaderboard.md").read_text(), lines=True))
    print(f"wrote {', '.join(wrote)} to {printable(args.out)}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from eq_env.agents.local import is_local
    from eq_env.core.bench import run_battery, score_caveats
    from eq_env.core.card import render_leaderboard, write_card
    from eq_env.core.cli import configure_flag_groups, failures

    if args.compare:
        return _compare(args)
    bat = battery(args.battery, quick=args.quick)
    if args.tasks:
        bat = bat.select(args.tasks)
    prices = (args.price_prompt, args.price_completion)
    if args.max_usd is not None and prices == (0.0, 0.0):
        raise ValueError(
            "--max-usd needs the model's prices: give --price-prompt and --price-completion "
            "(dollars per million tokens)"
        )
    models = _models(args)
    outs = _out_dirs(args.out, models)
    server = None
    if args.demo:
        from eq_env.agents.bench_demo import demo_endpoint

        server = demo_endpoint()
    with server or nullcontext(None) as endpoint:
        if endpoint is not None:
            models = [BenchModel(m.model, endpoint, m.params) for m in models]
        if args.dry_run:
            for model, out in zip(models, outs, strict=True):
                _print_plan(bat, model, out, prices)
            return 0
        configure_flag_groups(args, args.out / "llm_cache")
        spent, status, failed = 0.0, 0, []
        start = time.perf_counter()
        for model, out in zip(models, outs, strict=True):
            budget = None if args.max_usd is None else args.max_usd - spent
            outcome = run_battery(bat, model, out, prices=prices, max_usd=budget, concurrency=args.concurrency)
            spent += outcome.spent_usd
            name = printable(model.model)  # (the user's text, shown escaped; sent as given)
            if outcome.status == "budget":
                print(
                    f"eq-env bench: stopped by --max-usd {args.max_usd:g}: ${spent:.4f} billed; the next chunk "
                    f"is estimated at ${outcome.next_usd:.4f}; {outcome.runs_left} run(s) of {name} left. "
                    "Everything played is saved in --out: run the same command with a larger --max-usd to go on.",
                    file=sys.stderr,
                )
                return STOPPED
            if outcome.status == "failing":
                print(
                    f"eq-env bench: stopped: every episode of the last chunk failed ({printable(outcome.error)}); "
                    f"{outcome.runs_left} run(s) of {name} left. "
                    + (
                        "Does the checkpoint take these prompts (its context, its chat template)? "
                        if is_local(model.base_url)
                        else "Is the endpoint up, the key and model right? "
                    )
                    + "Everything played is saved in --out: fix it and run the same command again.",
                    file=sys.stderr,
                )
                return STOPPED
            assert outcome.card is not None
            wrote = write_card(outcome.card, out)
            print(printable(_summary(outcome.card), lines=True))
            print(f"wrote {', '.join(wrote)} to {printable(out)}")
            failed += list(outcome.failed)
            for task in outcome.card["tasks"]:  # (the card marks these too; a script reading stderr sees them)
                for caveat in score_caveats(task["llm"]):
                    print(f"eq-env bench: {name}, {task['name']}: {caveat}", file=sys.stderr)
        if len(models) > 1:
            from eq_env.core.card import load_card

            wrote = render_leaderboard([load_card(o) for o in outs], [str(o) for o in outs], args.out)
            print(printable((args.out / "leaderboard.md").read_text(), lines=True))
            print(f"wrote {', '.join(wrote)} to {printable(args.out)}")
        print(
            f"{bat.name}: {len(models)} model(s) in {time.perf_counter() - start:.1f} s"
            + (f", ${spent:.4f} billed" if prices != (0.0, 0.0) else "")
        )
        status = failures("bench", failed, args.cache)
        if args.demo and status:
            print(
                "(--demo: bench-hostile's refusals are scripted, so these episodes fail again on every run; the "
                "status 3 shows how a real run reports failures)"
            )
    return status


def _summary(card: dict[str, Any]) -> str:
    from eq_env.core.card import render_card_markdown

    text = render_card_markdown(card)
    start = text.index("## Summary")
    return text[start : text.index("\n## ", start + 1)].rstrip() + "\n"


COMMAND = Command(
    "bench",
    "score a model on all three coordination tasks (a versioned battery) and write its model card",
    _arguments,
    _run,
    description=__doc__.split("\n\n")[0] if __doc__ else "",
    interrupted="finished runs and answers are saved in --out; run the same command to resume",
)
