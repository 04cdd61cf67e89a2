"""Book-wide passage IDs: ``ch{C}-sec{S}-p{P}`` in the book's reading order."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

PASSAGE_ID = re.compile(r"^ch(?P<c>[0-9]+)-sec(?P<s>[0-9]+)-p(?P<p>[0-9]+)$")


def passage_id(chapter: int, section: int, position: int) -> str:
    return f"ch{chapter}-sec{section}-p{position}"


def parse_passage_id(value: str) -> tuple[int, int, int] | None:
    match = PASSAGE_ID.match(value)
    if match is None:
        return None
    return int(match["c"]), int(match["s"]), int(match["p"])


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
    order: dict[str, int] = {}
    stack = [root] if root in known else []
    while stack:
        docname = stack.pop()
        if docname in order:
            continue
        order[docname] = len(order)
        children = [d for d in toctree_includes.get(docname, ()) if d in known]
        stack.extend(reversed(children))
    for docname in sorted(known - order.keys()):
        order[docname] = len(order)
    return order
