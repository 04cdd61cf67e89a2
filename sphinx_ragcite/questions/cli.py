"""``ragcite report``: check the arguments, build the report, write its files."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import stat
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.questions.page import render
from sphinx_ragcite.questions.report import build_report
from sphinx_ragcite.questions.schema import LogVersionError

if TYPE_CHECKING:
    from collections.abc import Sequence

#: The files SQLite keeps beside a log: writing over one loses rows too.
SIBLINGS = ("", "-wal", "-shm", "-journal")


def report(
    logs: Sequence[str],
    html: str,
    json_out: str | None,
    *,
    since: str | None = None,
    site: str | None = None,
) -> int:
    """Write the report of *logs*; every problem is one :class:`RagciteError`."""
    if since is not None:
        try:
            since = date.fromisoformat(since).isoformat()
        except ValueError:
            raise RagciteError(f"--since {since!r}: not a date (YYYY-MM-DD)") from None
    if any("\x00" in name for name in [*logs, html, json_out or ""]):
        raise RagciteError("a file name holds a NUL character")
    outputs = {"--html": Path(html)}
    if json_out:
        outputs["--json"] = Path(json_out)
    check_outputs(outputs, [Path(p) for p in logs])
    paths = list(dict.fromkeys(_resolved(Path(p)) for p in logs))
    try:
        data = build_report(paths, since=since, site=site)
    except (FileNotFoundError, LogVersionError) as error:
        raise RagciteError(str(error)) from None
    except sqlite3.Error as error:
        raise RagciteError(f"cannot read the question logs: {error}") from None
    except OSError as error:
        raise RagciteError(f"cannot read the question logs: {error}") from None
    texts = [render(data)]
    if json_out:
        texts.append(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_all(list(zip(outputs.values(), texts, strict=True)))
    gaps = data["unanswered"]
    skipped = (
        f"; skipped {data['skipped']:,} rows the server never writes (edited?)"
        if data["skipped"]
        else ""
    )
    print(
        f"{data['questions']:,} questions ({data['duplicates']:,} duplicates merged), "
        f"{gaps['asked']:,} unanswered in {len(gaps['groups']):,} groups{skipped}; "
        f"wrote {html}" + (f" and {json_out}" if json_out else "")
    )
    return 0


def check_outputs(outputs: dict[str, Path], logs: Sequence[Path]) -> None:
    """Refuse, before anything is read or written, an output that is a folder,
    one of the *logs* or a file SQLite keeps beside one (``-wal``...), or the
    other output: the same file by name, symlink or hard link."""
    inputs: dict[object, str] = {}
    for log in logs:
        for base in (log, _resolved(log)):
            if not base.name:  # "/" or "." as given: no file of its own
                continue
            for end in SIBLINGS:
                sibling = base.with_name(base.name + end)
                for key in _identities(sibling):
                    inputs.setdefault(key, str(sibling))
    taken: dict[object, str] = {}
    for option, path in outputs.items():
        if _is_dir(path):
            raise RagciteError(
                f"{option} {path}: is a folder; give the name of the file to write"
            )
        keys = _identities(path)
        for key in keys:
            if key in inputs:
                raise RagciteError(
                    f"{option} {path}: the report reads {inputs[key]} (the same "
                    "file); refusing to write over it, give another file"
                )
            if key in taken:
                raise RagciteError(
                    f"{option} {path}: the same file as {taken[key]}; give "
                    "two different files"
                )
        taken.update(dict.fromkeys(keys, option))


def _identities(path: Path) -> set[object]:
    """What names *path*'s file: its resolved path, and when it exists its
    device and inode (a hard link, or another spelling on a case-blind disk)."""
    keys: set[object] = {("path", str(_resolved(path)))}
    try:
        found = path.stat()
    except (OSError, ValueError):
        return keys
    keys.add(("inode", found.st_dev, found.st_ino))
    return keys


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: take it as given
        return path.absolute()


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def write_all(files: list[tuple[Path, str]]) -> None:
    """Each text to its path, whole or not at all: all are written to
    temporary files beside their targets first, then each replaces its
    target; whatever fails, no temporary file is left behind.

    A target that is there and no plain file (a symlink, ``/dev/stdout``, a
    pipe) is written through, as the shell's ``>`` would: replacing it would
    put a file where the link or the device was.
    """
    temps: list[Path] = []
    target = Path()
    try:
        for target, text in files:
            if _through(target):
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.with_name(f".ragcite-{secrets.token_hex(6)}.tmp")
            temps.append(temp)
            with open(temp, "x", encoding="utf-8") as out:
                out.write(text)
        left = iter(temps)
        for target, text in files:
            if _through(target):
                with open(target, "w", encoding="utf-8") as out:
                    out.write(text)
            else:
                os.replace(next(left), target)
    except (OSError, ValueError) as error:
        raise RagciteError(f"cannot write {target}: {error}") from None
    finally:
        for temp in temps:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)


def _through(path: Path) -> bool:
    """Whether *path* is there and is no plain file (see :func:`write_all`)."""
    try:
        mode = path.lstat().st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode)
