"""``--dry-run`` for belief coordination: what each LLM coordinator would be sent for seed 0's first question (the
commands print it instead of calling anything)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["dry_run"]


def dry_run(config: object, policies: Mapping[str, Sequence[str]]) -> int:
    """``--dry-run``: what each LLM coordinator among ``policies`` (role → specs) would be sent for seed 0's first
    question, the executors playing at (0.7, 1.1) with the simulated answerer; nothing is called."""
    from eq_env import belief_coordination_v0
    from eq_env.core.policy import make_policy

    shown = 0
    for spec in dict.fromkeys(policies.get("coordinator", ())):
        policy: Any = make_policy(spec, "coordinator", "belief-coordination")
        if not callable(getattr(policy, "messages", None)):
            continue
        env = belief_coordination_v0.parallel_env(config=config)
        obs, _ = env.reset(seed=0)
        while obs["coordinator"]["idle"]:
            obs, *_ = env.step({a: None if obs[a]["idle"] else _fixed_action(obs[a]) for a in env.agents})
        print(f"===== coordinator: {policy!r} =====")
        for m in policy.messages(obs["coordinator"]):
            print(f"--- {m['role']} ---\n{m['content']}")
        print('--- reply: a justification, then a last line "#### N" ---\n')
        shown += 1
    if any(spec.startswith("llm") for spec in policies.get("executor", ())):
        print("executors choose (T, p); an LLM answers them only through --answerer llm of eq-env reproduce")
    if not shown:
        print("no LLM coordinator among the policies: nothing would be sent")
    return 0


def _fixed_action(observation: Mapping[str, object]) -> object:
    from eq_env.baselines.belief_coordination.scripted import as_action

    return as_action(observation, 0.7, 1.1)
