"""LLM agents for eq_env (policies backed by an OpenAI-compatible endpoint).

Nothing is registered here yet: the LLM proposer and validator are the work of
issue #4. Scripted policies live in :mod:`baselines`.
"""

__all__: list[str] = []
