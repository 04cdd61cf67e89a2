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
    ServedRecord,
)

#: ``site``/``version`` of a request: a site name or a conf.py version.
SCOPE_TEXT = 100


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
    site: str | None = Field(
        None,
        max_length=SCOPE_TEXT,
        description="with several sites served: ask this one (a --site NAME); "
        "'*' or none: all of them",
    )
    version: str | None = Field(
        None,
        max_length=SCOPE_TEXT,
        description="ask only the sites whose conf.py version or release is this",
    )

    @field_validator("site", "version")
    @classmethod
    def _scope(cls, value: str | None) -> str | None:
        return _valid_text(value).strip() or None if value is not None else None

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


class SiteInfo(BaseModel):
    """One of several sites served together (``--site NAME=BUILD_DIR``)."""

    name: str
    #: where its pages are, relative to the server's root: ``NAME/``
    url: str
    project: str
    version: str
    release: str
    passages: int
    index_version: str


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
    sites: list[SiteInfo] | None = Field(
        None, description="the sites served, when several are (else null)"
    )


#: ``GET /api/passages/{id}``: the record of passages.jsonl, as it is (with
#: several sites: naming its site and version, its URL from the server's root).
Passage = ServedRecord


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}
