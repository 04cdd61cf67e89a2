"""The question log's writer: one thread fed by a queue, so no answer waits on disk.

A server with ``--questions-log FILE`` hands each answered question to
:meth:`QuestionLog.record` (a queue put, nothing more) and the one writer
thread appends them in batches, one transaction each. Feedback goes through
the same queue, so a vote always finds the row of the answer it is about.
A log that cannot be opened or written costs one warning; the answers go on.

``cited`` holds ``{"id", "url"}`` per citation (per shown passage for the
``passages`` outcome); ``url`` is relative to its site's ``base_url`` in the
``sites`` table, and with several sites served each entry also names its
``site``. Nothing that identifies a reader is ever handed to the log.
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import sqlite3
import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import astuple, dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Literal

from sphinx_ragcite.questions.schema import LogVersionError, open_log

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from sphinx_ragcite.contracts import Answer

logger = logging.getLogger("sphinx_ragcite.server")

Door = Literal["api", "stream", "mcp"]
#: ``--questions-log-days`` at most: a century (a date further back than
#: year 1 cannot even be computed).
MAX_DAYS = 36_500
#: Seconds between two retention passes of the writer thread.
PRUNE_EVERY = 24 * 3600.0
#: Rows one transaction writes at most.
BATCH = 500
#: Rows waiting for the writer before new ones are dropped (a stalled disk
#: must not grow the server's memory without bound).
MAX_PENDING = 100_000
#: Seconds :meth:`QuestionLog.close` waits for the queue to be written.
CLOSE_TIMEOUT = 10.0
#: Milliseconds the writer waits for a lock another process holds (replicas
#: share one file): only the writer thread waits, never an answer.
BUSY_TIMEOUT_MS = 30_000


class LogUnavailable(RuntimeError):
    """The log could not store a vote (it cannot be written, or is closed)."""


def new_answer_id() -> str:
    """An answer's ID: 32 hex digits, unguessable, made when the answer is."""
    return secrets.token_hex(16)


def utc_now() -> str:
    """``2026-11-26T15:04:05.123456Z``: sorts as text, as the schema says."""
    return _utc(datetime.now(timezone.utc))


def _utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Asked:
    """One answered question: a row of ``questions``, fields in column order."""

    answer_id: str
    asked_at: str
    site: str
    version: str
    question: str
    selection_chars: int
    selection: str | None
    outcome: str
    confidence: float | None
    answer: str
    #: JSON, see the module's docstring
    cited: str
    latency_ms: float
    generator: str
    door: str


COLUMNS = tuple(f.name for f in fields(Asked))
INSERT = (
    f"INSERT INTO questions ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(COLUMNS))})"
)
VOTE = (
    "INSERT INTO feedback (answer_id, helpful, reason, given_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (answer_id) DO UPDATE SET helpful = excluded.helpful, "
    "reason = excluded.reason, given_at = excluded.given_at"
)


def asked(
    answer: Answer,
    *,
    answer_id: str,
    site: str,
    version: str,
    selection: str | None,
    keep_selection: bool,
    latency_ms: float,
    door: Door,
) -> Asked:
    """The row of *answer*; *selection* is the text the engine was given.

    Unless *keep_selection*, neither the selection nor an answer quoting it
    is kept (its answer is stored as ""): only the selection's length.
    """
    if answer.outcome == "passages":
        shown = [(p.passage_id, p.url, p.site) for p in answer.passages]
    else:
        shown = [(c.passage_id, c.url, c.site) for c in answer.citations]
    cited = []
    for passage_id, url, from_site in shown:
        entry: dict[str, str | None] = {"id": passage_id, "url": url}
        if from_site:  # the server's URL is NAME/page.html#ID: keep the site's own
            entry["url"] = url.removeprefix(f"{from_site}/") if url else url
            entry["site"] = from_site
        cited.append(entry)
    generator = answer.metadata.get("generator")
    quotes_selection = any(c.source_type == "selection" for c in answer.citations)
    return Asked(
        answer_id=answer_id,
        asked_at=utc_now(),
        site=site,
        version=version,
        question=answer.question,
        selection_chars=len(selection or ""),
        selection=selection if keep_selection and selection else None,
        outcome=answer.outcome,
        confidence=answer.confidence,
        answer="" if quotes_selection and not keep_selection else answer.answer,
        cited=json.dumps(cited, ensure_ascii=False),
        latency_ms=round(latency_ms, 2),
        generator=generator if isinstance(generator, str) else "",
        door=door,
    )


@dataclass(frozen=True)
class SiteRow:
    """A row of ``sites``: where a served site's index and pages are."""

    name: str
    #: absolute
    build_dir: str
    #: conf.py's html_baseurl (the published site), else "": links then go
    #: into build_dir (a server's own address may not outlive it)
    base_url: str


@dataclass(frozen=True)
class _Vote:
    answer_id: str
    helpful: bool
    reason: str | None
    given_at: str
    #: True once stored, False for an answer the log does not hold
    done: Future[bool] = field(default_factory=Future, compare=False)


_STOP = object()


class QuestionLog:
    """One SQLite file and the one thread that writes it.

    Make it with :meth:`open`, which returns None (after one warning) when
    the file cannot be used as a log.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: str,
        *,
        days: int | None = None,
        keep_selections: bool = False,
    ) -> None:
        self.path = path
        #: rows older than this many days are deleted (None: kept for ever)
        self.days = days
        #: keep the selected text with its question (``--log-selections``)
        self.keep_selections = keep_selections
        #: rows that could not be written
        self.lost = 0
        self._connection = connection
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._warned = False
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name="ragcite-questions", daemon=True
        )
        self._thread.start()

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        days: int | None = None,
        keep_selections: bool = False,
        sites: Iterable[SiteRow] = (),
    ) -> QuestionLog | None:
        """The log at *path* (created if missing), its *sites* registered and
        its old rows deleted; None, after one warning, if it cannot be used."""
        try:
            connection = open_log(path)
        except (sqlite3.Error, OSError, LogVersionError) as error:
            logger.warning(
                "cannot open the question log %s (%s); answering without it",
                path,
                error,
            )
            return None
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO sites (name, build_dir, base_url) "
                    "VALUES (?, ?, ?)",
                    [astuple(site) for site in sites],
                )
            if days:
                _prune(connection, days)
        except (sqlite3.Error, OSError) as error:
            connection.close()
            logger.warning(
                "cannot write the question log %s (%s); answering without it",
                path,
                error,
            )
            return None
        return cls(connection, str(path), days=days, keep_selections=keep_selections)

    def record(self, row: Asked) -> None:
        """Queue *row* for the writer; never blocks, never raises."""
        if self._closed:
            return
        if self._queue.qsize() >= MAX_PENDING:
            self._lost(1, f"the writer is behind by {MAX_PENDING} rows")
            return
        self._queue.put(row)

    def vote(self, answer_id: str, helpful: bool, reason: str | None) -> Future[bool]:
        """Store a reader's vote on an answer, replacing an earlier one.

        The future is True once stored, False if the log holds no such
        answer; it fails with :class:`LogUnavailable` if the log cannot
        store it.
        """
        vote = _Vote(answer_id, helpful, reason, utc_now())
        if self._closed:
            vote.done.set_exception(LogUnavailable("the question log is closed"))
        else:
            self._queue.put(vote)
        return vote.done

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Write what is queued, then close the file."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout)

    # -- the writer thread ----------------------------------------------------

    def _run(self) -> None:
        next_prune = time.monotonic() + PRUNE_EVERY
        try:
            while True:
                wait = max(0.0, next_prune - time.monotonic()) if self.days else None
                batch = self._take(wait)
                stop = any(item is _STOP for item in batch)
                items = [item for item in batch if item is not _STOP]
                if items:
                    self._write(items)
                if self.days and time.monotonic() >= next_prune:
                    next_prune = time.monotonic() + PRUNE_EVERY
                    try:
                        _prune(self._connection, self.days)
                    except (sqlite3.Error, OSError) as error:
                        self._failed(error)
                if stop:
                    return
        finally:
            self._connection.close()
            while True:  # votes that came after the end are answered, not left
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, _Vote):
                    _settle(item.done, LogUnavailable("the log is closed"))

    def _take(self, wait: float | None) -> list[object]:
        """What is queued, up to :data:`BATCH`, waiting *wait* s for the first."""
        try:
            batch = [self._queue.get(timeout=wait)]
        except queue.Empty:
            return []
        while len(batch) < BATCH:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _write(self, items: list[object]) -> None:
        rows = [astuple(item) for item in items if isinstance(item, Asked)]
        votes = [item for item in items if isinstance(item, _Vote)]
        found: list[bool] = []
        try:
            with self._connection:  # one transaction: all of it or none
                if rows:
                    self._connection.executemany(INSERT, rows)
                for vote in votes:
                    known = self._connection.execute(
                        "SELECT 1 FROM questions WHERE answer_id = ?",
                        (vote.answer_id,),
                    ).fetchone()
                    if known:
                        self._connection.execute(
                            VOTE,
                            (
                                vote.answer_id,
                                int(vote.helpful),
                                vote.reason,
                                vote.given_at,
                            ),
                        )
                    found.append(known is not None)
        except Exception as error:  # the writer outlives any failure
            if not isinstance(error, (sqlite3.Error, OSError)):
                logger.exception("question log %s: writing failed", self.path)
            self._failed(error, len(rows))
            for vote in votes:
                _settle(vote.done, LogUnavailable(str(error)))
            return
        for vote, known in zip(votes, found, strict=True):
            _settle(vote.done, known)

    def _failed(self, error: Exception, rows: int = 0) -> None:
        self._lost(rows, str(error))

    def _lost(self, rows: int, why: str) -> None:
        self.lost += rows
        if self._warned:
            logger.debug("question log %s: %d row(s) lost (%s)", self.path, rows, why)
            return
        self._warned = True
        logger.warning(
            "cannot write the question log %s (%s); answers go on, but questions "
            "are not logged while it cannot be written",
            self.path,
            why,
        )


def _settle(future: Future[bool], outcome: bool | Exception) -> None:
    """Give *future* its outcome, unless its waiter gave up (cancelled it)."""
    try:
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
    except InvalidStateError:
        pass


def _prune(connection: sqlite3.Connection, days: int) -> int:
    """Delete the questions (and their feedback) older than *days* days."""
    cutoff = _utc(datetime.now(timezone.utc) - timedelta(days=days))
    with connection:
        deleted = connection.execute(
            "DELETE FROM questions WHERE asked_at < ?", (cutoff,)
        ).rowcount
    if deleted:
        logger.info(
            "question log: deleted %d question(s) older than %d days", deleted, days
        )
    return deleted
