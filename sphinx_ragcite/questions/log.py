"""The question log's writer: one thread fed by a queue, so no answer waits on disk.

A server with ``--questions-log FILE`` hands each answered question to
:meth:`QuestionLog.record` (a queue put, nothing more) and the one writer
thread appends them in batches, one transaction each. Feedback goes through
the same queue, so a vote always finds the row of the answer it is about.
A log that cannot be opened or written costs one warning; the answers go on.

The file is created 0600 (it holds what readers typed; SQLite gives its
-wal and -shm files the same mode). Rows a write could not keep (a full
disk, a lock held too long) wait and are written once it can; a vote on an
answer whose row is not written is refused (:class:`LogUnavailable`), never
told there is no such answer. Before each batch, and every
:data:`TICK` seconds when idle, the writer looks at the configured path, as
logging's ``WatchedFileHandler`` does: a log moved or deleted (logrotate's
rename and create, ``mv``, ``rm``) is completed and closed, and a new one is
made at the path, with one warning. The file itself (opening it, knowing
it again) is :mod:`~sphinx_ragcite.questions.logfile`'s.

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
from collections import OrderedDict
from concurrent.futures import Future, InvalidStateError
from dataclasses import astuple, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sphinx_ragcite.questions.logfile import (
    LogFile,
    SiteRow,
    open_at_start,
    prune,
    retryable,
    stamp,
    why,
)
from sphinx_ragcite.questions.schema import LogVersionError

if TYPE_CHECKING:
    from collections.abc import Iterable

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
#: Seconds between two looks of the idle writer at its file (moved? rows
#: waiting to be written again?): one ``stat`` call each.
TICK = 1.0
#: answer_ids of rows lost for good, remembered so that a vote on one is
#: refused as the log's failure, not told there is no such answer.
REMEMBER_LOST = 10_000


class LogUnavailable(RuntimeError):
    """The log could not store a vote (it cannot be written, or is closed)."""


def new_answer_id() -> str:
    """An answer's ID: 32 hex digits, unguessable, made when the answer is."""
    return secrets.token_hex(16)


def utc_now() -> str:
    """``2026-11-26T15:04:05.123456Z``: sorts as text, as the schema says."""
    return stamp(datetime.now(timezone.utc))


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
).replace("INSERT", "INSERT OR IGNORE", 1)  # a row tried again is written once
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
        file: LogFile,
        path: str | Path,
        *,
        days: int | None = None,
        keep_selections: bool = False,
        sites: Iterable[SiteRow] = (),
    ) -> None:
        self.path = str(path)
        #: rows older than this many days are deleted (None: kept for ever)
        self.days = days
        #: keep the selected text with its question (``--log-selections``)
        self.keep_selections = keep_selections
        #: rows that could not be written, and never will be
        self.lost = 0
        self._sites = tuple(sites)
        self._file: LogFile | None = file
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        #: rows a failed write kept, oldest first: written before new ones
        self._waiting: list[Asked] = []
        self._lost_ids: OrderedDict[str, None] = OrderedDict()
        self._lost_lock = threading.Lock()
        self._warned = False
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name="ragcite-questions", daemon=True
        )
        self._thread.start()

    @property
    def _connection(self) -> sqlite3.Connection | None:
        """The open connection (None while the log cannot be opened)."""
        return self._file.connection if self._file is not None else None

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        days: int | None = None,
        keep_selections: bool = False,
        sites: Iterable[SiteRow] = (),
    ) -> QuestionLog | None:
        """The log at *path* (created 0600 if missing), its *sites* registered
        and its old rows deleted; None, after one warning, if it cannot be used."""
        path = Path(path)
        sites = tuple(sites)
        file = open_at_start(path, sites, days)
        if file is None:
            return None
        return cls(file, path, days=days, keep_selections=keep_selections, sites=sites)

    def record(self, row: Asked) -> None:
        """Queue *row* for the writer; never blocks, never raises."""
        if self._closed:
            return
        if self._queue.qsize() + len(self._waiting) >= MAX_PENDING:
            why = f"the writer is behind by {MAX_PENDING} rows"
            self._lost([row], why)
            self._warn(why)
            return
        self._queue.put(row)

    def vote(self, answer_id: str, helpful: bool, reason: str | None) -> Future[bool]:
        """Store a reader's vote on an answer, replacing an earlier one.

        The future is True once stored, False if the log holds no such
        answer; it fails with :class:`LogUnavailable` if the log cannot
        store it (the answer's own row among what it could not write).
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
                wait = TICK
                if self.days:
                    wait = min(wait, max(0.0, next_prune - time.monotonic()))
                batch = self._take(wait)
                stop = any(item is _STOP for item in batch)
                items = [item for item in batch if item is not _STOP]
                # before any write: a moved log is not written
                self._watch(reopen=bool(items or self._waiting) or not stop)
                if items or self._waiting:
                    self._write(items)
                if self.days and time.monotonic() >= next_prune:
                    next_prune = time.monotonic() + PRUNE_EVERY
                    if self._file is not None:
                        try:
                            prune(self._file.connection, self.days)
                        except (sqlite3.Error, OSError) as error:
                            self._failed(error)
                if stop:
                    return
        finally:
            if self._waiting:
                logger.warning(
                    "%d question(s) could not be written to the question log %s "
                    "before the server stopped",
                    len(self._waiting),
                    self.path,
                )
                self._lost(self._waiting, "the server stopped")
                self._waiting = []
            if self._file is not None:
                self._file.connection.close()
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

    def _watch(self, reopen: bool = True) -> None:
        """Notice a log moved, deleted or truncated, and (if *reopen*) open
        a new one: not for a server stopping with nothing left to write."""
        path = Path(self.path)
        if self._file is not None:
            change = self._file.change(path)
            if change is None:
                return
            self._file.retire(path, change)
            self._file = None
            how = (
                "was truncated (copytruncate is not supported: the rows still "
                "in its -wal are lost)"
                if change == "truncated"
                else "was moved or deleted"
            )
            logger.warning(
                "the question log %s %s; logging to a new file at %s", path, how, path
            )
        if not reopen:
            return
        try:
            self._file = LogFile.open(path, self._sites)
        except (sqlite3.Error, OSError, LogVersionError) as error:
            self._failed(error)

    def _write(self, items: list[object]) -> None:
        rows = self._waiting + [item for item in items if isinstance(item, Asked)]
        self._waiting = []
        votes = [item for item in items if isinstance(item, _Vote)]
        if self._file is None:  # could not be opened again: keep the rows
            self._keep(rows)
            for vote in votes:
                _settle(vote.done, LogUnavailable("the question log cannot be opened"))
            return
        connection = self._file.connection
        found: list[bool] = []
        try:
            with connection:  # one transaction: all of it or none
                if rows:
                    connection.executemany(INSERT, [astuple(row) for row in rows])
                for vote in votes:
                    known = connection.execute(
                        "SELECT 1 FROM questions WHERE answer_id = ?",
                        (vote.answer_id,),
                    ).fetchone()
                    if known:
                        connection.execute(
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
            if retryable(error):
                self._keep(rows)
            else:
                self._lost(rows, str(error))
            self._warn(why(error))
            for vote in votes:
                _settle(vote.done, LogUnavailable(str(error)))
            return
        if self._warned and (rows or any(found)):  # written, not only read
            self._warned = False
            logger.info(
                "the question log %s can be written again (%d rows written)",
                self.path,
                len(rows),
            )
        for vote, known in zip(votes, found, strict=True):
            if not known and self._was_lost(vote.answer_id):
                _settle(vote.done, LogUnavailable("the answer's row was lost"))
            else:
                _settle(vote.done, known)

    def _keep(self, rows: list[Asked]) -> None:
        """Keep *rows* to write again (as many as :data:`MAX_PENDING` allows)."""
        room = max(0, MAX_PENDING - self._queue.qsize())
        self._waiting = rows[:room]
        if len(rows) > room:
            self._lost(rows[room:], f"{MAX_PENDING} rows wait already")

    def _failed(self, error: Exception) -> None:
        self._warn(why(error))

    def _lost(self, rows: list[Asked], why: str) -> None:
        """Count *rows* as lost for good, and remember their answer_ids."""
        with self._lost_lock:
            self.lost += len(rows)
            for row in rows:
                self._lost_ids[row.answer_id] = None
            while len(self._lost_ids) > REMEMBER_LOST:
                self._lost_ids.popitem(last=False)
        logger.debug("question log %s: %d row(s) lost (%s)", self.path, len(rows), why)

    def _was_lost(self, answer_id: str) -> bool:
        with self._lost_lock:
            return answer_id in self._lost_ids

    def _warn(self, why: str) -> None:
        """One warning while the log cannot be written (again after it could)."""
        if self._warned:
            return
        self._warned = True
        logger.warning(
            "cannot write the question log %s (%s); answers go on, but questions "
            "wait (up to %d) to be logged, and votes are refused, while it "
            "cannot be written",
            self.path,
            why,
            MAX_PENDING,
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
