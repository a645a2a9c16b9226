"""The finetune tests: TRL, transformers and the in-process ``hf`` policies on a tiny model made here (a tokenizer
trained on the game's own text, random weights: nothing is downloaded).

The libraries are the ``finetune`` extra (``pip install '.[finetune]'``), not the main test environment's: without
them the modules skip with that reason, except where ``EQ_ENV_REQUIRE_FINETUNE=1`` (``.ci/finetune`` sets it),
where a missing library fails.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRE = "EQ_ENV_REQUIRE_FINETUNE"


def need(*modules: str) -> None:
    """Skip the calling module, saying which libraries it needs, when one is missing (fail under REQUIRE=1)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"needs {', '.join(missing)}: pip install '.[finetune]' (or run .ci/finetune)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but the finetune tests {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)
