"""Sphinx configuration of the eq_env documentation (MyST Markdown, the Furo theme).

The game, command and API pages are generated at every build by the local extension ``_ext/eq_env_pages.py``
from the registry (``eq_env.core.spec.registered_envs()``) and the ``eq-env`` parser, so that moving a module
moves its page. Build: ``sphinx-build -W --keep-going -n docs docs/_build/html`` (``.ci/docs``).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))  # the checkout's eq_env, before an installed one

project = "eq_env"
author = "eq_env contributors"
copyright = "2026, eq_env contributors"

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "eq_env_pages"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_ext"]
html_theme = "furo"
html_title = "eq_env"
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # GitHub-style anchors (`#a-pettingzoo-loop`) for the pages' own links

autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # (a view's step() would show gymnasium's own docstring, its RST broken)
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Every cross-reference must resolve (-n). Names the docs have no page for — builtins, other libraries' (no
# intersphinx offline), eq_env's outside the API reference — show as code when they exist (the extension's
# missing-reference handler, which lists them in _build/unresolved.txt); a name that exists nowhere fails.
nitpicky = True
# typing artefacts of the signatures: type variables (ours, PettingZoo's generics) and a name imported only for type
# checking
nitpick_ignore = [("py:class", n) for n in ("ConfigT", "AgentID", "ObsType", "ActionType", "AECEnv")]
html_static_path = ["_static"]
# (without an icon of its own a browser asks the server for /favicon.ico: a 404 in every page's console)
html_favicon = "_static/favicon.svg"
