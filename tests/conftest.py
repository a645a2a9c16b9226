"""The test suite's own game: :mod:`toy_game` (three agents, multi-turn), registered beside the package's
games so that every registry-derived test — the conformance battery first — runs on it too."""

import sys

# Compiled modules are cached (in __pycache__, ignored by git) even where PYTHONDONTWRITEBYTECODE is set, as on
# CI machines: without the cache every run recompiles the package and pytest rewrites every test module again
# (15 s of a fast run here), and each of the suite's subprocesses compiles the package afresh (about 1 s each).
# Subprocesses only read the cache, which is what saves their second.
sys.dont_write_bytecode = False

import pytest  # noqa: E402 - after the setting above, so that what it imports is cached too
import toy_game  # noqa: E402, F401 - registers "eq_env/relay-v0" (tests only)

import eq_env  # noqa: E402, F401 - the package's games first: the first registered is the default


@pytest.fixture(autouse=True)
def _llm_settings_restored():
    """Every test starts from the LLM client's settings as they were: a command run in process (``--no-endpoint-check``,
    ``--cache read``...) sets them for the whole process, and must not change what a later test sees."""
    from eq_env.agents.client import configure, settings

    before = settings()
    yield
    configure(**{k: getattr(before, k) for k in before.__dataclass_fields__})


@pytest.fixture
def fast_llm(tmp_path):
    """An LLM test's settings: its own cache directory, short backoffs and timeouts, two retries, no answers left
    in memory before or after (``pytestmark = pytest.mark.usefixtures("fast_llm")``)."""
    from eq_env.agents.client import LLMClient, configure

    configure(cache="readwrite", cache_dir=tmp_path / "llm_cache", backoff=0.01, max_backoff=0.05, timeout=2.0,
              max_retries=2)  # fmt: skip
    LLMClient.forget()
    yield
    LLMClient.forget()  # (the settings themselves are restored by _llm_settings_restored)
