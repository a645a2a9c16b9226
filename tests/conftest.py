"""The test suite's own game: :mod:`toy_game` (three agents, multi-turn), registered beside the package's
games so that every registry-derived test — the conformance battery first — runs on it too."""

import toy_game  # noqa: F401 - registers "eq_env/relay-v0" (tests only)

import eq_env  # noqa: F401 - the package's games first: the first registered is the default
