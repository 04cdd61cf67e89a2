"""Each page with a Markdown twin names it and the site's llms.txt in its head.

llms.txt v2: ``<link rel="alternate" type="text/markdown">`` to the page's
Markdown copy (written at the end of the build, extension/index.py) and
``<link rel="describedby">`` to the llms.txt at the site root, both relative
to the page (formats/llms_links.py). They go into the template's
``metatags``; a theme that drops those (the Pallets themes redefine them)
gets them inserted before ``</head>`` once the twins are written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from sphinx.builders.singlehtml import SingleFileHTMLBuilder

from sphinx_ragcite.extension.passages.collector import passages_of
from sphinx_ragcite.extension.passages.ids import toctree_docs
from sphinx_ragcite.extension.passages.records import page_url
from sphinx_ragcite.formats.files import atomic_write
from sphinx_ragcite.formats.llms_links import link_tags

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sphinx.application import Sphinx

_HEAD_END = re.compile(rb"</head\s*>", re.IGNORECASE)


def add_links(
    app: Sphinx,
    pagename: str,
    templatename: str,
    context: dict[str, Any],
    doctree: object,
) -> None:
    """``html-page-context``: the two tags, on the pages that get a twin (those
    with passages: not ``genindex``, ``search``, or a page with no text)."""
    env, builder = app.env, app.builder
    docs = passages_of(env).docs
    if isinstance(builder, SingleFileHTMLBuilder):
        root = env.config.root_doc
        shown = toctree_docs(root, env.toctree_includes, set(env.all_docs))
        if pagename != root or not any(docs[d].chunks for d in shown if d in docs):
            return
    else:
        doc = docs.get(pagename)
        if doc is None or not doc.chunks:
            return
    tags = link_tags(page_url(builder, pagename))
    context["metatags"] = context.get("metatags", "") + tags


def ensure_links(outdir: Path, page_urls: Iterable[str]) -> list[str]:
    """Insert the tags into each page at *page_urls* whose head lacks them.

    Returns the URLs of the pages changed. Idempotent: a page that has them
    (from ``metatags``, or an earlier build) is left as it is.
    """
    changed = []
    for url in page_urls:
        path = Path(outdir, unquote(url))
        if not url or url.endswith("/"):
            path = path / "index.html"
        try:
            data = path.read_bytes()
        except OSError:
            continue
        end = _HEAD_END.search(data)
        if end is None or b'rel="describedby"' in data[: end.start()]:
            continue
        tags = link_tags(url).encode()
        atomic_write(path, data[: end.start()] + tags + data[end.start() :])
        changed.append(url)
    return changed
