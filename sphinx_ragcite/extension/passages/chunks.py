"""Frozen records of the data contracts; plain values so they pickle and merge."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """A section of one document, numbered as in ``sec{S}``."""

    index: int
    title: str
    #: key into ``env.toc_secnumbers[docname]``: '' for the title, else '#id'
    anchor: str
    path: tuple[str, ...]


@dataclass(frozen=True)
class Chunk:
    """A passage as read from the doctree, before the book-wide numbering.

    ``text`` may hold cross-reference placeholders that are resolved only once
    every document is read (see :mod:`sphinx_ragcite.extension.passages.text`).
    """

    section: int
    position: int
    text: str
    words: int


@dataclass(frozen=True)
class DocChunks:
    """Everything the chunker learned about one document."""

    title: str
    sections: tuple[Section, ...]
    chunks: tuple[Chunk, ...]
