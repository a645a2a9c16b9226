"""The built documentation site: every internal link and anchor resolves, and every page opens in a real
headless browser (Chromium, driven by Playwright) with no console error and every image loaded.

The site is built by ``sphinx-build -W --keep-going -n docs docs/_build/html`` (``.ci/docs``; another directory
with ``EQ_ENV_DOCS_HTML``). Outside that stage, a site not built, or no Chromium / playwright, skips with the
reason; the stage sets ``EQ_ENV_REQUIRE_DOCS=1``, which makes each of those a failure. No page is fetched from
outside: the pages are served from 127.0.0.1, and an external link is only checked to be well formed.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("EQ_ENV_DOCS_HTML", ROOT / "docs" / "_build" / "html"))
REQUIRED = os.environ.get("EQ_ENV_REQUIRE_DOCS") == "1"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


def _unmet(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"EQ_ENV_REQUIRE_DOCS=1 but {why}")
    pytest.skip(why)


def _pages() -> list[Path]:
    if not (SITE / "index.html").is_file():
        _unmet(f"the docs are not built in {SITE} (sphinx-build -W --keep-going -n docs docs/_build/html)")
    return sorted(p for p in SITE.rglob("*.html") if "_static" not in p.parts)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("id", "name"):
            if found.get(key) and (key == "id" or tag == "a"):
                self.ids.add(str(found[key]))
        for key in ("href", "src"):
            if found.get(key) and tag in ("a", "img", "link", "script"):
                self.links.append(str(found[key]))


@functools.cache
def _parsed(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text())
    return parser


def test_every_internal_link_and_anchor_resolves() -> None:
    pages = _pages()
    assert len(pages) >= 20, f"only {len(pages)} pages"
    broken = []
    for page in pages:
        for link in _parsed(page).links:
            if urlsplit(link).scheme in ("http", "https", "mailto", "data"):
                assert urlsplit(link).scheme in ("mailto", "data") or urlsplit(link).netloc, link
                continue
            target, anchor = urlsplit(urldefrag(link)[0]).path, urldefrag(link)[1]  # (a ?v= query: the same file)
            path = (page.parent / unquote(target)).resolve() if target else page
            if path.is_dir():
                path = path / "index.html"
            if not path.is_file():
                broken.append(f"{page.relative_to(SITE)}: {link} (no file)")
            elif anchor and path.suffix == ".html" and unquote(anchor) not in _parsed(path).ids:
                broken.append(f"{page.relative_to(SITE)}: {link} (no anchor)")
    assert broken == []
    labels = [
        f"{p.relative_to(SITE)}: {m[0]}"
        for p in pages
        for m in [re.search(r"\bissue \d+\b.{0,30}", p.read_text())]
        if m
    ]
    assert labels == [], "the tracker's labels are not for the docs' readers"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    _pages()
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # (the test reports what failed)
        pass


def _chromium() -> str:
    found = os.environ.get("EQ_ENV_CHROMIUM") or next(
        (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None
    )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unmet("the playwright package is not installed (pip install -e '.[docs]')")
    if not found:
        _unmet("no Chromium found (apt-get install -y chromium, or set EQ_ENV_CHROMIUM)")
    assert found is not None
    return found


@pytest.mark.slow  # (a browser and every page: some seconds)
def test_every_page_opens_in_a_browser_without_errors_and_its_images_load(served: str) -> None:
    from playwright.sync_api import sync_playwright

    pages = _pages()
    problems: list[str] = []
    images = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page()
            messages: list[str] = []
            tab.on("console", lambda m: messages.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            tab.on("pageerror", lambda e: messages.append(f"page error: {e}"))
            tab.on("requestfailed", lambda r: messages.append(f"request failed: {r.url} {r.failure}"))
            tab.on("response", lambda r: messages.append(f"status {r.status}: {r.url}") if r.status >= 400 else None)
            for page in pages:
                messages.clear()
                url = f"{served}/{page.relative_to(SITE).as_posix()}"
                response = tab.goto(url, wait_until="load")
                if response is None or response.status != 200:
                    problems.append(f"{url}: status {response and response.status}")
                shown = tab.evaluate("Array.from(document.images).map(i => [i.src, i.complete, i.naturalWidth])")
                images += len(shown)
                problems += [f"{url}: image {src} did not load" for src, ok, width in shown if not (ok and width > 0)]
                # (the icon, fetched after "load", is aborted by the next navigation: aborted, not missing)
                problems += [f"{url}: {m}" for m in messages if not m.endswith("favicon.svg net::ERR_ABORTED")]
        finally:
            browser.close()
    assert problems == []
    print(f"{len(pages)} pages, {images} images")
