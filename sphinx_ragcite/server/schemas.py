"""Request and response bodies of the HTTP API (the answer itself is shared).

The field types of a request (:data:`Question`, :data:`Integer`...) are
shared with the MCP tools, and :func:`problem` words the first problem of
either as ``field: message``: one set of rules, one wording, every door.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
)

from sphinx_ragcite.contracts import (
    DEFAULT_K,
    MAX_K,
    MAX_PASSAGE_ID,
    MAX_QUESTION,
    MAX_REASON,
    MAX_SELECTION,
    AnswerMode,
    CitationStyle,
    GeneratorName,
    ServedRecord,
)

if TYPE_CHECKING:
    from collections.abc import Container, Mapping, Sequence

#: ``site``/``version`` of a request: a site name or a conf.py version.
SCOPE_TEXT = 100
#: Documents or chapters one filter lists.
MAX_FILTER = 50
#: An ``answer_id``: ``secrets.token_hex(16)``.
ANSWER_ID = re.compile(r"[0-9a-f]{32}")
#: Bytes JSON can spend on one character of a string: a character above
#: U+FFFF escaped as a surrogate pair, ``\ud83d\ude00`` (``json.dumps`` does
#: this by default; CJK escaped is ``\u5496``, 6 bytes).
JSON_BYTES_PER_CHAR = 12
#: Bytes for everything but the question and the selection: the other
#: fields (filters, site, version...) and JSON's own punctuation.
OTHER_FIELDS_BYTES = 64 * 1024
#: The request body limit: the longest question and selection, every
#: character at its longest, and the rest. 329,536 bytes (about 322 KiB).
MAX_BODY_BYTES = (
    MAX_QUESTION + MAX_SELECTION
) * JSON_BYTES_PER_CHAR + OTHER_FIELDS_BYTES


def _valid_text(value: str) -> str:
    """JSON may carry lone UTF-16 surrogates; no tokenizer can take them."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


def _unicode_first(value: Any) -> Any:
    """Before a length constraint, which refuses a lone surrogate in
    pydantic's words ("unable to parse raw data as a unicode string"): the
    widget and the browser engine say :func:`_valid_text`'s."""
    return _valid_text(value) if isinstance(value, str) else value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):  # JSON true is not the number 1
        raise ValueError("must be an integer, not true/false")
    return value


def _question(value: str) -> str:
    """Trimmed, then measured."""
    value = _valid_text(value).strip()
    if not value:
        raise ValueError("must not be empty")
    if len(value) > MAX_QUESTION:
        raise ValueError(f"must be at most {MAX_QUESTION} characters")
    return value


def _selection(value: str) -> str | None:
    """Trimmed before its length is checked, like the question."""
    value = _valid_text(value).strip()
    if len(value) > MAX_SELECTION:
        raise ValueError(f"must be at most {MAX_SELECTION} characters")
    return value or None


def _scope(value: str) -> str | None:
    return _valid_text(value).strip() or None


def _answer_id(value: str) -> str:
    if not ANSWER_ID.fullmatch(value):
        raise ValueError("must be the answer_id of an answer (32 hex digits)")
    return value


def _reason(value: str) -> str | None:
    """Trimmed before its length is checked, like the question."""
    value = _valid_text(value).strip()
    if len(value) > MAX_REASON:
        raise ValueError(f"must be at most {MAX_REASON} characters")
    return value or None


#: A JSON number without a fraction: not true/false, not "3", not 3.0.
Integer = Annotated[int, BeforeValidator(_not_bool), Strict()]
Text = Annotated[str, AfterValidator(_valid_text)]
Question = Annotated[
    str, Field(min_length=1), BeforeValidator(_unicode_first), AfterValidator(_question)
]
Selection = Annotated[str, AfterValidator(_selection)]
#: A site name or a version (None when blank).
ScopeText = Annotated[
    str,
    Field(max_length=SCOPE_TEXT),
    BeforeValidator(_unicode_first),
    AfterValidator(_scope),
]
Docnames = Annotated[list[Text], Field(max_length=MAX_FILTER)]
Chapters = Annotated[list[Integer], Field(max_length=MAX_FILTER)]
Count = Annotated[Integer, Field(ge=1, le=MAX_K)]
#: (The pattern is documented, not checked by it: ``_answer_id`` words the error.)
AnswerId = Annotated[
    str,
    Field(max_length=64, json_schema_extra={"pattern": ANSWER_ID.pattern}),
    AfterValidator(_answer_id),
]
Reason = Annotated[str, AfterValidator(_reason)]
#: A passage ID as a request sends it: measured before it is looked up.
PassageIdText = Annotated[str, Field(min_length=1, max_length=MAX_PASSAGE_ID)]


def problem(
    errors: Sequence[Mapping[str, Any]], skip: Container[Any] = ()
) -> tuple[str | None, str]:
    """The field (dotted, *skip* left out) and message of the first problem."""
    first = errors[0] if errors else {}
    field = ".".join(str(p) for p in first.get("loc", ()) if p not in skip)
    message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
    return field or None, message


def problem_text(field: str | None, message: str) -> str:
    """``field: message``, what every door says of a request it refuses."""
    return f"{field}: {message}" if field else message


class AskFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    docnames: Docnames = Field(default_factory=list)
    chapters: Chapters = Field(default_factory=list)


class AskRequest(BaseModel):
    """``POST /api/ask``: question and selection are trimmed, then measured."""

    model_config = ConfigDict(extra="forbid")

    question: Question = Field(
        description=f"1 to {MAX_QUESTION} characters after trimming"
    )
    mode: AnswerMode = "book"
    selection: Selection | None = Field(
        None, description=f"at most {MAX_SELECTION} characters after trimming"
    )
    k: Count = DEFAULT_K
    filters: AskFilters | None = None
    style: CitationStyle | None = None
    generator: GeneratorName | None = Field(
        None, description="defaults to the server's --generator"
    )
    site: ScopeText | None = Field(
        None,
        description="with several sites served: ask this one (a --site NAME); "
        "'*' or none: all of them",
    )
    version: ScopeText | None = Field(
        None,
        description="ask only the sites whose conf.py version or release is this",
    )


class FeedbackRequest(BaseModel):
    """``POST /api/feedback``: a reader's vote on an answer."""

    model_config = ConfigDict(extra="forbid")

    answer_id: AnswerId = Field(description="the answer's `answer_id`")
    helpful: Annotated[bool, Strict()] = Field(description="true or false (JSON)")
    reason: Reason | None = Field(
        None, description=f"why not: at most {MAX_REASON} characters after trimming"
    )


class FeedbackResponse(BaseModel):
    """The vote as stored; a later vote on the same answer replaces it."""

    answer_id: str
    helpful: bool
    reason: str | None


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
    service: Literal["ragcite"] = Field(
        "ragcite",
        description="always ragcite: the widget takes no other service's "
        'health (a bare {"status": "ok"} is common) for an answer server',
    )
    #: "error" (with a 503) when the passages' store cannot answer
    status: Literal["ok", "error"]
    version: str
    #: false while the Qdrant the passages are in cannot answer for them
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
    reason: str | None = Field(
        None, description="why the status is error, and the fix (else null)"
    )
    feedback: bool = Field(
        False,
        description="whether POST /api/feedback takes votes (the server keeps "
        "a question log); answers then carry an answer_id",
    )


#: ``GET /api/passages/{id}``: the record of passages.jsonl, as it is (with
#: several sites: naming its site and version, its URL from the server's root).
Passage = ServedRecord


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "field": field}}
