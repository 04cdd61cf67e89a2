"""Reader -> version picker: two versions of the example book in one server.

The browser, page and two-version server fixtures are the widget tests'
(``test_widget.py``): the Debian ``chromium`` driven by Python playwright,
failing a test on any page error or CSP violation; the example book (1.0)
served as ``v1`` beside its edited copy (2.0, the bloom paragraph changed) as
``v2``.
"""

from __future__ import annotations

import json
from typing import Any

import test_widget
from test_widget import QUESTION, SHOTS, ask, shot

from conftest import BLOOM_V1, BLOOM_V2

# the widget tests' fixtures: Chromium, a page that fails on errors, the
# example book alone and beside its version 2.0
browser = test_widget.browser
page = test_widget.page
site = test_widget.site
server = test_widget.server
sites_server = test_widget.sites_server

PICKER = "Answers from version"
#: Collects every rendered answer (the widget's ``ragcite:answer`` event).
COLLECT = """() => {
  window.__answers = [];
  document.addEventListener("ragcite:answer", (e) => window.__answers.push(e.detail));
}"""
#: A "Passages" outcome in both versions of the example book.
NO_SURE_ANSWER = "Who invented the French press?"


def open_panel(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_function("() => window.ragcite !== undefined")
    page.locator(".ragcite-launcher").click()
    page.locator("#ragcite-question").wait_for(state="visible")


def ask_in_form(page, question: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Type a question and press Enter, as a reader does; the answer shown."""
    page.evaluate(COLLECT)
    box = page.locator("#ragcite-question")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__answers.length > 0")
    return page.evaluate("window.__answers[0]")  # type: ignore[no-any-return]


def options(page) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    pairs = page.eval_on_selector_all(
        "#ragcite-version option", "os => os.map(o => [o.value, o.textContent])"
    )
    return [(value, text) for value, text in pairs]


def source_links(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        "li[data-ragcite-source] a.ragcite-source-title", "as => as.map(a => a.href)"
    )


def shown_badges(page, within: str) -> list[str]:  # type: ignore[no-untyped-def]
    return page.eval_on_selector_all(  # type: ignore[no-any-return]
        f"{within} .ragcite-version-badge",
        "bs => bs.filter(b => b.checkVisibility()).map(b => b.textContent)",
    )


def test_the_picker_offers_both_versions_and_stands_on_the_page_s(  # type: ignore[no-untyped-def]
    page, sites_server: str
) -> None:
    for name, own, other in (("v1", "1.0", "2.0"), ("v2", "2.0", "1.0")):
        page.goto(f"{sites_server}/{name}/brewing/pour_over.html")
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


def test_one_site_served_shows_no_picker(page, server: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{server}/brewing/pour_over.html")
    open_panel(page)
    answer = ask_in_form(page, QUESTION)
    assert "version" not in answer["citations"][0]
    assert page.locator(".ragcite-versions").is_hidden()
    assert page.locator(".ragcite-version-badge").count() == 0


def test_switching_asks_the_other_version_and_says_so(  # type: ignore[no-untyped-def]
    page, sites_server: str
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
    page.goto(f"{sites_server}/v1/brewing/pour_over.html")
    open_panel(page)

    # the page's own version by default: sources from 1.0, no badge
    own = ask_in_form(page, QUESTION)
    assert sent[-1]["site"] == "v1"
    assert own["site"] == "v1"
    assert own["version"] == "1.0"
    assert BLOOM_V1 in own["answer"]
    assert {c["site"] for c in own["citations"]} == {"v1"}
    assert all(h.startswith(f"{sites_server}/v1/") for h in source_links(page))
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
    assert links == [f"{sites_server}/{c['url']}" for c in other["citations"]]
    assert all(h.startswith(f"{sites_server}/v2/") for h in links)
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
    page.wait_for_url(f"{sites_server}/v2/**")
    test_widget.wait_highlighted(page, other["citations"][0]["passage_id"])


def test_the_choice_lasts_the_session_on_the_site_it_was_made(  # type: ignore[no-untyped-def]
    browser, sites_server: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{sites_server}/v1/brewing/pour_over.html")
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
        page.goto(f"{sites_server}/v1/index.html")
        open_panel(page)
        page.wait_for_function(
            "() => document.getElementById('ragcite-version').value === 'v2'"
        )

        # on a page of 2.0 itself, its own version: the choice is per site
        page.goto(f"{sites_server}/v2/index.html")
        open_panel(page)
        assert page.get_by_label(PICKER).input_value() == "v2"
        assert page.locator("#ragcite-version-note").is_hidden()
        assert options(page)[0] == ("v2", "2.0 (this page)")

        # back to the page's own version: forgotten, as the default is
        page.goto(f"{sites_server}/v1/index.html")
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
        page.goto(f"{sites_server}/v1/brewing/pour_over.html")
        open_panel(page)
        picker = page.get_by_label(PICKER)
        picker.wait_for(state="visible")
        assert picker.input_value() == "v1"
        assert ask(page, QUESTION)["site"] == "v1"
        page.screenshot(path=str(SHOTS / "version-picker-own.png"))
    finally:
        fresh.close()
