"""Reader -> feedback: "Helpful?" in real Chromium against a real ``ragcite serve``.

The browser and page fixtures are the session's (conftest): the Debian
``chromium`` driven by Python playwright, failing a test on any page error
or CSP violation.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers.browser import QUESTION, SHOTS, ask
from helpers.servers import ragcite_serve, wait_until

REASON = "It does not say what to do with a darker roast. <b>bold?</b>"


@pytest.fixture(scope="module")
def logged(example_site: Path, tmp_path_factory: pytest.TempPathFactory):
    """``ragcite serve`` of the example book with the question log on: its URL
    and the log's file."""
    folder = tmp_path_factory.mktemp("widget_feedback")
    db = folder / "questions.db"
    args = (
        str(example_site),
        "--generator", "extractive",
        "--rate-limit", "0",
        "--questions-log", str(db),
        "--log-level", "warning",
    )  # fmt: skip
    with ragcite_serve(*args, log=folder / "server.log") as (url, health):
        assert health["feedback"] is True
        yield url, db


def feedback_rows(db: Path) -> list[tuple[str, int, str | None]]:
    connection = sqlite3.connect(db)
    try:
        return list(
            connection.execute("SELECT answer_id, helpful, reason FROM feedback")
        )
    finally:
        connection.close()


def answer_id_after(db: Path, rows: int) -> str:
    """The id of the answer logged after the first *rows*, once it is there:
    the server writes its log from a background thread, after the answer has
    reached the page (the log is the module's, shared by its tests)."""
    wait_until(lambda: len(stream_answer_ids(db)) > rows, 10)
    return stream_answer_ids(db)[rows]


def stream_answer_ids(db: Path) -> list[str]:
    connection = sqlite3.connect(db)
    try:
        return [
            row[0]
            for row in connection.execute(
                "SELECT answer_id FROM questions WHERE door = 'stream' ORDER BY id"
            )
        ]
    finally:
        connection.close()


def test_no_with_a_reason_is_stored(page, logged) -> None:
    url, db = logged
    page.goto(f"{url}/index.html")
    page.locator(".ragcite-launcher").click()
    page.locator("#ragcite-question").fill(QUESTION)
    page.locator("#ragcite-question").press("Enter")
    page.locator('a[data-ragcite-n="1"]').wait_for(state="visible")

    group = page.get_by_role("group", name="Helpful?")
    group.wait_for(state="visible")
    yes = group.get_by_role("button", name="Yes")
    no = group.get_by_role("button", name="No")
    assert yes.get_attribute("aria-pressed") == "false"
    assert no.get_attribute("aria-pressed") == "false"
    reason = page.get_by_label("What was missing or wrong? (optional)")
    assert reason.is_hidden()

    # keyboard only: focus "No", press Enter
    no.focus()
    page.keyboard.press("Enter")
    reason.wait_for(state="visible")
    assert no.get_attribute("aria-pressed") == "true"
    assert yes.get_attribute("aria-pressed") == "false"
    assert page.evaluate("document.activeElement.id") == "ragcite-feedback-reason"
    answer_id = answer_id_after(db, 0)
    assert len(stream_answer_ids(db)) == 1
    wait_until(lambda: feedback_rows(db) == [(answer_id, 0, None)], 10)

    page.keyboard.type(REASON)
    assert page.locator("#ragcite-feedback-count").text_content() == (
        f"{len(REASON)} / 500"
    )
    page.screenshot(path=str(SHOTS / "feedback.png"))
    group.get_by_role("button", name="Send").click()
    status = group.get_by_role("status")
    # the "No" above already said "Thanks ...": wait for the note's own line
    page.wait_for_function(
        "() => document.querySelector('.ragcite-feedback-status')"
        ".textContent === 'Thanks: your note was sent.'"
    )
    assert reason.is_hidden()
    assert status.text_content() == "Thanks: your note was sent."
    # the reason is text in the log, and was never markup on the page
    assert feedback_rows(db) == [(answer_id, 0, REASON)]
    assert page.locator(".ragcite-feedback b").count() == 0

    # changing one's mind replaces the vote
    yes.click()
    page.wait_for_function(
        "() => document.querySelector('.ragcite-feedback-status')"
        ".textContent === 'Thanks for your feedback.'"
    )
    assert yes.get_attribute("aria-pressed") == "true"
    assert feedback_rows(db) == [(answer_id, 1, None)]


def test_every_answer_has_its_own_vote(page, logged) -> None:
    url, db = logged
    page.goto(f"{url}/index.html")
    rows = len(stream_answer_ids(db))
    ask(page, "Who invented the French press?")  # the "passages" outcome
    first = answer_id_after(db, rows)
    page.get_by_role("group", name="Helpful?").get_by_role("button", name="Yes").click()
    wait_until(lambda: (first, 1, None) in feedback_rows(db), 10)
    ask(page, "What is the capital of Peru?")
    second = answer_id_after(db, rows + 1)
    assert second != first
    group = page.get_by_role("group", name="Helpful?")
    assert group.get_by_role("button", name="Yes").get_attribute("aria-pressed") == (
        "false"
    )
    group.get_by_role("button", name="No").click()
    wait_until(lambda: (second, 0, None) in feedback_rows(db), 10)


def test_no_feedback_control_without_a_log(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    answer = ask(page, QUESTION)
    assert "answer_id" not in answer
    page.locator('a[data-ragcite-n="1"]').wait_for(state="visible")
    assert page.locator(".ragcite-feedback").count() == 0
    assert page.get_by_role("group", name="Helpful?").count() == 0
