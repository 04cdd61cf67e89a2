"""The question log's SQLite schema: one file per server, read by ``ragcite report``.

The schema is versioned with ``PRAGMA user_version`` so a report can refuse a
log it does not understand instead of misreading it. Nothing that identifies a
reader is ever a column: no address, cookie or user agent.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

#: Raise when a column changes; :func:`open_log` refuses other versions.
SCHEMA_VERSION = 1

#: ``outcome`` is the answer's outcome (``answer``, ``passages``, ``not_found``).
#: ``cited`` is a JSON list of ``{"id": passage ID, "url": URL or null}``: the
#: answer's citations, or the shown passages of a ``passages`` outcome.
#: ``asked_at`` / ``given_at`` are UTC ISO 8601 (``2026-11-26T15:04:05.123456Z``).
SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (
    id INTEGER PRIMARY KEY,
    answer_id TEXT NOT NULL UNIQUE,
    asked_at TEXT NOT NULL,
    site TEXT NOT NULL DEFAULT '',
    version TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL,
    selection_chars INTEGER NOT NULL DEFAULT 0,
    selection TEXT,
    outcome TEXT NOT NULL,
    confidence REAL,
    answer TEXT NOT NULL DEFAULT '',
    cited TEXT NOT NULL DEFAULT '[]',
    latency_ms REAL NOT NULL,
    generator TEXT NOT NULL DEFAULT '',
    door TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS questions_asked_at ON questions (asked_at);
CREATE TABLE IF NOT EXISTS feedback (
    answer_id TEXT PRIMARY KEY REFERENCES questions (answer_id) ON DELETE CASCADE,
    helpful INTEGER NOT NULL,
    reason TEXT,
    given_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sites (
    name TEXT PRIMARY KEY,
    build_dir TEXT NOT NULL,
    base_url TEXT NOT NULL DEFAULT ''
);
"""

#: ``door``: where the question came in.
DOORS = ("api", "stream", "mcp")
OUTCOMES = ("answer", "passages", "not_found")


class LogVersionError(ValueError):
    """The file is a question log of another schema version, or not one at all."""


def open_log(path: str | Path, *, create: bool = True) -> sqlite3.Connection:
    """Open (and with *create*, set up) the log at *path* in WAL mode."""
    path = Path(path)
    if not create and not path.is_file():
        raise FileNotFoundError(f"no question log at {path}")
    connection = sqlite3.connect(path, check_same_thread=False)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        }
    except sqlite3.DatabaseError as error:
        connection.close()
        raise LogVersionError(f"{path} is not a question log ({error})") from None
    if tables and "questions" not in tables:  # some other SQLite file
        connection.close()
        raise LogVersionError(f"{path} is not a question log (no questions table)")
    if tables and version != SCHEMA_VERSION:
        connection.close()
        raise LogVersionError(
            f"{path} is a question log of schema version {version}; this "
            f"sphinx-ragcite reads version {SCHEMA_VERSION}"
        )
    if create:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.executescript(SCHEMA)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.commit()
    elif "questions" not in tables:
        connection.close()
        raise LogVersionError(f"{path} is not a question log (no questions table)")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection
