"""Wires the pipeline into Sphinx: config, collector, anchors, index files."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

from docutils import nodes
from sphinx.builders.html import StandaloneHTMLBuilder
from sphinx.errors import ExtensionError
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from sphinx_ragcite import __version__
from sphinx_ragcite.extension import assets, config, llms_links, stages
from sphinx_ragcite.extension.passages.chunker import MARK, is_inline_tab
from sphinx_ragcite.extension.passages.collector import (
    PassageCollector,
    RagciteDomain,
    document_failed,
    passages_of,
)
from sphinx_ragcite.extension.passages.ids import PASSAGE_ID, passage_id
from sphinx_ragcite.text import language_code, quiet_jieba

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment
    from sphinx.util.typing import ExtensionMetadata

logger = logging.getLogger(__name__)

#: Bump when the pickled passage data changes shape, or its text changes (an
#: environment of an older release would keep the old text of unchanged pages).
ENV_VERSION = 3


def is_site_builder(builder: Builder) -> bool:
    """HTML pages a reader browses (``html``, ``dirhtml``, ``singlehtml``...)."""
    return isinstance(builder, StandaloneHTMLBuilder) and not builder.name.startswith(
        "epub"
    )


def add_anchors(
    env: BuildEnvironment, doctree: nodes.document
) -> dict[str, nodes.Element]:
    """Give each passage's first block its ``chC-secS-pP`` id; ID -> that block."""
    chapters = passages_of(env).chapters
    anchored: dict[str, nodes.Element] = {}
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
        anchored[pid] = node
    return anchored


#: Nodes whose HTML has no ``id`` (sphinx-toolbox's ``<details>``): an anchor
#: on one moves to a ``<div>`` around it.
_RENDERS_NO_ID = frozenset({"CollapseNode"})


def _attached(node: nodes.Node, document: nodes.document) -> bool:
    while node.parent is not None:
        node = node.parent
    return node is document


def repair_anchors(
    document: nodes.document, anchored: dict[str, nodes.Element]
) -> None:
    """Keep each anchor once, on an element that shows it, after other transforms.

    furo wraps every table and math block in a ``<div>`` with the same ids (the
    first, outer one keeps the anchor); sphinx-inline-tabs replaces a set of
    tabs by one element (the set gets its first tab's anchor).
    """
    holders: dict[str, list[nodes.Element]] = {}
    for node in document.findall(nodes.Element):
        for value in node.get("ids", ()):
            if value in anchored:
                holders.setdefault(value, []).append(node)
    for pid, original in anchored.items():
        found = holders.get(pid, [])
        for copy in found[1:]:
            copy["ids"].remove(pid)
        if found and type(found[0]).__name__ in _RENDERS_NO_ID:
            target = found[0]
            target["ids"].remove(pid)
            wrapper = nodes.container(ids=[pid])
            target.replace_self(wrapper)
            wrapper.append(target)
        elif not found and is_inline_tab(original) and len(original.children) == 2:
            tab_set = original.children[1].parent
            if (
                tab_set is not None
                and tab_set is not original
                and _attached(tab_set, document)
                and not any(PASSAGE_ID.match(i) for i in tab_set["ids"])
            ):
                tab_set["ids"].insert(0, pid)


class AnchorPassages(SphinxPostTransform):
    """Adds the anchors before any other post-transform runs.

    Extensions that rebuild nodes for HTML (sphinx-design's tabs and
    dropdowns) carry ``ids`` over to the new nodes, but not other attributes:
    by ``doctree-resolved`` the passage mark would be gone with the old node.
    """

    default_priority = 1

    def run(self, **kwargs: object) -> None:
        try:
            anchored = add_anchors(self.env, self.document)
        except Exception as error:
            document_failed(self.env.docname, "anchoring", error)
            anchored = None
        self.document.ragcite_anchored = anchored or {}  # type: ignore[attr-defined]


class RepairAnchors(SphinxPostTransform):
    """Runs after the other post-transforms (themes', extensions')."""

    default_priority = 990

    def run(self, **kwargs: object) -> None:
        anchored = getattr(self.document, "ragcite_anchored", None)
        if not anchored:
            return
        try:
            repair_anchors(self.document, anchored)
        except Exception as error:
            document_failed(self.env.docname, "anchoring", error)


def register_anchors(app: Sphinx) -> None:
    """Anchors on site builds only: LaTeX, text or EPUB output keeps its ids."""
    if is_site_builder(app.builder):
        app.add_post_transform(AnchorPassages)
        app.add_post_transform(RepairAnchors)


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


def add_llms_links(app: Sphinx) -> None:
    """llms.txt v2 ``<link>`` tags on HTML pages, when llms.txt is written."""
    if app.config.ragcite_llms_txt and is_site_builder(app.builder):
        app.connect("html-page-context", llms_links.add_links)


def start_encoder(app: Sphinx, builder: object) -> None:
    """Pages about to be written: embed the passages meanwhile (the chapters
    are numbered by now, at ``env-get-updated``, so the passages are final)."""
    if not is_site_builder(app.builder):
        return
    from sphinx_ragcite.extension.index import start_encoder

    start_encoder(app)


def write_index(app: Sphinx, exception: BaseException | None) -> None:
    """The site's pages are written: now ``_ragcite/``, or one warning.

    A failure here never fails the author's build; the previous index, if
    any, stays as it was (see :class:`~sphinx_ragcite.extension.writer.IndexWriter`).
    """
    if exception is not None or not is_site_builder(app.builder):
        return
    stages.of(app).mark("finished")
    try:
        # Imported here: numpy, bm25s and onnxruntime are for HTML builds only.
        from sphinx_ragcite.extension.index import write_site_index

        write_site_index(app)
        stages.save(app)
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


def _quiet_segmenter(app: Sphinx) -> None:
    if language_code(str(app.config.language or "")) == "zh":
        quiet_jieba()


def setup(app: Sphinx) -> ExtensionMetadata:
    config.register(app)
    app.add_config_value(assets.DIGEST_CONFIG, "", "html", types=frozenset({str}))
    app.connect("config-inited", assets.stamp_digest)
    app.add_domain(RagciteDomain)
    app.add_env_collector(PassageCollector)
    app.connect("builder-inited", stages.mark("inited"))
    app.connect("env-updated", stages.mark("read"))
    app.connect("write-started", start_encoder, priority=900)
    app.connect("builder-inited", register_anchors)
    app.connect("builder-inited", add_widget)
    app.connect("builder-inited", add_llms_links)
    app.connect("builder-inited", _quiet_segmenter)
    app.connect("build-finished", write_index)
    return {
        "version": __version__,
        "env_version": ENV_VERSION,
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
