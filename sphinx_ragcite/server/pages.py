"""The built pages over HTTP: llms.txt v2 ``Link`` headers, ``Accept: text/markdown``.

A page whose Markdown twin (``page.html.md``, ``guide/index.html.md``) sits
beside it, in a site with a ``llms.txt`` at its root, is sent with a
``Link`` header naming both (relative, so they hold under ``/NAME/`` and any
proxy prefix) and ``Vary: Accept``. A request that prefers ``text/markdown``
to ``text/html`` (q-values count; a tie, ``*/*`` or no ``Accept`` is HTML)
gets the twin instead, at the page's own URL. Nothing is ever 406: what
cannot be negotiated is HTML. The twin requested by its own URL names the
llms.txt that covers it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

import anyio.to_thread

from sphinx_ragcite.formats.llms_links import (
    LLMS_TXT,
    MARKDOWN_TYPE,
    TWIN_SUFFIX,
    link_header,
    relative_links,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

    from starlette.responses import Response
    from starlette.staticfiles import StaticFiles
    from starlette.types import Scope

#: characters kept as they are in a URL path made from a file's path
_SAFE = "/!$&'()*+,;=:@~._-"


@dataclass(frozen=True)
class Variant:
    """What a request for a page (or its twin) is answered with."""

    path: str
    stat: os.stat_result
    #: the page's URL from the site root, percent-encoded ("" or "a/" for folders)
    page_url: str
    #: the file is the Markdown twin, not the page
    markdown: bool
    #: the URL asked names the page, so its answer depends on ``Accept``
    negotiated: bool


def prefers_markdown(accept: str | None) -> bool:
    """*accept* ranks ``text/markdown`` above ``text/html`` (RFC 9110 12.5.1:
    the most specific range that matches a type gives its q-value)."""
    if not accept:
        return False
    ranges = list(_ranges(accept))
    markdown = _quality(ranges, "text", "markdown")
    return markdown > 0 and markdown > _quality(ranges, "text", "html")


def _ranges(accept: str) -> Iterable[tuple[str, str, float]]:
    for item in accept.split(","):
        media, *params = item.split(";")
        kind, _, sub = media.strip().lower().partition("/")
        if not kind or not sub:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = min(max(float(value.strip()), 0.0), 1.0)
                except ValueError:
                    q = 0.0
        yield kind, sub, q


def _quality(ranges: list[tuple[str, str, float]], kind: str, sub: str) -> float:
    best, found = -1, 0.0
    for k, s, q in ranges:
        rank = 2 if (k, s) == (kind, sub) else 1 if (k, s) == (kind, "*") else 0
        if (k, s) in ((kind, sub), (kind, "*"), ("*", "*")) and rank > best:
            best, found = rank, q
    return found


def find_variant(files: StaticFiles, path: str, scope: Scope) -> Variant | None:
    """The page (or twin) *path* names, if it has a twin and the site a llms.txt.

    Every file, the twin too, is found by the static files' own
    ``lookup_path``, so negotiation serves nothing they would refuse (a
    symlink out of the site); a path it cannot look up (NUL, a name over
    NAME_MAX) is left to them, and they answer 404.
    """
    if scope["method"] not in ("GET", "HEAD"):
        return None
    try:
        if not _is_file(files, LLMS_TXT):
            return None
        return _variant(files, path, scope)
    except (OSError, ValueError):
        return None


def _variant(files: StaticFiles, path: str, scope: Scope) -> Variant | None:
    full, found = files.lookup_path(path)
    url = "" if path in ("", ".") else path.replace(os.sep, "/")
    if found is not None and stat.S_ISDIR(found.st_mode):
        if not str(scope["path"]).endswith("/"):
            return None  # StaticFiles redirects to the folder
        url = f"{url}/" if url else ""
        path = os.path.join(path, "index.html")
        full, found = files.lookup_path(path)
    if found is None or not stat.S_ISREG(found.st_mode):
        return None
    if not _canonical(scope, url):
        return None  # its relative Link and Content-Location would miss
    if path.endswith(".html"):
        twin, twin_stat = files.lookup_path(path + TWIN_SUFFIX)
        if twin_stat is None or not stat.S_ISREG(twin_stat.st_mode):
            return None
        if prefers_markdown(_header(scope, b"accept")):
            return Variant(twin, twin_stat, quote(url, _SAFE), True, True)
        return Variant(full, found, quote(url, _SAFE), False, True)
    if path.endswith(".html" + TWIN_SUFFIX) and _is_file(
        files, path.removesuffix(TWIN_SUFFIX)
    ):
        page = url.removesuffix(TWIN_SUFFIX)
        return Variant(full, found, quote(page, _SAFE), True, False)
    return None


async def page_response(files: StaticFiles, path: str, scope: Scope) -> Response | None:
    """The page or twin at *path* with its llms.txt v2 headers, else None."""
    variant = await anyio.to_thread.run_sync(find_variant, files, path, scope)
    if variant is None:
        return None
    response = files.file_response(variant.path, variant.stat, scope)
    response.headers["Link"] = link_header(variant.page_url, twin=variant.negotiated)
    if variant.markdown:
        response.headers["Content-Type"] = f"{MARKDOWN_TYPE}; charset=utf-8"
        if variant.negotiated:
            response.headers["Content-Location"] = relative_links(variant.page_url)[0]
    if variant.negotiated:
        response.headers.add_vary_header("Accept")
    return response


def _canonical(scope: Scope, url: str) -> bool:
    """The request names the file by its own URL: not ``/index.html/``,
    ``//index.html`` or ``/a%2Fb.html``, which the static files also serve
    but against which a relative link resolves elsewhere."""
    path = str(scope["path"])
    root = str(scope.get("root_path", ""))
    if root and path.startswith(f"{root}/"):
        path = path[len(root) :]
    raw = bytes(scope.get("raw_path") or b"").lower()
    return path == f"/{url}" and b"%2f" not in raw


def _is_file(files: StaticFiles, path: str) -> bool:
    found = files.lookup_path(path)[1]
    return found is not None and stat.S_ISREG(found.st_mode)


def _header(scope: Scope, name: bytes) -> str | None:
    values = [v for k, v in scope.get("headers", ()) if k.lower() == name]
    return b", ".join(values).decode("latin-1") if values else None


def sites_llms_txt(specs: Sequence[tuple[str, Path]]) -> str | None:
    """With several sites, the server root's ``llms.txt``: a link to each
    site's own (which covers the pages under ``/NAME/``), or None if none has one."""
    lines = []
    for name, folder in specs:
        path = (folder / LLMS_TXT).resolve()
        if not path.is_relative_to(folder.resolve()):
            continue  # a symlink out of the site: not served, so not listed
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline(500).strip()
        except OSError:
            continue
        title = first[2:].strip() if first.startswith("# ") else ""
        note = f": {title}" if title else ""
        lines.append(f"- [{name}]({quote(name)}/{LLMS_TXT}){note}")
    if not lines:
        return None
    return "\n".join(
        [
            "# Sites",
            "",
            "> The sites this server serves. Each has its own llms.txt, which "
            "covers the pages under the site's folder.",
            "",
            "## Sites",
            "",
            *lines,
            "",
        ]
    )
