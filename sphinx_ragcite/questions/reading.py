"""Question logs opened for reading only: a report writes nothing to a log or beside it.

A plain SQLite connection to a WAL database writes even to read: it makes
the ``-wal`` and ``-shm`` files, and the last one to close checkpoints and
deletes them. In a folder the reader may not write (a server's, a mounted
backup) that fails with "attempt to write a readonly database"; in one it may
write, a report run as another user would leave files the server cannot
use. Measured with SQLite 3.40 as an unprivileged user on a WAL log in a
``chmod 555`` folder (``tests/test_report.py`` keeps each case):

- with its ``-wal`` and ``-shm`` there (a server has it open, or was killed),
  ``mode=ro`` reads it, committed rows in the WAL included, and writes
  nothing; ``immutable=1`` would miss those rows;
- after a clean close (no ``-wal``) ``mode=ro`` fails, ``immutable=1`` reads
  it and is exact: every row is in the main file, and no one has it open;
- a ``-wal`` without its ``-shm`` (a log copied or restored with its WAL)
  opens neither way: both files are copied into a temporary folder and read
  there.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx_ragcite.questions.schema import SCHEMA_VERSION, LogVersionError

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextmanager
def read_only(path: Path) -> Iterator[str]:
    """A URI reading the question log at *path* (checked: a log of this
    schema version) without writing; for ``sqlite3.connect(uri, uri=True)``
    or an ``ATTACH`` on a connection opened so.

    Raises :class:`FileNotFoundError`, :class:`LogVersionError`,
    :class:`sqlite3.Error` or :class:`OSError` (the file cannot be read).
    """
    try:
        path = path.resolve()  # where SQLite looks for the -wal: past symlinks
    except RuntimeError:  # a symlink loop
        raise FileNotFoundError(f"no question log at {path} (a symlink loop)") from None
    if not path.is_file():
        raise FileNotFoundError(f"no question log at {path}")
    wal, shm = (path.with_name(path.name + end) for end in ("-wal", "-shm"))
    uri = path.as_uri()
    checked = None
    if wal.is_file() and shm.is_file():
        with suppress(sqlite3.OperationalError):  # e.g. a -shm it cannot read
            checked = _checked(f"{uri}?mode=ro", path)
    elif not wal.is_file() or wal.stat().st_size == 0:
        checked = _checked(f"{uri}?immutable=1", path)
    if checked is not None:
        yield checked
        return
    with tempfile.TemporaryDirectory(prefix="ragcite-log-") as folder:
        copy = Path(folder, "log.db")
        shutil.copyfile(path, copy)
        if wal.is_file():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        yield _checked(copy.as_uri(), path)


def _checked(uri: str, path: Path) -> str:
    """*uri*, once it opens as a question log this version reads."""
    connection = sqlite3.connect(uri, uri=True)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        }
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as error:  # not a database at all
        raise LogVersionError(f"{path} is not a question log ({error})") from None
    finally:
        connection.close()
    if "questions" not in tables:
        raise LogVersionError(f"{path} is not a question log (no questions table)")
    if version != SCHEMA_VERSION:
        raise LogVersionError(
            f"{path} is a question log of schema version {version}; this "
            f"sphinx-ragcite reads version {SCHEMA_VERSION}"
        )
    return uri
