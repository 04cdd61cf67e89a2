"""Per-document passage state in the build environment, parallel-safe."""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any, ClassVar

from docutils import nodes
from sphinx.domains import Domain
from sphinx.environment.collectors import EnvironmentCollector
from sphinx.util import logging
from sphinx.util.matching import Matcher

from sphinx_ragcite.extension import stages
from sphinx_ragcite.extension.config import RagciteConfig
from sphinx_ragcite.extension.passages.chunker import MARK, chunk_doctree
from sphinx_ragcite.extension.passages.ids import reading_order

if TYPE_CHECKING:
    from collections.abc import Set

    from sphinx.addnodes import pending_xref
    from sphinx.application import Sphinx
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment

    from sphinx_ragcite.extension.passages.chunks import DocChunks

logger = logging.getLogger(__name__)


def document_failed(docname: str, step: str, error: BaseException) -> None:
    """One filterable warning: the document gets no passages, the build goes on.

    The traceback is shown with ``-vv`` (Sphinx's debug level).
    """
    logger.warning(
        "ragcite: %s this document failed (%s: %s); it gets no passages, the "
        "other documents keep their IDs.",
        step,
        type(error).__name__,
        error,
        location=docname,
        type="ragcite",
        subtype="document",
    )
    logger.debug("ragcite: %s %s\n%s", step, docname, traceback.format_exc())


class RagciteDomain(Domain):
    """Storage for the collector: domain data is pickled with the environment.

    ``docs`` maps docname -> :class:`DocChunks`; ``chapters`` maps docname ->
    chapter number as of the last build.
    """

    name = "ragcite"
    label = "sphinx-ragcite"
    data_version = 1
    initial_data: ClassVar[dict[str, Any]] = {"docs": {}, "chapters": {}}

    @property
    def docs(self) -> dict[str, DocChunks]:
        return self.data["docs"]  # type: ignore[no-any-return]

    @property
    def chapters(self) -> dict[str, int]:
        return self.data["chapters"]  # type: ignore[no-any-return]

    def merge_domaindata(self, docnames: Set[str], otherdata: dict[str, Any]) -> None:
        """Nothing to do: :class:`PassageCollector` merges this data."""

    # The domain only stores data: it has no roles, directives or objects, so
    # it resolves no reference. Saying so keeps resolvers that ask every
    # domain (MyST's ``[text](#target)``, the ``any`` role) from warning.

    def resolve_xref(
        self,
        env: BuildEnvironment,
        fromdocname: str,
        builder: Builder,
        typ: str,
        target: str,
        node: pending_xref,
        contnode: nodes.Element,
    ) -> nodes.reference | None:
        return None

    def resolve_any_xref(
        self,
        env: BuildEnvironment,
        fromdocname: str,
        builder: Builder,
        target: str,
        node: pending_xref,
        contnode: nodes.Element,
    ) -> list[tuple[str, nodes.reference]]:
        return []


def passages_of(env: BuildEnvironment) -> RagciteDomain:
    return env.get_domain("ragcite")  # type: ignore[return-value]


class PassageCollector(EnvironmentCollector):
    """Chunks each document as it is read; only changed documents are re-read."""

    def clear_doc(self, app: Sphinx, env: BuildEnvironment, docname: str) -> None:
        passages_of(env).docs.pop(docname, None)

    def merge_other(
        self,
        app: Sphinx,
        env: BuildEnvironment,
        docnames: Set[str],
        other: BuildEnvironment,
    ) -> None:
        # A worker's environment comes back pickled, without live domains.
        mine, theirs = passages_of(env).docs, other.domaindata["ragcite"]["docs"]
        for docname in docnames:
            if docname in theirs:
                mine[docname] = theirs[docname]

    def process_doc(self, app: Sphinx, doctree: nodes.document) -> None:
        env = app.env
        config = RagciteConfig.from_sphinx(app.config)
        docname = env.docname
        if config.exclude and Matcher(config.exclude)(docname):
            return
        tags = app.builder.tags
        try:
            with stages.of(app).timed("chunk"):
                doc = chunk_doctree(
                    doctree,
                    docname,
                    max_words=config.passage_words,
                    ignore_classes=frozenset(config.ignore_classes),
                    keep_only=tags.eval_condition,
                )
        except Exception as error:
            # Like an excluded document: no passages, no anchors, same number.
            for node in doctree.findall(nodes.Element):
                node.attributes.pop(MARK, None)
            document_failed(docname, "reading", error)
            return
        passages_of(env).docs[docname] = doc

    def get_updated_docs(self, app: Sphinx, env: BuildEnvironment) -> list[str]:
        """Number the chapters; pages whose number changed need new anchors."""
        domain = passages_of(env)
        order = reading_order(app.config.root_doc, env.toctree_includes, env.all_docs)
        changed = sorted(
            docname
            for docname, chapter in order.items()
            if domain.chapters.get(docname, chapter) != chapter
        )
        domain.data["chapters"] = order
        return changed
