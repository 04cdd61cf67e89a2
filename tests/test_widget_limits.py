"""The question's limits in the real widget, in Chromium: counted as the server
counts them (code points), a long paste cut with a word, and text the server
refuses (lone surrogates) refused with its sentence before any search.

Issue 42: 1,001 emoji were refused as "2,002 characters" (UTF-16 units),
the textarea's ``maxlength`` cut a paste of emoji at 1,000 and a paste of
20,000 characters at 2,000 without a word, and ``"\\ud800 bloom \\udfff"``
was answered in the browser where the server sends a 400.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="pip install playwright (no browser download)"
)
pytestmark = pytest.mark.slow

QUESTION = "#ragcite-question"
#: JS expressions: a lone surrogate cannot cross into the page as a Python str.
LONE = "'\\ud800 bloom \\udfff'"
EMOJI = "'\\u{1F600}'"


def server_refusal(base: str, body: bytes) -> tuple[int, str]:
    """The answer server's status and message for a raw JSON body."""
    request = urllib.request.Request(
        f"{base}/api/ask", body, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, ""
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["error"]["message"]


def open_panel(page: Any, url: str) -> Any:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(url)
    page.locator(".ragcite-launcher").click()
    box = page.locator(QUESTION)
    box.focus()
    return box


def paste(page: Any, expression: str) -> None:
    """A real paste (Ctrl+V) of what the JS *expression* gives."""
    page.evaluate(f"() => navigator.clipboard.writeText({expression})")
    page.keyboard.press("Control+V")


def typed(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => {
          const box = document.querySelector("#ragcite-question");
          return {
            units: box.value.length,
            points: Array.from(box.value).length,
            counter: document.querySelector(".ragcite-count").textContent,
            status: document.querySelector(".ragcite-status").textContent,
          };
        }"""
    )


def asked_error(page: Any, arguments: str) -> str | None:
    """The message ``window.ragcite.ask(<arguments>)`` rejects with (JS
    source: a lone surrogate cannot cross into the page as a Python str)."""
    return page.evaluate(
        f"() => window.ragcite.ask({arguments}).then(() => null, (e) => e.message)"
    )


def settled(page: Any) -> None:
    page.wait_for_function(
        """() => document.querySelector(".ragcite-output").childElementCount > 0
             || !document.querySelector(".ragcite-error").hidden""",
        timeout=30_000,
    )


def test_emoji_count_one_each_as_the_server_counts(page, example_server: str) -> None:
    open_panel(page, f"{example_server}/index.html")
    paste(page, f"{EMOJI}.repeat(2000)")
    got = typed(page)
    # maxlength (UTF-16 units) kept 1,000 of them
    assert got["points"] == 2000, got
    assert got["counter"] == "2000 / 2000"
    assert got["status"] == ""
    # the server takes 2,000 emoji: so does the widget, and sends them all
    body = json.dumps({"question": "😀" * 2000}).encode()
    assert server_refusal(example_server, body)[0] == 200
    with page.expect_request("**/api/ask/stream") as asked:
        page.keyboard.press("Enter")
    assert json.loads(asked.value.post_data)["question"] == "😀" * 2000
    settled(page)
    error = page.locator(".ragcite-error")
    assert error.is_hidden(), error.text_content()
    # one more is over the limit, counted as the server counts it
    status, message = server_refusal(
        example_server, json.dumps({"question": "😀" * 2001}).encode()
    )
    assert (status, message) == (400, "question: must be at most 2000 characters")
    refused = asked_error(page, f"{EMOJI}.repeat(2001)")
    assert refused == "The question has 2001 characters; the limit is 2000."


def test_a_long_paste_is_cut_to_the_limit_and_says_so(page, example_files: str) -> None:
    box = open_panel(page, f"{example_files}/index.html")
    paste(page, "'x'.repeat(20000)")
    got = typed(page)
    assert got["units"] == 2000
    assert got["counter"] == "2000 / 2000"
    assert got["status"] == "Your question was cut to 2,000 characters, the limit."
    # emoji cut where the paste went in, never half a pair
    box.fill("")
    paste(page, f"'ab' + {EMOJI}.repeat(2500)")
    got = typed(page)
    assert (got["points"], got["units"]) == (2000, 2 + 2 * 1998)
    assert "cut to 2,000" in got["status"]
    # typing at the limit adds nothing
    page.keyboard.press("Control+End")
    page.keyboard.type("zz")
    assert typed(page)["points"] == 2000
    assert not page.evaluate(
        f"/[\\ud800-\\udfff]/u.test(document.querySelector('{QUESTION}').value)"
    )


@pytest.mark.parametrize("served", ["server", "static"])
def test_lone_surrogates_are_refused_with_the_servers_sentence(
    page, served: str, example_server: str, example_files: str
) -> None:
    base = example_server if served == "server" else example_files
    searched: list[str] = []
    watched = ("/search.", "/api/ask")
    page.on(
        "request",
        lambda r: searched.append(r.url) if any(w in r.url for w in watched) else None,
    )
    page.goto(f"{base}/index.html")
    page.wait_for_function("() => window.ragcite !== undefined")
    error = asked_error(page, LONE)
    status, sentence = server_refusal(
        example_server, b'{"question": "\\ud800 bloom \\udfff"}'
    )
    assert status == 400
    assert error == sentence
    # the server says it in its own words, not pydantic's
    assert sentence == "question: must be valid Unicode text (no lone surrogates)"
    shown = page.locator(".ragcite-error")
    assert shown.is_visible()
    assert shown.text_content() == f"Cannot ask that: {sentence}"
    assert page.locator(".ragcite-results").count() == 0
    # refused before any search: nothing fetched for it, nothing sent
    assert searched == []
    # a selection holding one is refused as the server refuses it
    status, about = server_refusal(
        example_server,
        b'{"question": "bloom", "mode": "selection", "selection": "\\udfff"}',
    )
    assert status == 400
    assert asked_error(page, "'bloom', {selection: 'beans \\udfff'}") == about
