"""The built site in a real browser (issue 49): headless Chromium (Debian's, installed by
``.ci/run``) driven by Playwright opens the site served on loopback. The home page and a guide load
without console errors, the navigation reaches every page the site has, and the search finds a
term from a guide. Screenshots are kept in ``tests/output/site/`` for a person to look at."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOTS = ROOT / "tests" / "output" / "site"
# As the machine's notes say: without the background-networking flags Chromium reaches out of the
# closed network at every start.
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason="Chromium is not installed (.ci/run installs Debian's chromium)"
)


@dataclass(frozen=True)
class Site:
    url: str
    built: Path

    def pages(self) -> set[str]:
        """Every page the site has, as the path after ``url``."""
        return {
            "" if page.parent == self.built else f"{page.parent.relative_to(self.built).as_posix()}/"
            for page in self.built.rglob("index.html")
        }


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    built = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(built)],
        cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=120,
    )  # fmt: skip
    handler = functools.partial(_QuietHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_address[1]}/", built)
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def test_the_site_works_in_a_browser(site: Site) -> None:
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))

        page.goto(site.url)
        assert "asyncai" in page.title()
        page.screenshot(path=SCREENSHOTS / "home.png", full_page=True)
        linked = {
            href.removeprefix(site.url).split("#")[0]
            for href in page.eval_on_selector_all(
                "nav.md-nav--primary a.md-nav__link[href]", "as => as.map(a => a.href)"
            )
        }

        page.goto(site.url + "guides/skills/")
        assert page.locator("h1").first.inner_text().rstrip("¶") == "Skills"
        page.screenshot(path=SCREENSHOTS / "guide.png", full_page=True)

        page.goto(site.url)
        page.keyboard.press("/")  # the search box, as a reader opens it
        page.locator("input.md-search__input").press_sequentially("speculative", delay=50)
        results = page.locator("a.md-search-result__link")
        results.first.wait_for(timeout=15_000)
        found = results.evaluate_all("as => as.map(a => a.href)")
        page.screenshot(path=SCREENSHOTS / "search.png")
        browser.close()

    assert errors == []
    assert site.pages() - linked == set(), "pages the navigation does not reach"
    assert any("guides/asking/" in href for href in found), found  # a term of that guide
