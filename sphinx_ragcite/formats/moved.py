"""``_ragcite/moved.js``: old links -> where their text is now.

Written from the link history (:mod:`sphinx_ragcite.extension.link_history`) at
build time; read by the widget (as a script, so pages opened from disk can
load it) and by the CLI and server to say where a vanished passage ID went.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.files import REBUILD

if TYPE_CHECKING:
    from collections.abc import Mapping

FILE_NAME = "moved.js"
PREFIX = "globalThis.ragcite_moved="

#: A passage URL, or [URL, opening words of the block inside that passage].
Moved = str | list[str]


def moved_file(moved: Mapping[str, Moved]) -> bytes:
    body = json.dumps(moved, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{PREFIX}{body};\n".encode()


def read_moved(data: bytes, where: str) -> dict[str, str]:
    """Old link -> the URL of its text now (the opening words are the widget's)."""
    damaged = f"{where} is damaged. {REBUILD}"
    body = data.decode("utf-8", "replace").strip()
    if not (body.startswith(PREFIX) and body.endswith(";")):
        raise SiteIndexError(damaged)
    try:
        moved = json.loads(body[len(PREFIX) : -1])
    except ValueError:
        raise SiteIndexError(damaged) from None
    if not isinstance(moved, dict):
        raise SiteIndexError(damaged)
    out: dict[str, str] = {}
    for old, value in moved.items():
        url = value[0] if isinstance(value, list) and value else value
        if not isinstance(url, str):
            raise SiteIndexError(
                f"{where}: the entry for {old!r} is not a URL. {REBUILD}"
            )
        out[old] = url
    return out
