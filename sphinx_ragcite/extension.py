"""Wires the pipeline into Sphinx: config, collector, anchors, index files."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from docutils import nodes
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from sphinx_ragcite import __version__, assets, config
from sphinx_ragcite.passages.chunker import MARK
from sphinx_ragcite.passages.collector import (
    PassageCollector,
    RagciteDomain,
    document_failed,
    passages_of,
)
from sphinx_ragcite.passages.ids import passage_id

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment
    from sphinx.util.typing import ExtensionMetadata

logger = logging.getLogger(__name__)

#: Bump when the pickled passage data changes shape.
ENV_VERSION = 1


def is_site_builder(builder: Builder) -> bool:
    """HTML pages a reader browses (``html``, ``dirhtml``, ``singlehtml``...)."""
    return isinstance(builder, StandaloneHTMLBuilder) and not builder.name.startswith(
        "epub"
    )


def add_anchors(env: BuildEnvironment, doctree: nodes.document) -> None:
    """Give each passage's first block its ``chC-secS-pP`` id."""
    chapters = passages_of(env).chapters
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


class AnchorPassages(SphinxPostTransform):
    """Adds the anchors before any other post-transform runs.

    Extensions that rebuild nodes for HTML (sphinx-design's tabs and
    dropdowns) carry ``ids`` over to the new nodes, but not other attributes:
    by ``doctree-resolved`` the passage mark would be gone with the old node.
    """

    default_priority = 1

    def run(self, **kwargs: object) -> None:
        try:
            add_anchors(self.env, self.document)
        except Exception as error:
            document_failed(self.env.docname, "anchoring", error)


def register_anchors(app: Sphinx) -> None:
    """Anchors on site builds only: LaTeX, text or EPUB output keeps its ids."""
    if is_site_builder(app.builder):
        app.add_post_transform(AnchorPassages)


def add_widget(app: Sphinx) -> None:
    """The reader widget on HTML pages only (``ragcite_widget = False``: none)."""
    if app.config.ragcite_widget and is_site_builder(app.builder):
        try:
            assets.add_widget(app)
        except (ExtensionError, OSError) as error:
            logger.warning(
                "ragcite: the reader widget is left out: %s",
                error,
                type="ragcite",
                subtype="widget",
            )


def write_index(app: Sphinx, exception: BaseException | None) -> None:
    """The site's pages are written: now ``_ragcite/``, or one warning.

    A failure here never fails the author's build; the previous index, if
    any, stays as it was (see :class:`~sphinx_ragcite.index.writer.IndexWriter`).
    """
    if exception is not None or not is_site_builder(app.builder):
        return
    try:
        # Imported here: numpy, bm25s and onnxruntime are for HTML builds only.
        from sphinx_ragcite.index.build import write_site_index

        write_site_index(app)
    except Exception as error:
        logger.warning(
            "ragcite: the passage index could not be written (%s: %s); "
            "%s/_ragcite/ is left as it was.",
            type(error).__name__,
            error,
            app.builder.outdir,
            type="ragcite",
            subtype="index",
        )
        logger.debug("ragcite: writing the index\n%s", traceback.format_exc())


def setup(app: Sphinx) -> ExtensionMetadata:
    config.register(app)
    app.add_domain(RagciteDomain)
    app.add_env_collector(PassageCollector)
    app.connect("builder-inited", register_anchors)
    app.connect("builder-inited", add_widget)
    app.connect("build-finished", write_index)
    return {
        "version": __version__,
        "env_version": ENV_VERSION,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
