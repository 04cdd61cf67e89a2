"""Book-wide passage IDs: ``ch{C}-sec{S}-p{P}`` in the book's reading order."""

from __future__ import annotations

from typing import TYPE_CHECKING

# The ID grammar is a contract both sides read; numbering is the build's.
from sphinx_ragcite.contracts import PASSAGE_ID, parse_passage_id, passage_id

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence, Set

__all__ = [
    "PASSAGE_ID",
    "parse_passage_id",
    "passage_id",
    "reading_order",
    "toctree_docs",
]


def toctree_docs(
    root: str, toctree_includes: Mapping[str, Sequence[str]], known: Set[str]
) -> list[str]:
    """Documents reachable from *root*, depth first in toctree order."""
    seen: dict[str, None] = {}
    stack = [root] if root in known else []
    while stack:
        docname = stack.pop()
        if docname in seen:
            continue
        seen[docname] = None
        children = [d for d in toctree_includes.get(docname, ()) if d in known]
        stack.extend(reversed(children))
    return list(seen)


def reading_order(
    root: str,
    toctree_includes: Mapping[str, Sequence[str]],
    all_docs: Iterable[str],
) -> dict[str, int]:
    """Chapter number of every document.

    The root is ``ch0``; documents reached from its toctree follow depth first
    in toctree order; documents in no toctree come last, sorted by docname.
    """
    known = set(all_docs)
    reached = toctree_docs(root, toctree_includes, known)
    orphans = sorted(known.difference(reached))
    return {docname: n for n, docname in enumerate(reached + orphans)}
