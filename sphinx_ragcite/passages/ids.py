"""Book-wide passage IDs: ``ch{C}-sec{S}-p{P}`` in the book's reading order."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence, Set

PASSAGE_ID = re.compile(r"^ch(?P<c>[0-9]+)-sec(?P<s>[0-9]+)-p(?P<p>[0-9]+)$")


def passage_id(chapter: int, section: int, position: int) -> str:
    return f"ch{chapter}-sec{section}-p{position}"


def parse_passage_id(value: str) -> tuple[int, int, int] | None:
    match = PASSAGE_ID.match(value)
    if match is None:
        return None
    return int(match["c"]), int(match["s"]), int(match["p"])


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
