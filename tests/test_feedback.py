"""Reader -> question log: ``POST /api/feedback`` against a real server and file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.servers import serving, wait_until

QUESTION = "How long is the bloom?"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("feedback") / "questions.db"


@pytest.fixture(scope="module")
def url(example_site: Path, db: Path):
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", rate_limit=0, questions_log=db
    )
    with serving(create_app(settings)) as url:
        yield url


def answer_id(url: str, question: str = QUESTION) -> str:
    body = httpx.post(f"{url}/api/ask", json={"question": question}).json()
    return body["answer_id"]


def votes(db: Path) -> dict[str, tuple[int, str | None]]:
    connection = sqlite3.connect(db)
    try:
        return {
            a: (helpful, reason)
            for a, helpful, reason in connection.execute(
                "SELECT answer_id, helpful, reason FROM feedback"
            )
        }
    finally:
        connection.close()


def vote(url: str, body: Any) -> httpx.Response:
    """JSON with \\u escapes: lone surrogates get through, as a browser sends them."""
    return httpx.post(
        f"{url}/api/feedback",
        content=json.dumps(body),
        headers={"Content-Type": "application/json"},
    )


def test_a_vote_is_stored_and_a_second_replaces_it(url: str, db: Path) -> None:
    health = httpx.get(f"{url}/api/health").json()
    assert health["feedback"] is True
    first = answer_id(url)
    response = vote(
        url, {"answer_id": first, "helpful": False, "reason": "  Too vague.  "}
    )
    assert response.status_code == 200
    assert response.json() == {
        "answer_id": first,
        "helpful": False,
        "reason": "Too vague.",
    }
    assert votes(db)[first] == (0, "Too vague.")
    again = vote(url, {"answer_id": first, "helpful": True})
    assert again.status_code == 200
    assert votes(db)[first] == (1, None)
    # a blank reason is no reason; the limit is 500 characters, inclusive
    vote(url, {"answer_id": first, "helpful": False, "reason": "   "})
    assert votes(db)[first] == (0, None)
    assert vote(url, {"answer_id": first, "helpful": False, "reason": "é" * 500})
    assert votes(db)[first] == (0, "é" * 500)
    assert list(votes(db)) == [first]  # one row per answer


@pytest.mark.slow
def test_the_vote_just_after_an_answer_finds_it(url: str, db: Path) -> None:
    """No waiting for the writer: a vote queues behind its answer's row."""
    for n in range(5):
        new = answer_id(url, f"How long is the bloom? ({n})")
        assert vote(url, {"answer_id": new, "helpful": True}).status_code == 200
        assert votes(db)[new] == (1, None)


def test_an_unknown_answer_is_404(url: str, db: Path) -> None:
    response = vote(url, {"answer_id": "0" * 32, "helpful": True})
    assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "not_found",
        "message": "No answer has this answer_id.",
        "field": "answer_id",
    }
    assert "0" * 32 not in votes(db)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"helpful": True}, "answer_id"),
        ({"answer_id": "", "helpful": True}, "answer_id"),
        ({"answer_id": "xyz", "helpful": True}, "answer_id"),
        ({"answer_id": "A" * 32, "helpful": True}, "answer_id"),
        ({"answer_id": "a" * 33, "helpful": True}, "answer_id"),
        ({"answer_id": "a" * 10_000, "helpful": True}, "answer_id"),
        ({"answer_id": 42, "helpful": True}, "answer_id"),
        ({"answer_id": None, "helpful": True}, "answer_id"),
        ({"answer_id": "a" * 32}, "helpful"),
        ({"answer_id": "a" * 32, "helpful": "yes"}, "helpful"),
        ({"answer_id": "a" * 32, "helpful": "true"}, "helpful"),
        ({"answer_id": "a" * 32, "helpful": 1}, "helpful"),
        ({"answer_id": "a" * 32, "helpful": None}, "helpful"),
        ({"answer_id": "a" * 32, "helpful": False, "reason": "x" * 501}, "reason"),
        ({"answer_id": "a" * 32, "helpful": False, "reason": 7}, "reason"),
        ({"answer_id": "a" * 32, "helpful": False, "reason": ["no"]}, "reason"),
        ({"answer_id": "a" * 32, "helpful": False, "reason": "\ud800"}, "reason"),
        ({"answer_id": "a" * 32, "helpful": False, "ip": "1.2.3.4"}, "ip"),
    ],
)
def test_invalid_votes_are_400_naming_the_field(
    url: str, body: dict[str, Any], field: str
) -> None:
    response = vote(url, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["field"] == field
    assert error["message"].startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"{not json", "invalid_json"),
        (b"[1, 2]", "invalid_body"),
        (b'"helpful"', "invalid_body"),
        (b"", "invalid_request"),  # no body: as /api/ask says it
    ],
)
def test_a_body_that_is_no_object_is_400(url: str, content: bytes, code: str) -> None:
    response = httpx.post(
        f"{url}/api/feedback",
        content=content,
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == code


def test_a_body_too_large_is_400(url: str) -> None:
    big = {"answer_id": "a" * 32, "helpful": False, "reason": "x" * 400_000}
    response = vote(url, big)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "body_too_large"


def test_only_post(url: str) -> None:
    response = httpx.get(f"{url}/api/feedback")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


def test_votes_are_rate_limited_like_questions(
    example_site: Path, tmp_path: Path
) -> None:
    settings = ServerSettings(
        build_dir=example_site,
        generator="extractive",
        rate_limit=3,
        questions_log=tmp_path / "questions.db",
    )
    with serving(create_app(settings)) as url:
        first = answer_id(url)
        codes = [
            vote(url, {"answer_id": first, "helpful": True}).status_code
            for _ in range(3)
        ]
        assert codes == [200, 200, 429]
        limited = vote(url, {"answer_id": first, "helpful": True})
        assert limited.status_code == 429
        assert limited.json()["error"]["code"] == "rate_limited"
        assert int(limited.headers["retry-after"]) >= 1


def test_without_a_log_there_is_no_feedback(example_site: Path) -> None:
    settings = ServerSettings(build_dir=example_site, generator="extractive")
    with serving(create_app(settings)) as url:
        assert httpx.get(f"{url}/api/health").json()["feedback"] is False
        answer = httpx.post(f"{url}/api/ask", json={"question": QUESTION}).json()
        assert "answer_id" not in answer  # the answer JSON as it always was
        response = vote(url, {"answer_id": "a" * 32, "helpful": True})
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "feedback_off"
        # validation still comes first: a bad body is a 400 either way
        assert vote(url, {"answer_id": "a" * 32}).status_code == 400


def test_the_spec_describes_feedback(url: str) -> None:
    spec = httpx.get(f"{url}/api/openapi.json").json()
    operation = spec["paths"]["/api/feedback"]["post"]
    assert {"200", "400", "404", "429", "503"} <= set(operation["responses"])
    assert "422" not in operation["responses"]
    request = spec["components"]["schemas"]["FeedbackRequest"]
    assert request["required"] == ["answer_id", "helpful"]
    assert spec["components"]["schemas"]["Health"]["properties"]["feedback"]
    assert spec["components"]["schemas"]["Answer"]["properties"]["answer_id"]


@pytest.mark.slow
def test_a_vote_on_an_answer_the_full_log_could_not_keep_is_503(
    example_site: Path, tmp_path: Path
) -> None:
    """The log's file is full (SQLite's own SQLITE_FULL, from a page limit on
    the writer's connection, as a full disk gives it): a vote on an answer
    whose row could not be written is a 503, never "no such answer"; the
    row is written once there is room, and the vote then stored."""
    db = tmp_path / "questions.db"
    settings = ServerSettings(
        build_dir=example_site, generator="extractive", rate_limit=0, questions_log=db
    )
    app = create_app(settings)
    with serving(app) as url:
        first = answer_id(url)
        wait_until(lambda: first in ids(db), 10)
        log = app.state.ragcite.questions
        pages = log._connection.execute("PRAGMA page_count").fetchone()[0]
        log._connection.execute(f"PRAGMA max_page_count = {pages}")
        # 2,000 CJK characters: 6,000 bytes, more than a page can hold
        lost = answer_id(url, "咖啡的萃取时间取决于研磨度和水温" * 125)
        refused = vote(url, {"answer_id": lost, "helpful": False, "reason": "x"})
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "log_unavailable"
        assert int(refused.headers["retry-after"]) > 0
        assert lost not in ids(db)
        log._connection.execute("PRAGMA max_page_count = 1073741823")
        wait_until(lambda: lost in ids(db), 10)
        stored = vote(url, {"answer_id": lost, "helpful": False, "reason": "x"})
        assert stored.status_code == 200, stored.text
    assert votes(db)[lost] == (0, "x")


def ids(db: Path) -> set[str]:
    connection = sqlite3.connect(db)
    try:
        return {a for (a,) in connection.execute("SELECT answer_id FROM questions")}
    finally:
        connection.close()
