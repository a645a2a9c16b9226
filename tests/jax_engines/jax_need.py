"""The JAX engines' tests: JAX, JaxMARL and optax are the ``jax`` extra (``pip install '.[jax]'``), not the main
test environment's. Without them the modules skip with that reason, except where ``EQ_ENV_REQUIRE_JAX=1``
(``.ci/jax`` sets it), where a missing library fails.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRE = "EQ_ENV_REQUIRE_JAX"


def need(*modules: str) -> None:
    """Skip the calling module, saying which libraries it needs, when one is missing (fail under REQUIRE=1)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = f"needs {', '.join(missing)}: pip install '.[jax]' (or run .ci/jax)"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but the JAX engine tests {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)
