"""``--dry-run`` for the Einstein puzzle: what each LLM player would be sent on its first turn, and the grammar its
reply must follow (the commands print it instead of calling anything)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["dry_run"]


def dry_run(config: object, policies: Mapping[str, Sequence[str]]) -> int:
    """``--dry-run``: what each LLM player among ``policies`` (role → specs) would be sent on its first turn
    of seed 0's first game, and the grammar its reply must follow; nothing is called."""
    from eq_env import einstein_puzzle_v0
    from eq_env.agents.einstein_puzzle.prompt import render_messages
    from eq_env.core.policy import make_policy
    from eq_env.einstein_puzzle.grammar import GRAMMAR

    env = einstein_puzzle_v0.env(config=config)
    shown = 0
    for role, specs in policies.items():
        for spec in dict.fromkeys(specs):
            policy = make_policy(spec, role, "einstein-puzzle")
            if not hasattr(policy, "prompt_version"):
                continue
            env.reset(seed=0)
            while env.agent_selection != role:  # (the top seat sees the game after the bottom seat's pass)
                env.step(env.unwrapped.action_space(env.agent_selection).n - 1)
            text = env.observe(role)["text"]
            messages = render_messages(text, policy.prompt_version, reasoning=bool(getattr(policy, "reasoning", False)))
            print(f"===== {role}: {policy!r}, prompt {policy.prompt_version} =====")
            for m in messages:
                print(f"--- {m['role']} ---\n{m['content']}")
            print(f"--- reply: one action ---\n{GRAMMAR}\n")
            shown += 1
    if not shown:
        print("no LLM player among the policies: nothing would be sent")
    return 0
