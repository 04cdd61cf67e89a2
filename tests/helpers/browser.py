"""Chromium for the tests, and what they do on a page.

The Debian ``chromium`` package, driven by Python playwright (never a
downloaded browser); the session's browser and its pages are fixtures
(``chromium``, ``browser``, ``page``, ``watched_page`` in conftest). Here:
asking the widget, waiting for a highlight, reading the quote it marks, the
screenshots, and watching a page for the browser engine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks._browser_page import OBSERVE

from helpers.repo import REPO

#: The Debian ``chromium`` package, driven by Python playwright (never a
#: downloaded browser).
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
#: Screenshots of the browser tests, for people to look at.
SHOTS = Path("/tmp/ragcite-shots")

#: Where the docs' screenshots are (``RAGCITE_UPDATE_SCREENSHOTS=1``).
DOC_SHOTS = REPO / "docs" / "_static" / "screenshots"
UPDATE_SHOTS = os.environ.get("RAGCITE_UPDATE_SCREENSHOTS") == "1"
#: The question the widget and engine tests ask of the example book.
QUESTION = "How long is the bloom?"


class Problems(list):
    """Uncaught page errors and CSP violations seen by a page."""


# -- asking and reading the widget ---------------------------------------------


def ask(page, question: str, **options: Any) -> dict:
    """``window.ragcite.ask``: the answer (or search results) the widget shows."""
    return page.evaluate(
        "([q, o]) => window.ragcite.ask(q, o)", [question, options or {}]
    )


def ask_api(base: str, question: str, **extra: Any) -> dict:
    """``POST {base}/api/ask``, outside the page."""
    body = json.dumps({"question": question, **extra}).encode()
    request = urllib.request.Request(
        f"{base}/api/ask", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


#: Whether the element of an ID is on screen and not covered.
IN_VIEW = """(id) => {
  const el = document.getElementById(id);
  if (!el) return false;
  const r = el.getBoundingClientRect();
  if (r.top < 0 || r.top > innerHeight - 16) return false;
  if (r.left < 0 || r.left > innerWidth) return false;
  const hit = document.elementFromPoint(r.left + 4, r.top + 4);
  return Boolean(hit && (el === hit || el.contains(hit)));
}"""


def wait_highlighted(page, passage_id: str) -> None:
    page.wait_for_function(
        "(id) => document.getElementById(id)?.classList.contains('ragcite-highlight')",
        arg=passage_id,
        timeout=5000,
    )
    page.wait_for_function(IN_VIEW, arg=passage_id, timeout=5000)


#: What the page marks as the quote: CSS highlight ranges, else <mark> slices.
QUOTE_MARKED = """() => {
  const h = window.CSS && CSS.highlights && CSS.highlights.get('ragcite-quote');
  if (h && h.size) return {api: 'highlight', parts: [...h].map((r) => r.toString())};
  const marks = [...document.querySelectorAll('mark.ragcite-quote')];
  return marks.length ? {api: 'mark', parts: marks.map((m) => m.textContent)} : null;
}"""


def words(text: str) -> str:
    """*text* with its whitespace runs made one space."""
    return " ".join(text.split())


def squeezed(text: str) -> str:
    """Text as the widget compares it: no whitespace, no table bars."""
    return "".join(ch for ch in text if not ch.isspace() and ch != "|")


RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE, never closed

AFTER = """([selector, a, b]) => {
  // the boxes of the first occurrences of a and b in the element's text
  // (b searched after a); a marker is named by its own text "[n]"
  const root = document.querySelector(selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const boxes = [];
  let want = a;
  for (let n = walker.nextNode(); n && want !== null; n = walker.nextNode()) {
    let from = 0;
    while (want !== null) {
      const i = n.data.indexOf(want, from);
      if (i < 0) break;
      const r = document.createRange();
      r.setStart(n, i);
      r.setEnd(n, i + want.length);
      const box = r.getBoundingClientRect();
      boxes.push({left: box.left, right: box.right, top: box.top});
      from = i + want.length;
      want = want === a ? b : null;
    }
  }
  return boxes;
}"""


def assert_reads_in_order(page, selector: str, a: str, b: str) -> None:
    """*b* comes after *a* in the text and shows right of it on the same line."""
    boxes = page.evaluate(AFTER, [selector, a, b])
    assert len(boxes) == 2, (selector, a, b, boxes)
    first, second = boxes
    assert abs(first["top"] - second["top"]) < 4, (a, b, boxes)  # kept on one line
    assert second["left"] >= first["right"] - 1, (selector, a, b, boxes)


# -- screenshots ---------------------------------------------------------------


#: What the panel pictures: the last question and its result, as the widget
#: keeps them for the next page (``ragcite:last``).
PICTURED = """() => {
  let last = null;
  try { last = JSON.parse(sessionStorage.getItem('ragcite:last') || 'null'); } catch {}
  if (!last || !last.data) return null;
  const a = last.data;
  return {
    question: last.question, selection: last.selection || null, kind: last.kind,
    outcome: a.outcome || null,
    confidence: typeof a.confidence === 'number'
      ? Math.round(a.confidence * 100) : null,
    generator: (a.metadata && a.metadata.generator) || null,
    engine: (a.metadata && a.metadata.engine) || 'server',
    cited: (a.citations || []).map((c) => c.passage_id).filter(Boolean),
  };
}"""


def shot(page, name: str, docs: bool = False, book: str = "example_book") -> None:
    """A screenshot for people to look at; *docs*: one the docs show, copied
    there with ``RAGCITE_UPDATE_SCREENSHOTS=1`` (tools/docs_screenshots.py),
    beside a record of what it pictures (``<name>.json`` in SHOTS), which
    tests/test_docs_screenshots.py holds against this build's answers."""
    path = SHOTS / name
    page.screenshot(path=str(path))
    if docs:
        record = {"name": name, "book": book, "pictured": page.evaluate(PICTURED)}
        path.with_suffix(".json").write_text(json.dumps(record, indent=1), "utf-8")
    if docs and UPDATE_SHOTS:
        shutil.copyfile(path, DOC_SHOTS / name)


# -- the browser engine --------------------------------------------------------


def watched(page):
    """*page*, recording every request (its workers' too), error and console
    error or warning, and watched by ``OBSERVE`` (the engine's messages, its
    progress, long tasks)."""
    page.set_default_timeout(60_000)
    page.requests = []
    page.errors = []
    page.console_errors = []
    page.on("request", lambda r: page.requests.append((r.method, r.url)))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on(
        "console",
        lambda m: page.console_errors.append(m.text) if m.type == "error" else None,
    )
    page.console_warnings = []
    page.on(
        "console",
        lambda m: page.console_warnings.append(m.text) if m.type == "warning" else None,
    )
    page.add_init_script(OBSERVE)
    return page


def engine_requests(page, base: str) -> list[str]:
    """The requests that belong to answers in the browser."""
    pattern = re.compile(r"/_ragcite/|/_static/ragcite/(browser|worker|store)\.js")
    return [
        url for _, url in page.requests if url.startswith(base) and pattern.search(url)
    ]
