"""Collected chunks -> the book's passage records, in reading order."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING
from urllib.parse import quote

from sphinx.builders.dirhtml import DirectoryHTMLBuilder
from sphinx.builders.singlehtml import SingleFileHTMLBuilder

from sphinx_ragcite.contracts import PassageRecord, make_snippet
from sphinx_ragcite.extension.passages.collector import document_failed, passages_of
from sphinx_ragcite.extension.passages.ids import passage_id, toctree_docs
from sphinx_ragcite.extension.passages.text import resolve_xrefs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from sphinx.builders import Builder
    from sphinx.environment import BuildEnvironment

    from sphinx_ragcite.extension.passages.chunks import DocChunks

Record = PassageRecord


def content_hash(text: str) -> str:
    """Short, stable fingerprint that lets moved text be recognised."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def page_url(builder: Builder, docname: str) -> str:
    """URL of the page that shows *docname*, relative to the site root.

    Percent-encoded exactly once, as the ``html`` builder's own links are
    (``uni%20page.html`` for the file ``uni page.html``); ``dirhtml`` and the
    single page name theirs unencoded, so they are quoted here. ASCII names of
    letters, digits and ``/_.-~`` are the same either way.
    """
    if isinstance(builder, SingleFileHTMLBuilder):
        return quote(builder.config.root_doc) + builder.out_suffix
    if isinstance(builder, DirectoryHTMLBuilder):
        return quote(builder.get_target_uri(docname))
    return str(builder.get_target_uri(docname))


def _numbered(title: str, numbers: tuple[int, ...] | None, suffix: str) -> str:
    if not numbers:
        return title
    return ".".join(map(str, numbers)) + suffix + title


def doc_records(
    doc: DocChunks,
    docname: str,
    *,
    chapter_number: int,
    url: str,
    numbers: Mapping[str, tuple[int, ...]],
    suffix: str,
    labels: Mapping[str, tuple[str, str, str]],
    titles: Callable[[str], str | None],
) -> list[Record]:
    """The records of one document: a pure function of what the build knows."""
    title = titles(docname)
    doc_title = doc.title or (str(title).strip() if title is not None else "")
    doc_title = doc_title or docname
    chapter = _numbered(doc_title, numbers.get(""), suffix)
    records: list[Record] = []
    offset = 0
    for chunk in doc.chunks:
        section = doc.sections[chunk.section]
        text = resolve_xrefs(chunk.text, labels, titles)
        pid = passage_id(chapter_number, chunk.section, chunk.position)
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


def build_records(
    env: BuildEnvironment,
    builder: Builder,
    *,
    on_error: Callable[[str, str, BaseException], None] | None = document_failed,
) -> list[Record]:
    """One record per passage of every current document, in reading order.

    A document whose records cannot be made is left out with one
    ``ragcite.document`` warning (*on_error*; None: silently, for a second
    caller); the others keep their IDs.
    """
    domain = passages_of(env)
    labels = env.get_domain("std").labels  # type: ignore[attr-defined]
    suffix = str(getattr(env.config, "html_secnumber_suffix", ". "))

    def title_of(docname: str) -> str | None:
        title = env.titles.get(docname)
        text = str(title.astext()) if title is not None else ""
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
        try:
            records.extend(
                doc_records(
                    doc,
                    docname,
                    chapter_number=chapters[docname],
                    url=page_url(builder, docname),
                    numbers=env.toc_secnumbers.get(docname, {}),
                    suffix=suffix,
                    labels=labels,
                    titles=title_of,
                )
            )
        except Exception as error:
            if on_error is not None:
                on_error(docname, "indexing", error)
    return records
