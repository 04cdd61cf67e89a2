"""The question log's file: opened one process at a time, and watched.

A server's processes (``--workers``) open one file; the first to find it
empty clears what a moved log left beside it, and one that meets another's
lock tries again (:func:`open_at_start`). :class:`LogFile` remembers which
file it opened, so the writer (:mod:`~sphinx_ragcite.questions.log`) can
notice logrotate moving it away and finish it cleanly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from dataclasses import astuple, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx_ragcite.questions.schema import LogVersionError, open_log

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

logger = logging.getLogger("sphinx_ragcite.server")

#: Milliseconds the writer waits for a lock another process holds (replicas
#: share one file): only the writer thread waits, never an answer.
BUSY_TIMEOUT_MS = 30_000
#: SQLite's primary result codes a later try can get past: busy, locked,
#: read-only, I/O error, full, cannot open. Any other error (the table
#: dropped, say) loses the batch's rows.
RETRYABLE = frozenset({5, 6, 8, 10, 13, 14})
#: Seconds between the tries to open the log at start, when SQLite says it
#: is busy, locked or failed an I/O (another process opening it at once).
OPEN_RETRIES = (0.05, 0.1, 0.2, 0.4, 0.8)
#: The mode the log is created with: what readers typed is for its owner.
MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class SiteRow:
    """A row of ``sites``: where a served site's index and pages are."""

    name: str
    #: absolute
    build_dir: str
    #: conf.py's html_baseurl (the published site), else "": links then go
    #: into build_dir (a server's own address may not outlive it)
    base_url: str


@dataclass
class LogFile:
    """The open log, and what its file and its -wal/-shm were when opened:
    how the writer notices the path now names another file."""

    connection: sqlite3.Connection
    #: (st_dev, st_ino) of the log
    ident: tuple[int, int]
    #: (st_dev, st_ino) of its "-wal" and "-shm" files
    side: dict[str, tuple[int, int]]

    @classmethod
    def open(cls, path: Path, sites: Iterable[SiteRow]) -> LogFile:
        """The log at *path*, created 0600 if missing, its *sites* registered.

        An empty file (new, or made by logrotate's ``create``) cannot own a
        -wal or -shm: any beside it belong to the log moved away, which a
        process that has not noticed yet may still hold. SQLite drops such a
        -wal itself but would share that -shm, and so the other process's
        view of the old log: both are unlinked first (the holder keeps its
        open files). One process of the server's at a time does this.
        """
        with _one_at_a_time(path.parent):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _CLOEXEC, MODE)
            except FileExistsError:
                pass
            else:  # a file nobody else has open, so closing it unlocks nothing
                os.close(fd)
            if _size(path) == 0:
                for suffix in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        Path(f"{path}{suffix}").unlink()
            connection = open_log(path)
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO sites (name, build_dir, base_url) "
                    "VALUES (?, ?, ?)",
                    [astuple(site) for site in sites],
                )
            ident = _ident(path)
            side = {}
            for suffix in ("-wal", "-shm"):
                found = _ident(Path(f"{path}{suffix}"))
                if found is not None:
                    side[suffix] = found
        except BaseException:
            connection.close()
            raise
        if ident is None:
            connection.close()
            raise FileNotFoundError(f"{path} vanished as it was opened")
        return cls(connection, ident, side)

    def change(self, path: Path) -> str | None:
        """How the file at *path* is no longer this log, or None."""
        try:
            now = os.stat(path)
        except FileNotFoundError:
            return "moved or deleted"
        except OSError:
            return None  # cannot look: the write will say what is wrong
        if (now.st_dev, now.st_ino) != self.ident:
            return "moved or deleted"
        if now.st_size == 0:  # a log in WAL mode is never empty: copytruncate
            return "truncated"
        return None

    def retire(self, path: Path, change: str) -> None:
        """Finish with a log that moved: copy what its -wal holds into it
        (through the open file, wherever it is now), unlink its -wal and -shm
        (only while they are still the ones it opened: another process of a
        server with --workers may have made new ones), close it.

        A truncated log has lost the pages its -wal builds on; closing may
        still copy that -wal's pages into it, a file SQLite cannot read
        ("file is not a database"), so it is emptied again, as it was left.
        """
        if change != "truncated":
            try:
                self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as error:  # what is left, the last holder copies
                logger.debug("question log %s: checkpoint failed (%s)", path, error)
        for suffix, ident in self.side.items():
            beside = Path(f"{path}{suffix}")
            if _ident(beside) == ident:
                with contextlib.suppress(OSError):
                    beside.unlink()
        self.connection.close()
        if change == "truncated" and _ident(path) == self.ident:
            with contextlib.suppress(OSError):
                os.truncate(path, 0)


@contextlib.contextmanager
def _one_at_a_time(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on *folder* (a lock SQLite's own ``fcntl``
    locks on the log do not see): the server's processes open the log one
    at a time. Where it cannot be had (no ``fcntl``, a file system without
    ``flock``) they go on without it."""
    if fcntl is None:
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _ident(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def open_at_start(
    path: Path, sites: tuple[SiteRow, ...], days: int | None
) -> LogFile | None:
    """The log at *path* (created 0600 if missing), its *sites* registered
    and its old rows deleted; None, after one warning, if it cannot be used."""
    failure: Exception | None = None
    for pause in (*OPEN_RETRIES, None):
        try:
            file = LogFile.open(path, sites)
        except (sqlite3.Error, LogVersionError) as error:
            # processes of --workers N opening one file at once can meet
            # a lock or an I/O error that is gone a moment later
            if pause is not None and _transient(error):
                logger.debug("question log %s: %s; again", path, why(error))
                time.sleep(pause)
                continue
            failure = error
        except OSError as error:
            failure = error
        break
    if failure is not None:
        logger.warning(
            "cannot open the question log %s (%s); answering without it",
            path,
            why(failure),
        )
        return None
    try:
        if days:
            prune(file.connection, days)
    except (sqlite3.Error, OSError) as error:
        file.connection.close()
        logger.warning(
            "cannot write the question log %s (%s); answering without it",
            path,
            error,
        )
        return None
    if _mode(path) & 0o004:  # made by an older version, or by hand
        logger.warning(
            "the question log %s can be read by every user of this machine; "
            "it holds what readers typed: chmod 600 it",
            path,
        )
    return file


def stamp(moment: datetime) -> str:
    """*moment* (UTC) as the log's columns hold it (see ``utc_now``)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def why(error: Exception) -> str:
    """*error*'s message, with SQLite's own name of it (``SQLITE_IOERR_...``)."""
    name = getattr(error, "sqlite_errorname", None)
    return f"{error}; {name}" if name else str(error)


def _mode(path: Path) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def _transient(error: Exception) -> bool:
    """A failure to open that may pass: SQLite's own, or one ``open_log``
    reported as "not a question log" while the file could not be read."""
    if isinstance(error, LogVersionError):
        read = error.__context__  # what open_log's first read raised
        return isinstance(read, sqlite3.Error) and retryable(read)
    return retryable(error)


def retryable(error: Exception) -> bool:
    """A failure a later try can get past (a full disk, a lock, I/O)."""
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in RETRYABLE
    return isinstance(error, OSError)


def prune(connection: sqlite3.Connection, days: int) -> int:
    """Delete the questions (and their feedback) older than *days* days."""
    cutoff = stamp(datetime.now(timezone.utc) - timedelta(days=days))
    with connection:
        deleted = connection.execute(
            "DELETE FROM questions WHERE asked_at < ?", (cutoff,)
        ).rowcount
    if deleted:
        logger.info(
            "question log: deleted %d question(s) older than %d days", deleted, days
        )
    return deleted
