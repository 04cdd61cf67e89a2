"""Each page with a Markdown twin names it and the site's llms.txt in its head.

llms.txt v2: ``<link rel="alternate" type="text/markdown">`` to the page's
Markdown copy (written at the end of the build, extension/index.py) and
``<link rel="describedby">`` to the llms.txt at the site root, both relative
to the page (formats/llms_links.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sphinx.builders.singlehtml import SingleFileHTMLBuilder

from sphinx_ragcite.extension.passages.collector import passages_of
from sphinx_ragcite.extension.passages.ids import toctree_docs
from sphinx_ragcite.extension.passages.records import page_url
from sphinx_ragcite.formats.llms_links import link_tags

if TYPE_CHECKING:
    from sphinx.application import Sphinx


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
