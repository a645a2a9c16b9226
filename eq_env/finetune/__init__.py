"""Training LLMs in the games: demonstrations for every LLM role, SFT and multi-turn GRPO with TRL, a model from
scratch (``eq-env finetune``; :mod:`eq_env.finetune.cli`).

Only :mod:`.demos` and :mod:`.data` work without the ``finetune`` extra; nothing here is imported by ``import
eq_env``.
"""
