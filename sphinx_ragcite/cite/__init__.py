"""Answers and passages -> citations people paste and programs import.

Kept apart from ``answer/`` so that how a source reads (CSL styles,
BibTeX/RIS/CSL-JSON files) can change without touching how answers are
grounded; how the CLI prints an answer lives in :mod:`sphinx_ragcite.cli`.
"""

from __future__ import annotations

from sphinx_ragcite.errors import RagciteError


def missing_extra(what: str, error: ImportError) -> RagciteError:
    """The error to raise when a library of the ``cite`` extra is absent."""
    return RagciteError(
        f"{what} needs {error.name or 'a library'} from the 'cite' extra: "
        "pip install 'sphinx-ragcite[cite]' (plain sources and CSL-JSON work "
        "without it)"
    )
