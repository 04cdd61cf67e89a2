"""Bytes in and out of ``_ragcite/``: deterministic JSON, atomic writes, safe reads.

A built site may come from anywhere (a download, a CI artefact), so the
reader trusts no name the manifest gives it: every file must be a plain file
inside the index folder, reached without following a link out of it, and no
larger than the manifest says.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from sphinx_ragcite.errors import SiteIndexError

#: Said after every complaint about an index: the one fix there is.
REBUILD = "Rebuild the site with sphinx-ragcite (python -m sphinx -b html SRC OUT)."
#: No index file is read beyond this size, whatever the manifest claims.
MAX_FILE_BYTES = 4 << 30


def dumps(obj: Any) -> str:
    """JSON with sorted keys and no spaces: same data, same bytes."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary name, then rename: a crash never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def index_path(directory: Path, name: object) -> Path:
    """*name* as a path inside *directory*, or :class:`SiteIndexError`.

    Only relative POSIX names without ``..``, and no component (the folder
    itself included) may be a symbolic link.
    """
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        raise SiteIndexError(f"{directory} names a file {name!r}. {REBUILD}")
    parts = PurePosixPath(name).parts
    if PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
        raise SiteIndexError(
            f"{directory}/manifest.json names {name!r}, outside the index. {REBUILD}"
        )
    path = directory
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise SiteIndexError(
                f"{path} is a symbolic link; index files must be plain files "
                f"inside {directory}. {REBUILD}"
            )
    return path


def read_index_file(directory: Path, name: object, size: int) -> bytes:
    """The bytes of one file the manifest names, which must have *size* bytes."""
    path = index_path(directory, name)
    if not 0 <= size <= MAX_FILE_BYTES:
        raise SiteIndexError(f"{path}: the manifest gives it {size} bytes. {REBUILD}")
    data = read_plain_file(path, size + 1)
    if len(data) != size:
        raise SiteIndexError(
            f"{path} is corrupt: {len(data)} bytes, the manifest says {size}. "
            + REBUILD
        )
    return data


def read_plain_file(path: Path, limit: int) -> bytes:
    """At most *limit* bytes of a plain file, opened without following links.

    Opened without blocking: a FIFO named by a doctored index would otherwise
    hang the reader before it could say what is wrong.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise SiteIndexError(
            f"{path} is missing (listed in {path.parent}/manifest.json). {REBUILD}"
        ) from None
    except OSError as error:
        raise SiteIndexError(f"{path} cannot be read ({error}). {REBUILD}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise SiteIndexError(f"{path} is not a regular file. {REBUILD}")
        return f.read(limit)
