"""Doctree -> passages: consecutive blocks of one section, up to a size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from docutils import nodes
from sphinx import addnodes

from sphinx_ragcite.extension.passages.chunks import Chunk, DocChunks, Section
from sphinx_ragcite.extension.passages.text import block_text, count_words, is_ignored

if TYPE_CHECKING:
    from collections.abc import Callable

#: Node attribute naming the passage a block starts: ``(docname, S, P)``.
#: It survives pickling, so the anchor can be added when the page is written.
MARK = "ragcite_passage"


@dataclass
class _Open:
    section: int
    first: nodes.Element
    texts: list[str] = field(default_factory=list)
    words: int = 0
    #: Holds only an API signature, which the next block joins whatever its size.
    sticky: bool = False
    last: nodes.Element | None = None


class _Chunker:
    def __init__(
        self,
        docname: str,
        max_words: int,
        ignore_classes: frozenset[str],
        keep_only: Callable[[str], bool],
    ) -> None:
        self.docname = docname
        self.max_words = max_words
        self.ignore = ignore_classes
        self.keep_only = keep_only
        self.title = ""
        self.sections: list[Section] = []
        self.chunks: list[Chunk] = []
        self.starts: list[nodes.Element] = []
        self.open: _Open | None = None
        self.counts: dict[int, int] = {}

    def run(self, doctree: nodes.document) -> DocChunks:
        self.walk(doctree, 0, ())
        self.flush()
        return DocChunks(self.title, tuple(self.sections), tuple(self.chunks))

    def walk(self, node: nodes.Element, section: int, path: tuple[str, ...]) -> None:
        for child in node.children:
            if not isinstance(child, nodes.Element) or is_ignored(child, self.ignore):
                continue
            if isinstance(child, nodes.section):
                self.enter_section(child, path)
            elif isinstance(child, nodes.title) and isinstance(node, nodes.section):
                continue
            elif isinstance(child, addnodes.only):
                if self.keeps(child):
                    self.walk(child, section, path)
            elif isinstance(child, addnodes.desc):
                self.add_description(child, section, path)
            elif _is_wrapper(child):
                self.walk(child, section, path)
            else:
                self.add_block(child, section)

    def keeps(self, node: addnodes.only) -> bool:
        """Like Sphinx: an expression it cannot evaluate keeps the content.

        (Sphinx warns about the expression itself.)
        """
        try:
            return bool(self.keep_only(str(node.get("expr", ""))))
        except Exception:
            return True

    def enter_section(self, node: nodes.section, path: tuple[str, ...]) -> None:
        title = node[0].astext().strip() if node.children else ""
        if not self.sections:
            # The first section is the document's title: its body is sec0.
            self.title = title
            self.sections.append(Section(0, title, "", (title,)))
            self.walk(node, 0, (title,))
            return
        index = len(self.sections)
        ids = node.get("ids")
        anchor = "#" + str(ids[0]) if ids else ""
        self.sections.append(Section(index, title, anchor, (*path, title)))
        self.walk(node, index, (*path, title))

    def add_description(
        self, node: addnodes.desc, section: int, path: tuple[str, ...]
    ) -> None:
        """An API object (autodoc, ``.. function::``) is a passage of its own.

        It starts at the object's ``<dl>`` with its signature, followed by its
        content's blocks; nested objects (a class's methods) start their own.
        """
        self.flush()
        signature = "\n".join(
            text
            for child in node.children
            if isinstance(child, addnodes.desc_signature)
            and not is_ignored(child, self.ignore)
            and (text := block_text(child, self.ignore, self.docname))
        )
        if signature:
            self.open = _Open(
                section, node, [signature], count_words(signature), sticky=True
            )
        for child in node.children:
            if isinstance(child, addnodes.desc_content) and not is_ignored(
                child, self.ignore
            ):
                self.walk(child, section, path)
        self.flush()

    def add_block(self, node: nodes.Element, section: int) -> None:
        text = block_text(node, self.ignore, self.docname)
        if not text:
            return
        words = count_words(text)
        current = self.open
        if (
            current is None
            or current.section != section
            or (
                current.words + words > self.max_words
                and not current.sticky
                and not _same_tab_set(current.last, node)
            )
        ):
            self.flush()
            current = self.open = _Open(section, node)
        current.texts.append(text)
        current.words += words
        current.sticky = False
        current.last = node

    def flush(self) -> None:
        current, self.open = self.open, None
        if current is None:
            return
        if not self.sections:
            # Text before any section (or a document without sections).
            self.sections.append(Section(0, "", "", ()))
        position = self.counts[current.section] = (
            self.counts.get(current.section, 0) + 1
        )
        text = "\n\n".join(current.texts)
        self.chunks.append(Chunk(current.section, position, text, current.words))
        current.first[MARK] = (self.docname, current.section, position)


def is_inline_tab(node: nodes.Node | None) -> bool:
    """A ``.. tab::`` of sphinx-inline-tabs (not imported: it is optional)."""
    return type(node).__name__ == "TabContainer" and isinstance(node, nodes.container)


def _same_tab_set(previous: nodes.Element | None, node: nodes.Element) -> bool:
    """*node* is a tab right after tab *previous*, in the same set.

    sphinx-inline-tabs replaces a set's tabs by one element after the anchors
    are placed: only the first tab's anchor can move to it, so a passage
    never starts at a later tab.
    """
    return (
        is_inline_tab(previous)
        and is_inline_tab(node)
        and not node.get("new_set")
        and node.parent is not None
        and previous is not None
        and previous.parent is node.parent
        and node.parent.index(node) == node.parent.index(previous) + 1
    )


def _is_wrapper(node: nodes.Element) -> bool:
    """Containers whose children are the blocks (MyST-NB code cells are not).

    A container of inline text only is a block itself: its children need not
    render an element of their own (sphinx-design's card titles do not).
    """
    if isinstance(node, (nodes.compound, addnodes.glossary)):
        # A glossary renders no element of its own: its <dl> carries the anchor.
        return True
    if type(node) is not nodes.container or node.get("nb_element") == "cell_code":
        return False
    children = [c for c in node.children if isinstance(c, nodes.Element)]
    return not children or any(
        isinstance(c, nodes.Body) or not isinstance(c, nodes.TextElement)
        for c in children
    )


def chunk_doctree(
    doctree: nodes.document,
    docname: str,
    *,
    max_words: int,
    ignore_classes: frozenset[str],
    keep_only: Callable[[str], bool] = lambda expr: True,
) -> DocChunks:
    """Split one document into passages and mark each passage's first block.

    The marks are node attributes only; the anchor IDs need the book-wide
    chapter number, which is known once every document has been read.
    """
    return _Chunker(docname, max_words, ignore_classes, keep_only).run(doctree)
