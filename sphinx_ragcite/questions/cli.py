"""``ragcite report``: check the arguments, build the report, write its files."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.questions.page import render
from sphinx_ragcite.questions.report import build_report
from sphinx_ragcite.questions.schema import LogVersionError

if TYPE_CHECKING:
    from collections.abc import Sequence


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
    paths = list(dict.fromkeys(Path(p).resolve() for p in logs))
    try:
        data = build_report(paths, since=since, site=site)
    except FileNotFoundError as error:
        raise RagciteError(str(error)) from None
    except LogVersionError as error:
        raise RagciteError(str(error)) from None
    except sqlite3.Error as error:
        raise RagciteError(f"cannot read the question logs: {error}") from None
    _write(Path(html), render(data))
    if json_out:
        _write(Path(json_out), json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    gaps = data["unanswered"]
    print(
        f"{data['questions']:,} questions ({data['duplicates']:,} duplicates merged), "
        f"{gaps['asked']:,} unanswered in {len(gaps['groups']):,} groups; "
        f"wrote {html}" + (f" and {json_out}" if json_out else "")
    )
    return 0


def _write(path: Path, text: str) -> None:
    """*text* to *path* whole or not at all (``*.tmp``, then replace)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    except OSError as error:
        raise RagciteError(f"cannot write {path}: {error}") from None
