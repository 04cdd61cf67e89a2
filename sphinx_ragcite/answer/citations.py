"""Citation markers a generator wrote -> the evidence they name.

Understands ``[2]``, ``[1, 3]``, ``[ch3-sec2-p4]``, ``[Source: water.html]`` and
``Chapter 3, Section 3.2``; anything else in brackets is an unknown marker.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from sphinx_ragcite.answer.spec import (
    BRACKET,
    CHAPTER,
    PASSAGE_ID,
    REFERENCE_SEPARATOR,
    SOURCE,
    USER_SELECTION,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.answer.evidence import Evidence


def parse_markers(
    text: str, evidence: Sequence[Evidence]
) -> tuple[list[int], list[str]]:
    """Indices of the evidence *text* cites (in order, no repeats) and unknowns."""
    claimed: list[int] = []
    unknown: list[str] = []

    def add(index: int | None, marker: str) -> None:
        if index is None:
            unknown.append(marker)
        elif index not in claimed:
            claimed.append(index)

    for match in BRACKET.finditer(text):
        inner = match.group(1).strip()
        source = SOURCE.match(inner)
        if source:
            add(_by_source(source.group(1).strip(), evidence), match.group(0))
            continue
        for ref in REFERENCE_SEPARATOR.split(inner):
            add(_by_reference(ref, evidence), f"[{ref}]")
    for match in CHAPTER.finditer(text):
        add(_by_chapter(match.group(1), match.group(2), evidence), match.group(0))
    return claimed, unknown


def _by_reference(ref: str, evidence: Sequence[Evidence]) -> int | None:
    if ref.isdigit():
        n = int(ref)
        return n - 1 if 1 <= n <= len(evidence) else None
    if PASSAGE_ID.match(ref) or ref.lower() in (USER_SELECTION, "user selection"):
        key = USER_SELECTION if ref.lower().startswith("user") else ref
        return next((i for i, e in enumerate(evidence) if e.key == key), None)
    return None


def _by_source(name: str, evidence: Sequence[Evidence]) -> int | None:
    wanted = PurePosixPath(name.split("#")[0]).stem.lower()
    for i, item in enumerate(evidence):
        if item.record and PurePosixPath(item.record["docname"]).stem.lower() == wanted:
            return i
    return None


def _by_chapter(
    chapter: str, section: str | None, evidence: Sequence[Evidence]
) -> int | None:
    for i, item in enumerate(evidence):
        if item.record is None:
            continue
        if not item.record["chapter"].startswith(f"{chapter}."):
            continue
        if section is None or item.record["section"].startswith(f"{section}"):
            return i
    return None
