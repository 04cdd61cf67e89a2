"""Question logs -> one in-memory database of the rows a report covers.

Each log (one per server replica) is checked with :func:`open_log` and then
attached in turn: its rows are copied once by ``answer_id`` (a log copied
twice, or an answer in two files, counts once), and each answer keeps its
latest feedback. Everything after this is SQL on the merged tables.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sphinx_ragcite.questions.schema import open_log

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


@dataclass(frozen=True)
class Merged:
    db: sqlite3.Connection
    #: rows read from the files (after the filters), before duplicates went
    rows_read: int


def merge(
    paths: Sequence[Path], *, since: str | None = None, site: str | None = None
) -> Merged:
    """The rows of every log in *paths* asked on or after *since* (a date),
    of *site* when given; raises what :func:`open_log` raises for a bad file."""
    for path in paths:
        open_log(path, create=False).close()
    db = sqlite3.connect(":memory:")
    db.executescript(MERGED)
    where, params = ["1"], []
    if since:
        where.append("asked_at >= ?")
        params.append(since)
    if site is not None:
        where.append("site = ?")
        params.append(site)
    read = 0
    for path in paths:
        db.execute("ATTACH DATABASE ? AS log", (str(path),))
        try:
            with db:
                read += db.execute(
                    f"SELECT count(*) FROM log.questions WHERE {' AND '.join(where)}",
                    params,
                ).fetchone()[0]
                db.execute(
                    f"INSERT OR IGNORE INTO q SELECT {_COLUMNS} FROM log.questions "
                    f"WHERE {' AND '.join(where)}",
                    params,
                )
                db.execute(
                    "INSERT INTO f SELECT answer_id, helpful, reason, given_at "
                    "FROM log.feedback WHERE true ON CONFLICT (answer_id) DO UPDATE "
                    "SET helpful = excluded.helpful, reason = excluded.reason, "
                    "given_at = excluded.given_at WHERE excluded.given_at > f.given_at"
                )
                db.execute(
                    "INSERT OR IGNORE INTO s SELECT name, build_dir, base_url "
                    "FROM log.sites"
                )
        finally:
            db.execute("DETACH DATABASE log")
    return Merged(db, read)
