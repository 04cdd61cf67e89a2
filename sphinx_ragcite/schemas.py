"""The answer JSON of DESIGN.md as pydantic v2 models (server, CLI and widget)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ConfidenceLevel = Literal["high", "medium", "low"]
USER_SELECTION = "user-selection"


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
