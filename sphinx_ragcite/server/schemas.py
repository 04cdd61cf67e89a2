"""Request and response bodies of the HTTP API (the answer itself is shared)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sphinx_ragcite.contracts import (
    DEFAULT_K,
    MAX_K,
    MAX_QUESTION,
    MAX_SELECTION,
    AnswerMode,
    CitationStyle,
    GeneratorName,
    PassageRecord,
)


def _valid_text(value: str) -> str:
    """JSON may carry lone UTF-16 surrogates; no tokenizer can take them."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


class AskFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docnames: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("docnames")
    @classmethod
    def _docnames(cls, value: list[str]) -> list[str]:
        return [_valid_text(v) for v in value]

    chapters: list[int] = Field(default_factory=list, max_length=50)

    @field_validator("chapters", mode="before")
    @classmethod
    def _chapters(cls, value: Any) -> Any:
        if isinstance(value, list) and any(isinstance(v, bool) for v in value):
            raise ValueError("must be a list of integers, not true/false")
        return value


class AskRequest(BaseModel):
    """``POST /api/ask``: question and selection are trimmed, then measured."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1, description=f"1 to {MAX_QUESTION} characters after trimming"
    )
    mode: AnswerMode = "book"
    selection: str | None = Field(
        None, description=f"at most {MAX_SELECTION} characters after trimming"
    )
    k: int = Field(DEFAULT_K, ge=1, le=MAX_K)
    filters: AskFilters | None = None
    style: CitationStyle | None = None
    generator: GeneratorName | None = Field(
        None, description="defaults to the server's --generator"
    )

    @field_validator("question")
    @classmethod
    def _question_length(cls, value: str) -> str:
        value = _valid_text(value).strip()
        if not value:
            raise ValueError("must not be empty")
        if len(value) > MAX_QUESTION:
            raise ValueError(f"must be at most {MAX_QUESTION} characters")
        return value

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> Any:
        if isinstance(value, bool):  # JSON true is not the number 1
            raise ValueError("must be an integer, not true/false")
        return value

    @field_validator("selection")
    @classmethod
    def _selection(cls, value: str | None) -> str | None:
        """Trimmed before its length is checked, like the question."""
        if value is None:
            return None
        value = _valid_text(value).strip()
        if len(value) > MAX_SELECTION:
            raise ValueError(f"must be at most {MAX_SELECTION} characters")
        return value or None


class ErrorDetail(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


class SearchHit(BaseModel):
    model_config = ConfigDict(extra="allow")

    passage_id: str
    score: float
    bm25: float | None
    dense: float | None
    url: str
    chapter: str
    section: str
    snippet: str


class SearchResponse(BaseModel):
    hits: list[SearchHit]


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    index_loaded: bool
    index_version: str
    passages: int
    model_loaded: bool
    model: str | None
    generator: str
    queue_depth: int
    queue_size: int


#: ``GET /api/passages/{id}``: the record of passages.jsonl, as it is.
Passage = PassageRecord


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}
