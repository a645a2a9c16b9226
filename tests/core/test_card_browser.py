"""The HTML model card and leaderboard in a real headless browser (Chromium, driven by Playwright): they
render, every embedded plot loads, nothing is fetched, and the console stays free of errors.

Needs Chromium (Debian: ``apt-get install chromium``; elsewhere point ``EQ_ENV_CHROMIUM`` at a Chrome or
Chromium binary) and the ``playwright`` package (in the test extra). Without a browser the test is skipped
with that reason — except where ``EQ_ENV_REQUIRE_BROWSER=1`` (CI sets it), where a missing browser fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_bench import BATTERY, _model

from eq_env.agents.exchange_audit.scripts import honest_script
from eq_env.agents.fake_server import ScriptedLLMServer
from eq_env.core.bench import run_battery
from eq_env.core.card import load_card, render_leaderboard, write_card

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_llm")]

# as the machine's own probe started it: no sandbox as root, and none of the background connections that a
# closed network refuses (they would only add noise, not console errors of the page)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip


def _chromium() -> str:
    found = os.environ.get("EQ_ENV_CHROMIUM") or next(
        (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    why = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        why = "the playwright package is not installed (pip install -e '.[test]')"
    if why is None and not found:
        why = "no Chromium found (apt-get install chromium, or set EQ_ENV_CHROMIUM)"
    if why:
        if os.environ.get("EQ_ENV_REQUIRE_BROWSER") == "1":
            pytest.fail(f"EQ_ENV_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    assert found is not None
    return found


def _open(page_path: Path) -> dict[str, Any]:
    """Load a page in headless Chromium: what its console said, which requests it made or failed, and its
    images' and tables' state."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, Any] = {"console": [], "errors": [], "requests": [], "failed": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: seen["console"].append((m.type, m.text)))
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.on("request", lambda r: seen["requests"].append(r.url))
            page.on("requestfailed", lambda r: seen["failed"].append(r.url))
            page.goto(page_path.as_uri(), wait_until="load")
            seen["images"] = page.evaluate(
                "Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.naturalHeight])"
            )
            seen["tables"] = page.evaluate("document.querySelectorAll('table').length")
            seen["title"] = page.title()
            seen["text"] = page.inner_text("body")
        finally:
            browser.close()
    return seen


def test_the_card_and_the_leaderboard_render_in_a_browser(tmp_path):
    _chromium()  # (skip or fail before any work)
    with ScriptedLLMServer(honest_script) as server:
        for name in ("m1", "m2"):
            outcome = run_battery(BATTERY, _model(server, name), tmp_path / name, progress=False)
            write_card(outcome.card, tmp_path / name)
    render_leaderboard([load_card(tmp_path / n) for n in ("m1", "m2")], ["m1", "m2"], tmp_path / "board")
    # the card must not need its directory: open a copy alone
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(tmp_path / "m1" / "card.html", alone / "card.html")
    for page_path, images, tables in ((alone / "card.html", 1, 4), (tmp_path / "board" / "leaderboard.html", 1, 1)):
        seen = _open(page_path)
        assert seen["errors"] == [] and [m for m in seen["console"] if m[0] in ("error", "warning")] == []
        assert seen["failed"] == [] and seen["requests"] == [page_path.as_uri()]  # the page alone: nothing fetched
        assert len(seen["images"]) == images and all(ok and w > 100 and h > 100 for ok, w, h in seen["images"])
        assert seen["tables"] == tables  # (the card: header, summary, the task and its reference)
    card = _open(alone / "card.html")
    assert card["title"] == "m1 on test-v1" and "exchange-audit/test-proposer" in card["text"]
