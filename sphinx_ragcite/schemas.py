"""Moved to :mod:`sphinx_ragcite.contracts`; kept until the server moves over."""

from __future__ import annotations

from sphinx_ragcite.contracts import (  # noqa: F401
    CITATION_DATE_ENV,
    USER_SELECTION,
    Answer,
    Citation,
    ConfidenceLevel,
    citation_time,
    confidence_level,
    timestamp,
)
