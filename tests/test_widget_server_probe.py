"""Which server the widget takes for its answer server (issue 42, defects 1
and 15), in Chromium: a site under ``/docs/`` on an origin whose own app
answers ``/api/health`` with ``{"status": "ok"}`` never sends it the
reader's question and answers in the browser; a static host is asked for a
server once per visit, and never where ``ragcite_server_url = "none"``; a
server that fails on a question gives way to the browser. A real ``ragcite
serve``, one site or several, is still found: the widget tests against it
(test_widget.py, test_widget_versions.py) cover that.
"""

from __future__ import annotations

import contextlib
import http.server
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from helpers.browser import QUESTION, ask
from helpers.repo import EXAMPLE_BOOK
from helpers.servers import serving_handler

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Three pages of the example book a reader opens in turn.
PAGES = ("index.html", "beans.html", "brewing/pour_over.html")


@pytest.fixture(scope="module")
def static_site(builds) -> Path:
    """The example book built for a host without a server."""
    built = builds.sphinx(
        EXAMPLE_BOOK,
        "-D",
        "ragcite_server_url=none",
        "-D",
        "ragcite_browser_answers=0",
        name="example_book_no_server",
    )
    assert built.warnings == ""
    return built.outdir


class OtherApp(http.server.SimpleHTTPRequestHandler):
    """An origin's own app with the built site under ``/docs/`` (as files):
    with ``health``, it answers ``GET /api/health`` with ``{"status": "ok"}``,
    a common health format, and any POST with 405. Records every request."""

    health = False
    served: list[tuple[str, str, int]]

    def do_GET(self) -> None:
        if self.health and urlsplit(self.path).path == "/api/health":
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def do_POST(self) -> None:
        self.send_error(405)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.served.append((self.command, urlsplit(self.path).path, code))
        super().send_response(code, message)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def origin(
    site: Path, tmp_path: Path, *, health: bool
) -> Iterator[tuple[str, list[tuple[str, str, int]]]]:
    """*site* at ``/docs/`` of a new origin; yields its URL and the requests."""
    top = tmp_path / "origin"
    top.mkdir()
    (top / "docs").symlink_to(site, target_is_directory=True)
    (top / "favicon.ico").write_bytes(b"")  # the browser asks: no 404 for it
    served: list[tuple[str, str, int]] = []
    handler = type("App", (OtherApp,), {"health": health, "served": served})
    with serving_handler(handler, top) as url:
        yield url, served


def health_asked(served: list[tuple[str, str, int]]) -> list[str]:
    return [path for _, path, _ in served if path.endswith("/api/health")]


def outside(served: list[tuple[str, str, int]]) -> list[str]:
    """What was asked of the origin outside the site (the browser's own
    ``/favicon.ico`` aside)."""
    return [
        path
        for _, path, _ in served
        if not path.startswith("/docs/") and path != "/favicon.ico"
    ]


def open_pages(page, base: str) -> None:
    """Open the panel on each of ``PAGES``, waiting until it has decided
    whether a server answers (it then shows static mode)."""
    for name in PAGES:
        page.goto(f"{base}/docs/{name}")
        page.evaluate("window.ragcite.open()")
        page.wait_for_selector("#ragcite-root.ragcite-static", state="attached")


def test_another_apps_health_never_gets_the_question(
    watched_page, engine_site: Path, tmp_path: Path
) -> None:
    with origin(engine_site, tmp_path, health=True) as (base, served):
        watched_page.goto(f"{base}/docs/brewing/pour_over.html")
        answer = ask(watched_page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"
        assert watched_page.locator(".ragcite-error").is_hidden()
        assert [r for r in served if r[0] != "GET"] == []
        assert [m for m, _ in watched_page.requests if m != "GET"] == []
        assert [
            u for _, u in watched_page.requests if not u.startswith(f"{base}/")
        ] == []
        # the site's own files, and the two places a server could be
        assert outside(served) == ["/api/health"], served
        assert health_asked(served) == ["/docs/api/health", "/api/health"]


def test_a_static_host_is_asked_for_a_server_once_per_visit(
    watched_page, engine_site: Path, tmp_path: Path
) -> None:
    with origin(engine_site, tmp_path, health=False) as (base, served):
        open_pages(watched_page, base)
        assert health_asked(served) == ["/docs/api/health", "/api/health"]
        # the only console errors: the browser's own lines for those two 404s
        assert len(watched_page.console_errors) <= 2, watched_page.console_errors
        assert all("404" in e for e in watched_page.console_errors), (
            watched_page.console_errors
        )


def test_no_server_configured_asks_nothing_and_the_console_stays_clean(
    watched_page, static_site: Path, tmp_path: Path
) -> None:
    with origin(static_site, tmp_path, health=True) as (base, served):
        open_pages(watched_page, base)
        result = ask(watched_page, QUESTION)
        assert result["mode"] == "static"
        assert health_asked(served) == []
        assert outside(served) == []
        assert watched_page.console_errors == [], [s for s in served if s[2] >= 400]


def test_a_server_that_fails_on_a_question_gives_way_to_the_browser(
    watched_page, example_server: str
) -> None:
    """A real ``ragcite serve`` is found; when its answer fails (a proxy's
    502 here), the question goes to the browser (askStatic, then the engine
    where it can run), not to an error. The server's own pages forbid
    WebAssembly (its CSP), so here the browser gives search results and says
    why."""
    watched_page.route(
        "**/api/ask/stream",
        lambda route: route.fulfill(status=502, body="<html>Bad Gateway</html>"),
    )
    watched_page.goto(f"{example_server}/brewing/pour_over.html")
    result = ask(watched_page, QUESTION)
    assert result["mode"] == "static"
    assert result["hits"]
    assert watched_page.locator(".ragcite-error").is_hidden()
    posts = [u for m, u in watched_page.requests if m == "POST"]
    assert posts == [f"{example_server}/api/ask/stream"]
