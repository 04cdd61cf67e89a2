"""References -> BibTeX, RIS or CSL-JSON for reference managers.

Written through ``bibtexparser`` and ``rispy`` rather than by string
formatting, so the files parse back with the same libraries (the tests check
that). A reader's selected text is not a bibliographic source: exports skip it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.cite import missing_extra

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sphinx_ragcite.cite.records import Name, Reference

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_LATEX = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIALS))


def export(references: Sequence[Reference], fmt: str) -> str:
    """*references* (book passages only) as a ``bibtex``/``ris``/``csl-json`` file."""
    books = [r for r in references if not r.is_selection]
    if fmt == "bibtex":
        return bibtex(books)
    if fmt == "ris":
        return ris(books)
    if fmt == "csl-json":
        return csl_json(books)
    raise ValueError(f"unknown export format {fmt!r}")


def csl_json(references: Sequence[Reference]) -> str:
    """A CSL-JSON array (Zotero, Pandoc ``--citeproc``, citeproc-js/-py)."""
    items = []
    for reference in references:
        item = reference.csl()
        item["section"] = reference.section
        item["note"] = f"Passage {reference.passage_id}"
        item["language"] = reference.book.language
        items.append(item)
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters; other Unicode stays (biber reads UTF-8)."""
    return _LATEX.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)


def _bibtex_name(name: Name) -> str:
    if name.literal:
        # Braces keep a group name whole: BibTeX would read "authors, The".
        return "{" + latex_escape(name.literal) + "}"
    return f"{latex_escape(name.family)}, {latex_escape(name.given)}"


def _bibtex_url(url: str) -> str:
    # Verbatim for biblatex/hyperref, but braces and backslashes would
    # unbalance the field: percent-encode the few characters that would.
    return url.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D")


def bibtex_fields(reference: Reference) -> dict[str, str]:
    """The fields of one ``@incollection`` entry, already escaped for LaTeX."""
    book = reference.book
    fields: dict[str, str] = {}
    if book.authors:
        fields["author"] = " and ".join(_bibtex_name(n) for n in book.authors)
    fields["title"] = latex_escape(reference.section_title)
    fields["booktitle"] = latex_escape(book.title)
    fields["chapter"] = latex_escape(reference.chapter)
    if book.version:
        fields["version"] = latex_escape(book.version)
    fields["publisher"] = latex_escape(book.publisher)
    if book.year is not None:
        fields["year"] = str(book.year)
    if reference.page is not None:
        fields["pages"] = str(reference.page)
    if reference.url:
        fields["url"] = _bibtex_url(reference.url)
    fields["urldate"] = reference.accessed.isoformat()
    fields["note"] = latex_escape(f"Passage {reference.passage_id}")
    return fields


def bibtex(references: Sequence[Reference]) -> str:
    """``@incollection`` entries keyed ``<project-slug>-<passage_id>``."""
    try:
        from bibtexparser.entrypoint import write_string
        from bibtexparser.library import Library
        from bibtexparser.model import Entry, Field
        from bibtexparser.writer import BibtexFormat
    except ImportError as error:
        raise missing_extra("BibTeX export", error) from None

    library = Library()
    for reference in references:
        fields = [Field(k, v) for k, v in bibtex_fields(reference).items()]
        library.add(Entry("incollection", reference.key, fields))
    layout = BibtexFormat()  # type: ignore[no-untyped-call]
    layout.indent = "  "
    layout.block_separator = "\n"
    text: str = write_string(library, bibtex_format=layout)
    return text.strip() + "\n" if text.strip() else ""


def ris_entry(reference: Reference) -> dict[str, Any]:
    """One RIS record (``CHAP``: a section of a book) in rispy's field names."""
    book = reference.book
    entry: dict[str, Any] = {
        "type_of_reference": "CHAP",
        "id": reference.key,
        "title": reference.title,
        "secondary_title": book.title,
    }
    if book.authors:
        entry["authors"] = [n.literal or f"{n.family}, {n.given}" for n in book.authors]
    if book.year is not None:
        entry["year"] = str(book.year)
    if book.version:
        entry["edition"] = book.version
    entry["publisher"] = book.publisher
    entry["section"] = reference.section
    if reference.page is not None:
        entry["start_page"] = str(reference.page)
    if reference.url:
        entry["urls"] = [reference.url]
    entry["access_date"] = reference.accessed.strftime("%Y/%m/%d")
    entry["language"] = book.language
    entry["notes"] = [f"Passage {reference.passage_id}"]
    return entry


def ris(references: Sequence[Reference]) -> str:
    try:
        import rispy
    except ImportError as error:
        raise missing_extra("RIS export", error) from None

    class Writer(rispy.RisWriter):  # type: ignore[misc]
        """rispy numbers records ("1."); reference managers expect none."""

        def set_header(self, count: int) -> str:
            return ""

    if not references:
        return ""
    text: str = rispy.dumps([ris_entry(r) for r in references], implementation=Writer)
    return text
