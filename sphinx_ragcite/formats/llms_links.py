"""llms.txt v2 link relations: a page -> its Markdown twin and the site's llms.txt.

The llms.txt proposal's v2 (August 2026, llmstxt.org/changes.md) lets a page
name its Markdown version with ``rel="alternate" type="text/markdown"`` and
the llms.txt that covers it with ``rel="describedby"``, as HTML ``<link>``
elements or an HTTP ``Link:`` header; a llms.txt covers the pages under its
path. The build writes the tags (extension/llms_links.py), ``ragcite serve``
the headers (server/pages.py). Both use the relative URLs made here, so the
links hold under any prefix the site is served at (``--site NAME``, a proxy's
path, a GitHub Pages project site) and with ``dirhtml``.

Page URLs are from the site root and percent-encoded once, as the passage
records have them (``guide/uni%20page.html``, ``guide/`` for ``dirhtml``).
"""

from __future__ import annotations

import posixpath
from html import escape

#: The index at the site root; it covers every page of the site.
LLMS_TXT = "llms.txt"
MARKDOWN_TYPE = "text/markdown"
#: What a Markdown twin's name adds to its page's file name.
TWIN_SUFFIX = ".md"


def twin_url(page_url: str) -> str:
    """The Markdown twin of a page (llmstxt.org): its URL with ``.md`` appended,
    ``index.html.md`` for a folder (``dirhtml``'s ``guide/``, the root ``""``)."""
    if not page_url or page_url.endswith("/"):
        return f"{page_url}index.html{TWIN_SUFFIX}"
    return page_url + TWIN_SUFFIX


def relative_links(page_url: str) -> tuple[str, str]:
    """(twin, llms.txt) as URLs relative to the page at *page_url*."""
    folder = page_url if page_url.endswith("/") else posixpath.dirname(page_url)
    folder = folder.rstrip("/") or "."
    return (
        posixpath.relpath(twin_url(page_url), folder),
        posixpath.relpath(LLMS_TXT, folder),
    )


def link_tags(page_url: str) -> str:
    """The two ``<link>`` elements for the page's ``<head>``."""
    twin, llms = (escape(u, quote=True) for u in relative_links(page_url))
    return (
        f'<link rel="alternate" type="{MARKDOWN_TYPE}" href="{twin}">\n'
        f'<link rel="describedby" href="{llms}">\n'
    )


def link_header(page_url: str, *, twin: bool = True) -> str:
    """The ``Link:`` header value of the page (RFC 8288); without *twin*, only
    ``describedby`` (for the twin itself)."""
    alternate, llms = relative_links(page_url)
    links = [f'<{alternate}>; rel="alternate"; type="{MARKDOWN_TYPE}"'] if twin else []
    return ", ".join([*links, f'<{llms}>; rel="describedby"'])
