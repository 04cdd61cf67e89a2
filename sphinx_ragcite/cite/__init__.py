"""Answers and passages -> citations people paste and programs import.

Kept apart from ``answer/`` so that how a source reads (styles, quotes,
BibTeX/RIS/CSL-JSON) can change without touching how answers are grounded.
The names below are light to import: the CLI builds its options from them.
"""

from __future__ import annotations

from sphinx_ragcite.errors import RagciteError

#: ``ragcite ask --format``.
FORMATS = ("text", "quotes", "json", "markdown")
#: ``--style`` and ``ragcite_citation_style``.
STYLES = ("plain", "apa", "ieee", "acm", "chicago")
#: ``ragcite ask --export`` and ``ragcite cite --bibtex|--ris|--csl-json``.
EXPORTS = ("bibtex", "ris", "csl-json")


def missing_extra(what: str, error: ImportError) -> RagciteError:
    """The error to raise when a library of the ``cite`` extra is absent."""
    return RagciteError(
        f"{what} needs {error.name or 'a library'} from the 'cite' extra: "
        "pip install 'sphinx-ragcite[cite]' (plain sources and CSL-JSON work "
        "without it)"
    )
