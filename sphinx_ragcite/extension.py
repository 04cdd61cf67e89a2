"""Wires the pipeline into Sphinx: config, collector, anchors, index files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from docutils import nodes
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.util import logging

from sphinx_ragcite import __version__, assets, config
from sphinx_ragcite.passages.chunker import MARK
from sphinx_ragcite.passages.collector import (
    PassageCollector,
    RagciteDomain,
    passages_of,
)
from sphinx_ragcite.passages.ids import passage_id

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.builders import Builder
    from sphinx.util.typing import ExtensionMetadata

logger = logging.getLogger(__name__)

#: Bump when the pickled passage data changes shape.
ENV_VERSION = 1


def is_site_builder(builder: Builder) -> bool:
    """HTML pages a reader browses (``html``, ``dirhtml``, ``singlehtml``...)."""
    return isinstance(builder, StandaloneHTMLBuilder) and not builder.name.startswith(
        "epub"
    )


def add_anchors(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Give each passage's first block its ``chC-secS-pP`` id."""
    if not is_site_builder(app.builder):
        return
    chapters = passages_of(app.env).chapters
    for node in doctree.findall(nodes.Element):
        mark = node.get(MARK)
        if mark is None:
            continue
        owner, section, position = mark
        if owner not in chapters:
            continue
        pid = passage_id(chapters[owner], section, position)
        if pid not in node["ids"]:
            node["ids"].insert(0, pid)


def add_widget(app: Sphinx) -> None:
    """The reader widget on HTML pages only (``ragcite_widget = False``: none)."""
    if app.config.ragcite_widget and is_site_builder(app.builder):
        assets.add_widget(app)


def write_index(app: Sphinx, exception: BaseException | None) -> None:
    if exception is None and is_site_builder(app.builder):
        # Imported here: numpy, bm25s and onnxruntime are for HTML builds only.
        from sphinx_ragcite.index.build import write_site_index

        write_site_index(app)


def setup(app: Sphinx) -> ExtensionMetadata:
    config.register(app)
    app.add_domain(RagciteDomain)
    app.add_env_collector(PassageCollector)
    app.connect("builder-inited", add_widget)
    app.connect("doctree-resolved", add_anchors)
    app.connect("build-finished", write_index)
    return {
        "version": __version__,
        "env_version": ENV_VERSION,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
