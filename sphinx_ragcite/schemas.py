"""The answer JSON of DESIGN.md as pydantic v2 models (server, CLI and widget)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sphinx_ragcite.errors import RagciteError

ConfidenceLevel = Literal["high", "medium", "low"]
USER_SELECTION = "user-selection"
#: Freezes the citation date (``2026-01-15`` or an ISO time) for reproducible output.
CITATION_DATE_ENV = "RAGCITE_CITATION_DATE"


def citation_time() -> dt.datetime:
    """Now in UTC to the second, or the moment ``$RAGCITE_CITATION_DATE`` names."""
    frozen = os.environ.get(CITATION_DATE_ENV, "").strip()
    if frozen:
        try:
            moment = dt.datetime.fromisoformat(frozen.replace("Z", "+00:00"))
        except ValueError:
            raise RagciteError(
                f"{CITATION_DATE_ENV}={frozen!r} is not a date like 2026-01-15"
            ) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        return moment.astimezone(dt.timezone.utc).replace(microsecond=0)
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def timestamp(moment: dt.datetime) -> str:
    """``citation_date`` as the answer JSON writes it: ``2026-11-21T10:30:45Z``."""
    return moment.isoformat().replace("+00:00", "Z")


def confidence_level(value: float) -> ConfidenceLevel:
    """Bands of seed 003: high >= 0.7, medium 0.4-0.69, low below 0.4."""
    if value >= 0.7:
        return "high"
    if value >= 0.4:
        return "medium"
    return "low"


class Citation(BaseModel):
    """One numbered source of an answer; ``n`` is its ``[n]`` marker."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(ge=1)
    passage_id: str
    url: str | None
    chapter: str
    section: str
    heading_path: list[str]
    page: int | None = None
    snippet: str
    quote: str = Field(description="exact sentence(s) of the passage that support it")
    similarity_score: float = Field(ge=0, le=1)
    confidence_score: float = Field(ge=0, le=1)
    grounded: bool
    source_type: Literal["book", "selection"] = "book"
    citation_date: str


class Answer(BaseModel):
    """The response of ``POST /api/ask`` and ``ragcite ask --format json``."""

    model_config = ConfigDict(extra="forbid")

    question: str
    mode: Literal["book", "selection"]
    answer: str
    citations: list[Citation]
    confidence: float = Field(ge=0, le=1)
    confidence_level: ConfidenceLevel
    grounded: bool
    metadata: dict[str, Any]
