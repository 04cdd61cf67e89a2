"""Answer -> question log: a real server writing a real SQLite file, every door."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from sphinx_ragcite.questions import log as question_log
from sphinx_ragcite.questions.log import QuestionLog
from sphinx_ragcite.questions.schema import SCHEMA_VERSION, open_log
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

from helpers.builds import read_manifest
from helpers.servers import (
    free_port,
    ragcite_serve,
    run_async,
    serving,
    sse_events,
    wait_until,
    wait_until_up,
)

QUESTION = "How long is the bloom?"
QUESTIONS = (
    QUESTION,
    "Who invented the French press?",
    "How do I descale an espresso machine?",
    "What grind size suits a pour-over?",
    "What is the capital of Peru?",
)
WHEN = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def log_server(site: Path, db: Path, **settings: Any):
    """The app under uvicorn in a thread, logging to *db*; leaving the
    ``with`` stops it (and so flushes the log)."""
    settings.setdefault("rate_limit", 0)
    return serving(
        create_app(
            ServerSettings(
                build_dir=site, generator="extractive", questions_log=db, **settings
            )
        )
    )


def rows(db: Path, table: str = "questions") -> list[dict[str, Any]]:
    connection = sqlite3.connect(db)
    connection.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in connection.execute(f"SELECT * FROM {table}")]
    finally:
        connection.close()


def count(db: Path) -> int:
    return len(rows(db))


def final_event(response: httpx.Response) -> dict[str, Any]:
    return next(data for name, data in sse_events(response.text) if name == "final")


async def ask_over_mcp(url: str, question: str) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(f"{url}/mcp") as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("ask", {"question": question})
    assert not result.is_error, result.content
    return result.structured_content


@pytest.mark.slow
def test_every_door_logs_one_row(example_site: Path, tmp_path: Path) -> None:
    db = tmp_path / "questions.db"
    with log_server(example_site, db) as url:
        assert httpx.get(f"{url}/api/health").json()["feedback"] is True
        api = httpx.post(f"{url}/api/ask", json={"question": QUESTION}).json()
        stream = final_event(
            httpx.post(f"{url}/api/ask/stream", json={"question": QUESTIONS[1]})
        )
        mcp = run_async(ask_over_mcp(url, QUESTIONS[2]))
        # the cached answer again: a new answer_id, a row of its own
        again = httpx.post(f"{url}/api/ask", json={"question": QUESTION}).json()
    ids = [a["answer_id"] for a in (api, stream, mcp, again)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == 4

    logged = {r["answer_id"]: r for r in rows(db)}
    assert set(logged) == set(ids)
    version = read_manifest(example_site)["version"]
    doors = ("api", "stream", "mcp", "api")
    for answer, door in zip((api, stream, mcp, again), doors, strict=True):
        row = logged[answer["answer_id"]]
        assert row["door"] == door
        assert row["question"] == answer["question"]
        assert row["outcome"] == answer["outcome"]
        assert row["confidence"] == pytest.approx(answer["confidence"])
        assert row["answer"] == answer["answer"]
        assert row["generator"] == answer["metadata"]["generator"] == "extractive"
        assert row["site"] == ""
        assert row["version"] == version
        assert WHEN.match(row["asked_at"])
        assert row["latency_ms"] > 0
        assert row["selection_chars"] == 0
        assert row["selection"] is None
        shown = (
            answer["passages"]
            if answer["outcome"] == "passages"
            else answer["citations"]
        )
        assert json.loads(row["cited"]) == [
            {"id": s["passage_id"], "url": s["url"]} for s in shown
        ]
    assert logged[api["answer_id"]]["outcome"] == "answer"
    assert json.loads(logged[api["answer_id"]]["cited"])
    assert rows(db, "sites") == [
        {"name": "", "build_dir": str(example_site.resolve()), "base_url": ""}
    ]
    connection = open_log(db, create=False)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    connection.close()


def test_several_sites_name_the_site_of_each_row_and_citation(
    example_site: Path, example_site_v2: Path, tmp_path: Path
) -> None:
    db = tmp_path / "questions.db"
    settings = ServerSettings(
        sites=(("v1", example_site), ("v2", example_site_v2)),
        generator="extractive",
        rate_limit=0,
        questions_log=db,
    )
    with serving(create_app(settings)) as url:
        one = httpx.post(
            f"{url}/api/ask", json={"question": QUESTION, "site": "v2"}
        ).json()
        both = httpx.post(f"{url}/api/ask", json={"question": QUESTION}).json()
    logged = {r["answer_id"]: r for r in rows(db)}
    assert (logged[one["answer_id"]]["site"], logged[one["answer_id"]]["version"]) == (
        "v2",
        "2.0",
    )
    assert logged[both["answer_id"]]["site"] == ""
    for answer in (one, both):
        cited = json.loads(logged[answer["answer_id"]]["cited"])
        assert cited
        for entry, citation in zip(cited, answer["citations"], strict=True):
            # the URL is the site's own (relative to its build folder)
            assert entry["site"] == citation["site"]
            assert f"{entry['site']}/{entry['url']}" == citation["url"]
    assert {r["name"]: r["build_dir"] for r in rows(db, "sites")} == {
        "v1": str(example_site.resolve()),
        "v2": str(example_site_v2.resolve()),
    }


@pytest.mark.slow
def test_concurrent_asks_lose_no_rows_and_never_wait_for_the_log(
    example_site: Path, tmp_path: Path
) -> None:
    """The log's file is locked (as another replica writing would) while 8
    threads ask 64 questions: every answer comes back, none is logged yet;
    once the lock goes every row is written, and none twice."""
    db = tmp_path / "questions.db"
    threads, each = 8, 8
    with log_server(example_site, db) as url:
        with httpx.Client() as warm:  # load each answer once: the rest are cached
            for question in QUESTIONS:
                warm.post(f"{url}/api/ask", json={"question": question})
        wait_until(lambda: count(db) == len(QUESTIONS), 10)
        blocker = sqlite3.connect(db, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the writer must wait for this
        try:

            def asker(n: int) -> list[tuple[str, float]]:
                out = []
                with httpx.Client(timeout=30) as client:
                    for i in range(each):
                        door = "stream" if (n + i) % 2 else "ask"
                        started = time.perf_counter()
                        response = client.post(
                            f"{url}/api/{'ask/stream' if door == 'stream' else 'ask'}",
                            json={"question": QUESTIONS[(n + i) % len(QUESTIONS)]},
                        )
                        assert response.status_code == 200
                        body = (
                            final_event(response)
                            if door == "stream"
                            else response.json()
                        )
                        out.append((body["answer_id"], time.perf_counter() - started))
                return out

            with ThreadPoolExecutor(threads) as pool:
                answered = [a for part in pool.map(asker, range(threads)) for a in part]
            assert count(db) == len(QUESTIONS)  # nothing got past the lock
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert len(answered) == threads * each
        # cached answers, logged or not, come back at once
        assert max(seconds for _, seconds in answered) < 5
        wait_until(lambda: count(db) == len(QUESTIONS) + threads * each, 30)
    logged = rows(db)
    assert len(logged) == len(QUESTIONS) + threads * each
    assert {a for a, _ in answered} <= {r["answer_id"] for r in logged}
    assert {r["door"] for r in logged} == {"api", "stream"}


def test_a_clean_shutdown_writes_what_is_queued(example_site: Path, tmp_path: Path):
    db = tmp_path / "questions.db"
    with log_server(example_site, db) as url, httpx.Client() as client:
        ids = [
            client.post(f"{url}/api/ask", json={"question": QUESTION}).json()[
                "answer_id"
            ]
            for _ in range(30)
        ]
    # the server stopped right after the last answer; its rows are all there
    assert sorted(r["answer_id"] for r in rows(db)) == sorted(ids)


@pytest.mark.slow
def test_selections_are_measured_not_kept_unless_asked(
    example_site: Path, tmp_path: Path
) -> None:
    selection = "Bloom the grounds with twice their weight of water."
    body = {
        "question": "What does this mean?",
        "mode": "selection",
        "selection": selection,
    }
    for keep in (False, True):
        db = tmp_path / f"keep-{keep}.db"
        with log_server(example_site, db, log_selections=keep) as url:
            answer = httpx.post(f"{url}/api/ask", json=body).json()
        (row,) = rows(db)
        assert row["answer_id"] == answer["answer_id"]
        assert row["selection_chars"] == len(selection)
        assert row["selection"] == (selection if keep else None)
        # an answer quoting the selection is kept only with it
        assert answer["citations"][0]["source_type"] == "selection"
        assert row["answer"] == (answer["answer"] if keep else "")
        text = b"".join(p.read_bytes() for p in tmp_path.glob(f"keep-{keep}.db*"))
        assert (selection.encode() in text) is keep


def test_nothing_identifies_a_reader(example_site: Path, tmp_path: Path) -> None:
    db = tmp_path / "questions.db"
    agent = "ReaderAgent/9.9 (unique-agent-string)"
    with log_server(example_site, db) as url:
        httpx.post(
            f"{url}/api/ask",
            json={"question": QUESTION},
            headers={
                "User-Agent": agent,
                "Cookie": "session=unique-cookie-value",
                "X-Forwarded-For": "203.0.113.77",
            },
        )
    connection = sqlite3.connect(db)
    columns = {
        name
        for (table,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
        for _, name, *_ in connection.execute(f"PRAGMA table_info({table})")
    }
    connection.close()
    assert not {c for c in columns if re.search(r"ip|addr|agent|cookie|client|host", c)}
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("questions.db*"))
    for secret in (agent, "unique-cookie-value", "203.0.113.77", "127.0.0.1"):
        assert secret.encode() not in stored, secret


@pytest.mark.slow
def test_retention_deletes_old_rows_at_start_and_later(
    example_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "questions.db"
    connection = open_log(db)
    old = ("a" * 32, "2020-01-01T00:00:00.000000Z")
    new = ("b" * 32, question_log.utc_now())
    with connection:
        for answer_id, asked_at in (old, new):
            connection.execute(
                "INSERT INTO questions (answer_id, asked_at, question, outcome, "
                "latency_ms, door) VALUES (?, ?, 'q', 'answer', 1, 'api')",
                (answer_id, asked_at),
            )
            connection.execute(
                "INSERT INTO feedback VALUES (?, 0, 'why', ?)", (answer_id, asked_at)
            )
    connection.close()
    with log_server(example_site, db, questions_log_days=30) as url:
        assert httpx.get(f"{url}/api/health").status_code == 200
        assert [r["answer_id"] for r in rows(db)] == [new[0]]
        assert [r["answer_id"] for r in rows(db, "feedback")] == [new[0]]

    # and while it runs: the writer deletes again every PRUNE_EVERY seconds
    monkeypatch.setattr(question_log, "PRUNE_EVERY", 0.2)
    log = QuestionLog.open(db, days=30)
    assert log is not None
    try:
        stale = question_log.Asked(
            answer_id="c" * 32,
            asked_at="2021-06-01T00:00:00.000000Z",
            site="",
            version="",
            question="q",
            selection_chars=0,
            selection=None,
            outcome="not_found",
            confidence=0.1,
            answer="",
            cited="[]",
            latency_ms=1.0,
            generator="extractive",
            door="api",
        )
        log.record(stale)
        wait_until(lambda: "c" * 32 in {r["answer_id"] for r in rows(db)}, 5)
        wait_until(lambda: "c" * 32 not in {r["answer_id"] for r in rows(db)}, 5)
        assert [r["answer_id"] for r in rows(db)] == [new[0]]
    finally:
        log.close()


def log_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "question log" in r.getMessage()
    ]


@pytest.mark.slow
def test_a_file_that_is_no_database_is_one_warning(
    example_site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "questions.db"
    junk = b"this is not a database, it is a shopping list\n" * 100
    db.write_bytes(junk)
    with caplog.at_level(logging.WARNING), log_server(example_site, db) as url:
        assert httpx.get(f"{url}/api/health").json()["feedback"] is False
        for _ in range(3):
            answer = httpx.post(f"{url}/api/ask", json={"question": QUESTION})
            assert answer.status_code == 200
            assert "answer_id" not in answer.json()
        stream = httpx.post(f"{url}/api/ask/stream", json={"question": QUESTION})
        assert "answer_id" not in final_event(stream)
    (warning,) = log_warnings(caplog)
    assert str(db) in warning
    assert db.read_bytes() == junk  # left as it was


@pytest.mark.slow
def test_a_log_that_stops_being_writable_is_one_warning(
    example_site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The file breaks while the server runs (here its table goes; a full disk
    fails the same way): answers go on, votes get a 503, one warning."""
    db = tmp_path / "questions.db"
    with caplog.at_level(logging.WARNING), log_server(example_site, db) as url:
        first = httpx.post(f"{url}/api/ask", json={"question": QUESTION}).json()
        wait_until(lambda: count(db) == 1, 10)
        breaker = sqlite3.connect(db)
        breaker.execute("PRAGMA foreign_keys = OFF")
        breaker.execute("DROP TABLE feedback")
        breaker.execute("DROP TABLE questions")
        breaker.commit()
        breaker.close()
        for question in QUESTIONS:
            response = httpx.post(f"{url}/api/ask", json={"question": question})
            assert response.status_code == 200
        vote = httpx.post(
            f"{url}/api/feedback",
            json={"answer_id": first["answer_id"], "helpful": True},
        )
        assert vote.status_code == 503
        assert vote.json()["error"]["code"] == "log_unavailable"
        after = httpx.post(f"{url}/api/ask", json={"question": QUESTION})
        assert after.status_code == 200
    (warning,) = log_warnings(caplog)
    assert "cannot write the question log" in warning


@pytest.mark.slow
def test_a_read_only_folder_is_one_warning(example_site: Path, tmp_path: Path) -> None:
    """A real ``ragcite serve`` asked to log into a folder it cannot write."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    command = [sys.executable, "-m", "sphinx_ragcite", "serve", str(example_site)]
    if os.geteuid() == 0:  # root writes anywhere: drop that power for the server
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        command = [
            setpriv,
            "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search",
            *command,
        ]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    args = ["--questions-log", str(folder / "q.db"), "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, *args, "--generator", "extractive"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        health = wait_until_up(process, f"{url}/api/health", log).json()
        assert health["feedback"] is False
        for question in QUESTIONS[:3]:
            answer = httpx.post(
                f"{url}/api/ask", json={"question": question}, timeout=30
            )
            assert answer.status_code == 200
            assert "answer_id" not in answer.json()
        off = httpx.post(
            f"{url}/api/feedback", json={"answer_id": "a" * 32, "helpful": True}
        )
        assert off.status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=15)
    text = log.read_text("utf-8")
    warnings = [line for line in text.splitlines() if "question log" in line]
    assert len(warnings) == 1, text
    assert warnings[0].startswith("WARNING")
    assert "cannot open" in warnings[0]
    assert not list(folder.iterdir())


@pytest.mark.slow
def test_the_writer_thread_is_the_only_one(example_site: Path, tmp_path: Path) -> None:
    db = tmp_path / "questions.db"
    before = {t.name for t in threading.enumerate()}
    with log_server(example_site, db) as url:
        for question in QUESTIONS:
            httpx.post(f"{url}/api/ask", json={"question": question})
        writers = [t for t in threading.enumerate() if t.name == "ragcite-questions"]
        assert len(writers) == 1
    assert "ragcite-questions" not in before
    wait_until(
        lambda: not [t for t in threading.enumerate() if t.name == "ragcite-questions"],
        10,
    )


def test_options_of_the_log_need_the_log() -> None:
    with pytest.raises(ValueError, match="need --questions-log"):
        ServerSettings(build_dir=Path("."), questions_log_days=3)
    with pytest.raises(ValueError, match="need --questions-log"):
        ServerSettings(build_dir=Path("."), log_selections=True)


# -- a careless operator, a full disk (issue 33) ---------------------------------


def ask(url: str, question: str) -> str:
    """The answer_id of one answer from ``/api/ask``."""
    response = httpx.post(f"{url}/api/ask", json={"question": question}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["answer_id"]


def vote(url: str, answer_id: str) -> httpx.Response:
    body = {"answer_id": answer_id, "helpful": True}
    return httpx.post(f"{url}/api/feedback", json=body, timeout=30)


def ids_in(db: Path) -> list[str] | None:
    """The answer_ids a file holds as read on its own, None if it cannot be
    read as a log (yet)."""
    try:
        return [r["answer_id"] for r in rows(db)]
    except sqlite3.Error:
        return None


def intact(db: Path) -> bool:
    connection = sqlite3.connect(db)
    try:
        return connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        connection.close()


@pytest.mark.slow
def test_the_log_is_private_to_its_owner(example_site: Path, tmp_path: Path) -> None:
    """It holds what readers typed: 0600, and so its -wal and -shm files,
    whatever the umask would allow."""
    db = tmp_path / "questions.db"
    umask = os.umask(0o022)
    try:
        with log_server(example_site, db) as url:
            ask(url, QUESTION)
            wait_until(lambda: count(db) == 1, 10)
            modes = {
                p.name: stat.S_IMODE(p.stat().st_mode)
                for p in tmp_path.glob("questions.db*")
            }
    finally:
        os.umask(umask)
    assert set(modes) == {"questions.db", "questions.db-wal", "questions.db-shm"}
    assert set(modes.values()) == {0o600}, modes


def test_an_older_log_others_can_read_is_said_not_changed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A log made 0644 (by an older version, by hand) keeps its mode, which
    the operator may have chosen; the server says once that anyone can read it."""
    db = tmp_path / "questions.db"
    open_log(db).close()
    db.chmod(0o644)
    with caplog.at_level(logging.WARNING):
        log = QuestionLog.open(db)
    assert log is not None
    log.close()
    (warning,) = log_warnings(caplog)
    assert "chmod 600" in warning
    assert stat.S_IMODE(db.stat().st_mode) == 0o644


@pytest.mark.slow
@pytest.mark.parametrize("how", ["rename+create", "rename", "delete"])
def test_a_moved_log_is_noticed_and_reopened(
    example_site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    """logrotate's rename+create, an operator's ``mv`` or ``rm``: the writer
    completes the moved file within a second, then writes every later
    question to a new log at the configured path, with one warning."""
    db = tmp_path / "questions.db"
    moved = tmp_path / "questions.db.1"
    with caplog.at_level(logging.WARNING), log_server(example_site, db) as url:
        before = [ask(url, q) for q in QUESTIONS[:2]]
        wait_until(lambda: count(db) == 2, 10)
        if how == "delete":
            db.unlink()
        else:
            db.rename(moved)
        if how == "rename+create":  # logrotate's `create 0600`
            db.touch(mode=0o600)
        if how != "delete":
            # nothing asked yet: the moved file is made whole on its own
            wait_until(lambda: ids_in(moved) == before, 5)
        after = [ask(url, q) for q in QUESTIONS[2:]]
        wait_until(lambda: ids_in(db) == after, 10)
        assert vote(url, after[0]).status_code == 200
        # an answer from before the move is in the moved file, not this one
        assert vote(url, before[0]).status_code == 404
    assert ids_in(db) == after
    assert [r["answer_id"] for r in rows(db, "feedback")] == [after[0]]
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert intact(db)
    if how != "delete":
        assert ids_in(moved) == before
        assert intact(moved)
    (warning,) = log_warnings(caplog)
    assert "moved or deleted" in warning
    assert str(db) in warning


def test_a_truncated_log_starts_again(
    example_site: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """logrotate's copytruncate is not supported (the copy misses what the
    -wal holds): the truncation is noticed, said, and the log starts again."""
    db = tmp_path / "questions.db"
    with caplog.at_level(logging.WARNING), log_server(example_site, db) as url:
        ask(url, QUESTIONS[0])
        wait_until(lambda: count(db) == 1, 10)
        shutil.copy(db, tmp_path / "questions.db.1")
        os.truncate(db, 0)
        after = [ask(url, q) for q in QUESTIONS[1:3]]
        wait_until(lambda: ids_in(db) == after, 10)
        assert vote(url, after[1]).status_code == 200
    assert ids_in(db) == after
    assert intact(db)
    (warning,) = log_warnings(caplog)
    assert "truncated (copytruncate is not supported" in warning


def row(answer_id: str) -> question_log.Asked:
    return question_log.Asked(
        answer_id=answer_id, asked_at=question_log.utc_now(), site="", version="",
        question="q", selection_chars=0, selection=None, outcome="not_found",
        confidence=None, answer="", cited="[]", latency_ms=1.0,
        generator="extractive", door="api",
    )  # fmt: skip


def test_a_process_that_opens_the_new_log_first_takes_nothing_of_the_old(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker (re)starting just after logrotate's rename and create opens
    the new, empty file while another still holds the old one, whose
    -wal/-shm still sit beside the path: it must not share them (SQLite
    would then read and write the old log's pages as the new one's)."""
    monkeypatch.setattr(question_log, "TICK", 3600.0)  # notice only on a write
    db = tmp_path / "questions.db"
    moved = tmp_path / "questions.db.1"
    old = QuestionLog.open(db)
    assert old is not None
    new = None
    try:
        old.record(row("a" * 32))
        wait_until(lambda: ids_in(db) == ["a" * 32], 10)
        db.rename(moved)
        db.touch(mode=0o600)
        assert Path(f"{db}-shm").exists()  # the old log's, still in use
        new = QuestionLog.open(db)
        assert new is not None
        new.record(row("b" * 32))
        wait_until(lambda: ids_in(db) == ["b" * 32], 10)
        old.record(row("c" * 32))  # the old holder notices the move now
        wait_until(lambda: sorted(ids_in(db) or []) == ["b" * 32, "c" * 32], 10)
    finally:
        old.close()
        if new is not None:
            new.close()
    assert ids_in(moved) == ["a" * 32]
    assert sorted(ids_in(db) or []) == ["b" * 32, "c" * 32]
    assert intact(db)
    assert intact(moved)


@pytest.mark.slow
def test_a_log_shared_by_workers_is_rotated_without_loss(
    example_site: Path, tmp_path: Path
) -> None:
    """``--workers 2`` share one file: each process notices the move on its
    own, none mixes the new file with the old one's -wal/-shm."""
    db = tmp_path / "questions.db"
    moved = tmp_path / "questions.db.1"
    args = ("--workers", "2", "--questions-log", str(db), "--rate-limit", "0")

    def ask_many(url: str, n: int) -> list[str]:
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(lambda i: ask(url, QUESTIONS[i % 5]), range(n)))

    log = tmp_path / "server.log"
    try:
        with ragcite_serve(str(example_site), *args, log=log) as (url, _):
            before = ask_many(url, 20)
            wait_until(lambda: len(ids_in(db) or []) == 20, 20)
            db.rename(moved)
            db.touch(mode=0o600)
            wait_until(lambda: sorted(ids_in(moved) or []) == sorted(before), 10)
            after = ask_many(url, 20)
            wait_until(lambda: sorted(ids_in(db) or []) == sorted(after), 20)
            assert {vote(url, a).status_code for a in after[:4]} == {200}
        assert sorted(ids_in(moved) or []) == sorted(before)
        assert sorted(ids_in(db) or []) == sorted(after)
        assert intact(db)
        assert intact(moved)
        text = log.read_text("utf-8")
        assert "Traceback" not in text
        assert 1 <= text.count("moved or deleted") <= 2
    except (AssertionError, KeyError) as failure:  # what the workers said
        tail = log.read_text("utf-8", "replace")[-6000:]
        raise AssertionError(f"{failure!r}; the server's log:\n{tail}") from failure


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of our own: a disk that really fills up."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount = shutil.which("mount")
    result = subprocess.run(
        [mount or "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(
            "cannot mount a small tmpfs here (needs root with CAP_SYS_ADMIN; "
            "test_feedback.py fills a log with PRAGMA max_page_count instead): "
            + result.stderr.strip()
        )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """A file that takes every free byte of *folder*'s file system."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    assert os.statvfs(folder).f_bavail == 0
    return filler


@pytest.mark.slow
def test_a_full_disk_keeps_the_rows_and_writes_them_when_space_returns(
    example_site: Path, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = small_disk / "questions.db"
    with caplog.at_level(logging.WARNING), log_server(example_site, db) as url:
        first = ask(url, QUESTIONS[0])
        wait_until(lambda: ids_in(db) == [first], 10)
        filler = fill(small_disk)
        waiting = [ask(url, q) for q in QUESTIONS[1:4]]
        for answer_id in waiting:  # not "no such answer": the log failed
            refused = vote(url, answer_id)
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "log_unavailable"
        assert ids_in(db) == [first]
        filler.unlink()
        # no new request needed: the writer tries again on its own
        wait_until(lambda: ids_in(db) == [first, *waiting], 10)
        assert vote(url, waiting[0]).status_code == 200
        assert vote(url, first).status_code == 200
    assert ids_in(db) == [first, *waiting]
    assert intact(db)
    (warning,) = log_warnings(caplog)
    assert "cannot write the question log" in warning


def test_a_log_that_cannot_be_opened_for_a_moment_is_tried_again(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite's I/O error at the first read (here its -shm cannot be made on a
    full disk: SQLITE_IOERR_SHMSIZE, which two --workers processes opening
    the log at once have also met) passes a moment later: the log is tried
    again instead of being given up for the life of the server."""
    db = small_disk / "questions.db"
    open_log(db).close()  # an existing log: its -shm is made again on open
    db.chmod(0o600)
    filler = fill(small_disk)
    threading.Timer(0.3, filler.unlink).start()
    with caplog.at_level(logging.WARNING):
        log = QuestionLog.open(db)
    assert log is not None
    try:
        log.record(question_log.Asked(
            answer_id="d" * 32, asked_at=question_log.utc_now(), site="",
            version="", question="q", selection_chars=0, selection=None,
            outcome="not_found", confidence=None, answer="", cited="[]",
            latency_ms=1.0, generator="extractive", door="api",
        ))  # fmt: skip
        wait_until(lambda: ids_in(db) == ["d" * 32], 10)
    finally:
        log.close()
    assert not log_warnings(caplog)
