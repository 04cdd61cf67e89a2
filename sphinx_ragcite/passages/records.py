"""Collected chunks -> the book's passage records, in reading order."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from sphinx.builders.singlehtml import SingleFileHTMLBuilder

from sphinx_ragcite.passages.collector import passages_of
from sphinx_ragcite.passages.ids import passage_id, toctree_docs
from sphinx_ragcite.passages.text import make_snippet, resolve_xrefs

if TYPE_CHECKING:
    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment

Record = dict[str, Any]


def content_hash(text: str) -> str:
    """Short, stable fingerprint that lets moved text be recognised."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def page_url(builder: Builder, docname: str) -> str:
    """URL of the page that shows *docname*, relative to the site root."""
    if isinstance(builder, SingleFileHTMLBuilder):
        return f"{builder.config.root_doc}{builder.out_suffix}"
    return str(builder.get_target_uri(docname))


def _numbered(title: str, numbers: tuple[int, ...] | None, suffix: str) -> str:
    if not numbers:
        return title
    return ".".join(map(str, numbers)) + suffix + title


def build_records(env: BuildEnvironment, builder: Builder) -> list[Record]:
    """One record per passage of every current document, in reading order."""
    domain = passages_of(env)
    labels = env.get_domain("std").labels  # type: ignore[attr-defined]
    suffix = getattr(env.config, "html_secnumber_suffix", ". ")

    def title_of(docname: str) -> str | None:
        title = env.titles.get(docname)
        text = title.astext() if title is not None else ""
        return text if text and text != "<no title>" else None

    chapters = domain.chapters
    docnames = sorted(env.all_docs, key=lambda d: (chapters.get(d, 1 << 30), d))
    if isinstance(builder, SingleFileHTMLBuilder):
        # The single page holds only what the root's toctrees reach.
        docnames = toctree_docs(
            env.config.root_doc, env.toctree_includes, set(env.all_docs)
        )
    records: list[Record] = []
    for docname in docnames:
        doc = domain.docs.get(docname)
        if doc is None or not doc.chunks:
            continue
        numbers = env.toc_secnumbers.get(docname, {})
        doc_title = doc.title or title_of(docname) or docname
        chapter = _numbered(doc_title, numbers.get(""), suffix)
        url = page_url(builder, docname)
        offset = 0
        for chunk in doc.chunks:
            section = doc.sections[chunk.section]
            text = resolve_xrefs(chunk.text, labels, title_of)
            pid = passage_id(chapters[docname], chunk.section, chunk.position)
            records.append(
                {
                    "passage_id": pid,
                    "docname": docname,
                    "url": f"{url}#{pid}",
                    "chapter": chapter,
                    "section": _numbered(
                        section.title or doc_title, numbers.get(section.anchor), suffix
                    ),
                    "heading_path": list(section.path) or [doc_title],
                    "text": text,
                    "snippet": make_snippet(text),
                    "char_start": offset,
                    "char_end": offset + len(text),
                    "content_hash": content_hash(text),
                }
            )
            offset += len(text) + 2  # passages of a document are joined by "\n\n"
    return records
