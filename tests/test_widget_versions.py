"""Reader -> version picker: two versions of the example book in one server.

The browser, page and two-version server fixtures are the session's
(conftest): the Debian ``chromium`` driven by Python playwright,
failing a test on any page error or CSP violation; the example book (1.0)
served as ``v1`` beside its edited copy (2.0, the bloom paragraph changed) as
``v2``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from helpers.browser import (
    QUESTION,
    RLO,
    SHOTS,
    ask,
    assert_reads_in_order,
    shot,
    wait_highlighted,
)
from helpers.builds import BLOOM_V1, BLOOM_V2
from helpers.servers import free_port, ragcite_serve

if TYPE_CHECKING:
    from pathlib import Path

PICKER = "Answers from version"
#: Collects every rendered answer (the widget's ``ragcite:answer`` event).
COLLECT = """() => {
  window.__answers = [];
  document.addEventListener("ragcite:answer", (e) => window.__answers.push(e.detail));
}"""
#: A "Passages" outcome in both versions of the example book.
NO_SURE_ANSWER = "Who invented the French press?"


def open_panel(page) -> None:
    page.wait_for_function("() => window.ragcite !== undefined")
    page.locator(".ragcite-launcher").click()
    page.locator("#ragcite-question").wait_for(state="visible")


def ask_in_form(page, question: str) -> dict[str, Any]:
    """Type a question and press Enter, as a reader does; the answer shown."""
    page.evaluate(COLLECT)
    box = page.locator("#ragcite-question")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__answers.length > 0")
    return page.evaluate("window.__answers[0]")


def options(page) -> list[tuple[str, str]]:
    pairs = page.eval_on_selector_all(
        "#ragcite-version option", "os => os.map(o => [o.value, o.textContent])"
    )
    return [(value, text) for value, text in pairs]


def source_links(page) -> list[str]:
    return page.eval_on_selector_all(
        "li[data-ragcite-source] a.ragcite-source-title", "as => as.map(a => a.href)"
    )


def shown_badges(page, within: str) -> list[str]:
    return page.eval_on_selector_all(
        f"{within} .ragcite-version-badge",
        "bs => bs.filter(b => b.checkVisibility()).map(b => b.textContent)",
    )


def test_the_picker_offers_both_versions_and_stands_on_the_page_s(
    page, example_versions_server: str
) -> None:
    for name, own, other in (("v1", "1.0", "2.0"), ("v2", "2.0", "1.0")):
        page.goto(f"{example_versions_server}/{name}/brewing/pour_over.html")
        open_panel(page)
        picker = page.get_by_label(PICKER)  # a labelled native <select>
        picker.wait_for(state="visible")
        assert picker.evaluate("e => e.tagName") == "SELECT"
        assert options(page) == [
            ("v2", "2.0" + (" (this page)" if name == "v2" else "")),
            ("v1", "1.0" + (" (this page)" if name == "v1" else "")),
        ], (own, other)
        assert picker.input_value() == name
        assert page.locator("#ragcite-version-note").is_hidden()


def test_one_site_served_shows_no_picker(page, example_server: str) -> None:
    page.goto(f"{example_server}/brewing/pour_over.html")
    open_panel(page)
    answer = ask_in_form(page, QUESTION)
    assert "version" not in answer["citations"][0]
    assert page.locator(".ragcite-versions").is_hidden()
    assert page.locator(".ragcite-version-badge").count() == 0


def test_switching_asks_the_other_version_and_says_so(
    page, example_versions_server: str
) -> None:
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data or "{}"))
            if r.url.endswith("/api/ask/stream")
            else None
        ),
    )
    page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
    open_panel(page)

    # the page's own version by default: sources from 1.0, no badge
    own = ask_in_form(page, QUESTION)
    assert sent[-1]["site"] == "v1"
    assert own["site"] == "v1"
    assert own["version"] == "1.0"
    assert BLOOM_V1 in own["answer"]
    assert {c["site"] for c in own["citations"]} == {"v1"}
    assert all(
        h.startswith(f"{example_versions_server}/v1/") for h in source_links(page)
    )
    assert shown_badges(page, ".ragcite-output") == []

    # the keyboard picks 2.0: focus the select, arrow up to the first option
    picker = page.get_by_label(PICKER)
    picker.focus()
    page.keyboard.press("ArrowUp")
    assert picker.input_value() == "v2"
    status = page.locator(".ragcite-status")
    assert status.text_content() == "Questions now go to version 2.0."
    assert page.locator("#ragcite-version-note").text_content() == (
        "This page is version 1.0."
    )
    assert picker.get_attribute("aria-describedby") == "ragcite-version-note"

    other = ask_in_form(page, QUESTION)
    assert sent[-1]["site"] == "v2"
    assert other["site"] == "v2"
    assert other["version"] == "2.0"
    assert BLOOM_V2 in other["answer"]
    assert {c["site"] for c in other["citations"]} == {"v2"}
    assert {c["version"] for c in other["citations"]} == {"2.0"}
    links = source_links(page)
    assert links == [
        f"{example_versions_server}/{c['url']}" for c in other["citations"]
    ]
    assert all(h.startswith(f"{example_versions_server}/v2/") for h in links)
    assert BLOOM_V2 in page.locator(".ragcite-answer").text_content()
    # each source, and the answer, say their version is not the page's
    n = len(other["citations"])
    assert shown_badges(page, ".ragcite-sources") == ["Version 2.0"] * n
    assert shown_badges(page, ".ragcite-badges") == ["Version 2.0"]
    badge = page.locator(".ragcite-sources .ragcite-version-badge").first
    assert badge.get_attribute("title") == (
        "From version 2.0 of the book; this page is version 1.0"
    )
    shot(page, "version-picker.png", docs=True)

    # a passage of 2.0 (the "passages" outcome) has its badge too
    maybe = ask_in_form(page, NO_SURE_ANSWER)
    assert sent[-1]["site"] == "v2"
    assert maybe["outcome"] == "passages"
    assert shown_badges(page, ".ragcite-passages") == ["Version 2.0"] * len(
        maybe["passages"]
    )

    # following a source goes into 2.0
    ask_in_form(page, QUESTION)
    page.locator('a[data-ragcite-n="1"]').click()
    page.wait_for_url(f"{example_versions_server}/v2/**")
    wait_highlighted(page, other["citations"][0]["passage_id"])


def test_the_choice_lasts_the_session_on_the_site_it_was_made(
    browser, example_versions_server: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
        open_panel(page)
        page.get_by_label(PICKER).select_option("v2")
        asked = ask_in_form(page, QUESTION)
        assert asked["site"] == "v2"

        # reloaded: still 2.0, and the restored answer keeps its badges
        page.reload()
        open_panel(page)
        picker = page.get_by_label(PICKER)
        page.wait_for_function(
            "() => document.getElementById('ragcite-version').value === 'v2'"
        )
        assert page.locator("#ragcite-version-note").is_visible()
        assert shown_badges(page, ".ragcite-sources") == ["Version 2.0"] * len(
            asked["citations"]
        )
        again = ask_in_form(page, QUESTION)
        assert again["site"] == "v2"

        # another page of the same site: the same choice
        page.goto(f"{example_versions_server}/v1/index.html")
        open_panel(page)
        page.wait_for_function(
            "() => document.getElementById('ragcite-version').value === 'v2'"
        )

        # on a page of 2.0 itself, its own version: the choice is per site
        page.goto(f"{example_versions_server}/v2/index.html")
        open_panel(page)
        # the picker is filled once the sites list arrives: wait for it, as
        # above (read at once, it was still empty in one CI-like run)
        page.get_by_label(PICKER).wait_for(state="visible")
        page.wait_for_function(
            "() => document.getElementById('ragcite-version').value === 'v2'"
        )
        assert page.locator("#ragcite-version-note").is_hidden()
        assert options(page)[0] == ("v2", "2.0 (this page)")

        # back to the page's own version: forgotten, as the default is
        page.goto(f"{example_versions_server}/v1/index.html")
        open_panel(page)
        picker.select_option("v1")
        assert page.evaluate("sessionStorage.getItem('ragcite:version:v1')") is None
        assert page.locator("#ragcite-version-note").is_hidden()
        assert errors == []
    finally:
        context.close()

    # a new session starts on the page's own version
    fresh = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = fresh.new_page()
        page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
        open_panel(page)
        picker = page.get_by_label(PICKER)
        picker.wait_for(state="visible")
        assert picker.input_value() == "v1"
        assert ask(page, QUESTION)["site"] == "v1"
        page.screenshot(path=str(SHOTS / "version-picker-own.png"))
    finally:
        fresh.close()


# -- a version that leaves the server, and bidi text in a version -------------------


#: How the version tests serve: the extractive generator, no rate limit.
SERVE = ("--generator", "extractive", "--rate-limit", "0")


def asked_sites(sent: list[dict[str, Any]]) -> list[str | None]:
    return [body.get("site") for body in sent]


def test_a_version_removed_while_the_page_is_open_falls_back_once(
    page, example_site: Path, example_site_v2: Path, tmp_path: Path
) -> None:
    """Issue 33, defect 12: the server restarts without the version the
    reader picked; the next question falls back to the page's own version,
    the picker is read again and the status line says so, in one line; one
    refusal, one question more, never a loop."""
    sent: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            sent.append(json.loads(r.post_data or "{}"))
            if r.url.endswith("/api/ask/stream")
            else None
        ),
    )
    port = free_port()
    both = ("--site", f"v1={example_site}", "--site", f"v2={example_site_v2}")
    log = tmp_path / "both.log"
    with ragcite_serve(*both, *SERVE, log=log, port=port) as (url, _):
        page.goto(f"{url}/v1/brewing/pour_over.html")
        open_panel(page)
        page.get_by_label(PICKER).select_option("v2")
        assert ask_in_form(page, QUESTION)["site"] == "v2"
    assert asked_sites(sent) == ["v2"]

    # the operator drops 2.0; the page stays open, nothing reloads it
    v1 = ("--site", f"v1={example_site}")
    with ragcite_serve(*v1, *SERVE, log=tmp_path / "v1.log", port=port):
        sent.clear()
        answer = ask_in_form(page, QUESTION)
        assert asked_sites(sent) == ["v2", "v1"]  # refused once, asked again once
        assert answer["site"] == "v1"
        assert BLOOM_V1 in answer["answer"]
        assert BLOOM_V1 in page.locator(".ragcite-answer").text_content()
        assert page.locator(".ragcite-error").is_hidden()
        assert page.locator(".ragcite-status").text_content() == (
            "Version 2.0 is no longer served; "
            "questions now go to version 1.0 (this page)."
        )
        # the picker was read again: one version left, so none to pick
        assert page.locator(".ragcite-versions").is_hidden()
        assert page.evaluate("sessionStorage.getItem('ragcite:version:v1')") is None
        assert shown_badges(page, ".ragcite-output") == []

        # the next question asks 1.0 at once
        sent.clear()
        assert ask_in_form(page, QUESTION)["site"] == "v1"
        assert asked_sites(sent) == ["v1"]

    # now the page's own version goes too: the server's default, every site
    v2 = ("--site", f"v2={example_site_v2}")
    with ragcite_serve(*v2, *SERVE, log=tmp_path / "v2.log", port=port):
        sent.clear()
        answer = ask_in_form(page, QUESTION)
        assert asked_sites(sent) == ["v1", None]
        assert answer["site"] == "v2"
        assert BLOOM_V2 in answer["answer"]
        assert page.locator(".ragcite-status").text_content() == (
            "Version 1.0 (this page) is no longer served; "
            "questions now go to every site the server serves."
        )


def test_a_second_refusal_is_shown_not_asked_again(
    page, example_versions_server: str
) -> None:
    """However often the server says "no such site", the widget asks once
    more and then shows the refusal."""
    refusal = {
        "error": {
            "code": "invalid_request",
            "message": "No site 'v2' is served here; sites: v1.",
            "field": "site",
        }
    }
    sent: list[dict[str, Any]] = []

    def refuse(route) -> None:
        sent.append(json.loads(route.request.post_data or "{}"))
        route.fulfill(status=400, json=refusal)

    page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
    open_panel(page)
    page.get_by_label(PICKER).select_option("v2")
    page.route("**/api/ask/stream", refuse)
    box = page.locator("#ragcite-question")
    box.fill(QUESTION)
    box.press("Enter")
    error = page.locator(".ragcite-error")
    error.wait_for(state="visible")
    assert error.text_content() == (
        "Cannot ask that: No site 'v2' is served here; sites: v1."
    )
    page.wait_for_timeout(500)  # no third request comes
    # v2 is still served (only the answers were refused): the fallback asked v1
    assert asked_sites(sent) == ["v2", "v1"]
    # a site the page's script names itself is not changed behind its back
    sent.clear()
    page.evaluate("window.ragcite.ask('Bloom?', {site: 'v2'}).catch(() => {})")
    error.wait_for(state="visible")
    page.wait_for_timeout(300)
    assert asked_sites(sent) == ["v2"]


#: The drop-down's text of each option, laid out in a span of the page (the
#: native <select> draws it out of the DOM's reach, with the same bidi rules).
OPTION_IN_A_SPAN = """(value) => {
  const option = document.querySelector(`#ragcite-version option[value="${value}"]`);
  const span = document.createElement("span");
  span.id = "ragcite-test-option";
  span.style.whiteSpace = "nowrap";
  span.textContent = option.textContent;
  document.getElementById("ragcite-test-option")?.remove();
  document.body.prepend(span);
}"""
#: The box of the first character of the first text with *digit* and that
#: of the element's last character.
DIGIT_AND_END = """([selector, digit]) => {
  const root = document.querySelector(selector);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const box = (n, i) => {
    const r = document.createRange();
    r.setStart(n, i);
    r.setEnd(n, i + 1);
    const b = r.getBoundingClientRect();
    return {left: b.left, right: b.right, top: b.top};
  };
  let first = null, last = null;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const i = n.data.indexOf(digit);
    if (first === null && i >= 0) first = box(n, i);
    if (n.data.length) last = box(n, n.data.length - 1);
  }
  return [first, last];
}"""


def test_a_version_with_a_bidi_override_reorders_nothing_after_it(
    page, example_versions_server: str
) -> None:
    """Issue 33, defect 13: a conf.py version holding U+202E (or any
    right-to-left text) stays inside its label, in the picker's options, the
    status line and the note under the picker."""
    rlo = RLO
    versions = {"v1": f"{rlo}1.0", "v2": f"{rlo}2.0"}

    def tampered(route) -> None:
        response = route.fetch()
        if not response.ok:  # the site root's api/health, asked first
            route.fulfill(response=response)
            return
        health = response.json()
        for info in health["sites"]:
            info["version"] = info["release"] = versions[info["name"]]
        route.fulfill(json=health)

    page.route("**/api/health", tampered)
    page.goto(f"{example_versions_server}/v1/brewing/pour_over.html")
    open_panel(page)
    picker = page.get_by_label(PICKER)
    picker.wait_for(state="visible")
    # an <option> holds no <bdi>: the version goes between U+2068 and U+2069
    assert options(page) == [
        ("v2", f"\u2068{rlo}2.0\u2069"),
        ("v1", f"\u2068{rlo}1.0\u2069 (this page)"),
    ]
    page.evaluate(OPTION_IN_A_SPAN, "v1")
    assert_reads_in_order(page, "#ragcite-test-option", "(", "this")
    assert_reads_in_order(page, "#ragcite-test-option", "this", "page")
    page.evaluate("document.getElementById('ragcite-test-option').remove()")

    def ends_after_its_version(selector: str, digit: str) -> None:
        first, last = page.evaluate(DIGIT_AND_END, [selector, digit])
        assert abs(first["top"] - last["top"]) < 4, (selector, first, last)
        assert last["left"] >= first["right"] - 1, (selector, first, last)

    picker.select_option("v2")
    status = page.locator(".ragcite-status")
    assert status.text_content() == f"Questions now go to version \u2068{rlo}2.0\u2069."
    assert status.locator("bdi").count() == 1
    ends_after_its_version(".ragcite-status", "2")  # the "." after the version
    note = page.locator("#ragcite-version-note")
    assert note.text_content() == f"This page is version {rlo}1.0."
    assert note.locator("bdi").text_content() == f"{rlo}1.0"
    ends_after_its_version("#ragcite-version-note", "1")
    page.screenshot(path=str(SHOTS / "version-bidi.png"))
