"""Question logs -> one in-memory database of the rows a report covers.

Each log (one per server replica) is opened read-only
(:func:`.reading.read_only`) and attached in turn: its rows are copied once by
``answer_id`` (a log copied twice, or an answer in two files, counts once),
and each answer keeps its latest feedback. A row whose columns do not hold
what the server writes (a log edited by hand: text in ``latency_ms``, a BLOB
question, a date that is none) is skipped and counted, so the report still
shows everything else and says which rows it left out. Everything after this
is SQL on the merged tables.
"""

from __future__ import annotations

import sqlite3
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.questions.reading import read_only

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

MERGED = """
CREATE TABLE q (
    answer_id TEXT PRIMARY KEY, asked_at TEXT, site TEXT, question TEXT,
    outcome TEXT, confidence REAL, answer TEXT, cited TEXT, latency_ms REAL,
    door TEXT
);
CREATE TABLE f (answer_id TEXT PRIMARY KEY, helpful INTEGER, reason TEXT,
                given_at TEXT);
CREATE TABLE s (name TEXT PRIMARY KEY, build_dir TEXT, base_url TEXT);
"""
_COLUMNS = (
    "answer_id, asked_at, site, question, outcome, confidence, answer, cited, "
    "latency_ms, door"
)


_TEXT = "typeof({}) = 'text'"
_TEXT_OR_NULL = "typeof({}) IN ('text', 'null')"
#: What each column read must hold, per table: the first one a row breaks is
#: named in the report. Each condition is true or false, never NULL.
CHECKS: dict[str, dict[str, str]] = {
    "questions": {
        "answer_id": _TEXT,
        # a real day first: through julianday() 02-31 comes back as 03-03
        "asked_at": "typeof({0}) = 'text' AND coalesce(date(julianday(substr({0}, "
        "1, 10))) = substr({0}, 1, 10) AND substr({0}, 1, 4) >= '0001', 0)",
        "site": _TEXT,
        "question": _TEXT,
        "outcome": _TEXT,
        "confidence": "typeof({}) IN ('integer', 'real', 'null')",
        "answer": _TEXT,
        "cited": _TEXT,
        "latency_ms": "typeof({0}) IN ('integer', 'real') AND abs({0}) < 1e300",
        "door": _TEXT,
    },
    "feedback": {
        "answer_id": _TEXT,
        "helpful": "typeof({0}) IN ('integer', 'real') AND {0} IN (0, 1)",
        "reason": _TEXT_OR_NULL,
        "given_at": _TEXT,
    },
    "sites": {"name": _TEXT, "build_dir": _TEXT_OR_NULL, "base_url": _TEXT_OR_NULL},
}
#: skipped rows the report names (all are counted)
MAX_NAMED = 20


def _valid(table: str) -> str:
    return " AND ".join(f"({c.format(col)})" for col, c in CHECKS[table].items())


def _first_broken(table: str) -> str:
    cases = " ".join(
        f"WHEN NOT ({c.format(col)}) THEN '{col}'" for col, c in CHECKS[table].items()
    )
    return f"CASE {cases} END"


@dataclass(frozen=True)
class Merged:
    db: sqlite3.Connection
    #: rows read from the files (after the filters), before duplicates went
    rows_read: int
    #: rows of the files left out because a column held what the server never
    #: writes, whatever the filters
    skipped: int = 0
    #: the first :data:`MAX_NAMED` of them: ``{"log", "table", "row", "column"}``
    #: (``row`` is the rowid, ``column`` the first column that is wrong)
    skipped_rows: list[dict[str, Any]] = field(default_factory=list)


def merge(
    paths: Sequence[Path], *, since: str | None = None, site: str | None = None
) -> Merged:
    """The rows of every log in *paths* asked on or after *since* (a date),
    of *site* when given; raises what :func:`.reading.read_only` raises for a
    bad file, each file checked before any is read."""
    with ExitStack() as stack:
        uris = [stack.enter_context(read_only(path)) for path in paths]
        db = sqlite3.connect(":memory:", uri=True)  # uri: ATTACH takes URIs
        # text that is not UTF-8 (edited by hand) is shown, marked, not fatal
        db.text_factory = lambda data: data.decode("utf-8", "replace")
        try:
            db.executescript(MERGED)
            merged = _merge(db, list(zip(paths, uris, strict=True)), since, site)
        except BaseException:
            db.close()
            raise
    return merged


def _merge(
    db: sqlite3.Connection,
    logs: list[tuple[Path, str]],
    since: str | None,
    site: str | None,
) -> Merged:
    where, params = ["1"], []
    if since:
        where.append("asked_at >= ?")
        params.append(since)
    if site is not None:
        where.append("site = ?")
        params.append(site)
    chosen = " AND ".join([*where, _valid("questions")])
    read = skipped = 0
    named: list[dict[str, Any]] = []
    for path, uri in logs:
        db.execute("ATTACH DATABASE ? AS log", (uri,))
        try:
            with db:
                for table in CHECKS:
                    skipped += _broken(db, table, path, named)
                read += db.execute(
                    f"SELECT count(*) FROM log.questions WHERE {chosen}", params
                ).fetchone()[0]
                db.execute(
                    f"INSERT OR IGNORE INTO q SELECT {_COLUMNS} FROM log.questions "
                    f"WHERE {chosen}",
                    params,
                )
                db.execute(
                    "INSERT INTO f SELECT answer_id, helpful, reason, given_at "
                    f"FROM log.feedback WHERE {_valid('feedback')} "
                    "ON CONFLICT (answer_id) DO UPDATE "
                    "SET helpful = excluded.helpful, reason = excluded.reason, "
                    "given_at = excluded.given_at WHERE excluded.given_at > f.given_at"
                )
                db.execute(
                    "INSERT OR IGNORE INTO s SELECT name, build_dir, base_url "
                    f"FROM log.sites WHERE {_valid('sites')}"
                )
        finally:
            db.execute("DETACH DATABASE log")
    return Merged(db, read, skipped, named)


def _broken(
    db: sqlite3.Connection, table: str, path: Path, named: list[dict[str, Any]]
) -> int:
    """How many rows of the attached log's *table* break :data:`CHECKS`; the
    first ones are added to *named* up to :data:`MAX_NAMED`."""
    bad = f"SELECT rowid AS r, {_first_broken(table)} AS c FROM log.{table}"
    named += [
        {"log": str(path), "table": table, "row": row, "column": column}
        for row, column in db.execute(
            f"SELECT * FROM ({bad}) WHERE c IS NOT NULL ORDER BY r LIMIT ?",
            (MAX_NAMED - len(named),),
        )
    ]
    count: int = db.execute(
        f"SELECT count(*) FROM ({bad}) WHERE c IS NOT NULL"
    ).fetchone()[0]
    return count
