"""The shapes both sides agree on: passage records, the manifest, the answer JSON.

Build time writes these into ``_ragcite/``; query time (retrieval, answers,
citations, server, CLI) reads them back. This module imports neither Sphinx
nor docutils, so the query side never pays for them.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

# pydantic reads TypedDicts from typing_extensions only (before Python 3.12)
from typing_extensions import TypedDict

from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.text import is_cjk

# -- names the CLI, the HTTP API and the engine share ---------------------

GeneratorName = Literal["extractive", "llm"]
GENERATORS: tuple[str, ...] = get_args(GeneratorName)
AnswerMode = Literal["book", "selection"]
ANSWER_MODES: tuple[str, ...] = get_args(AnswerMode)
SearchMode = Literal["bm25", "dense", "hybrid"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
Fusion = Literal["rrf", "linear"]
FUSIONS: tuple[str, ...] = get_args(Fusion)
#: ``--style`` and ``ragcite_citation_style``.
CitationStyle = Literal["plain", "apa", "ieee", "acm", "chicago"]
STYLES: tuple[str, ...] = get_args(CitationStyle)
#: ``ragcite ask --format``.
OutputFormat = Literal["text", "quotes", "json", "markdown"]
FORMATS: tuple[str, ...] = get_args(OutputFormat)
#: ``ragcite ask --export`` and ``ragcite cite --bibtex|--ris|--csl-json``.
ExportFormat = Literal["bibtex", "ris", "csl-json"]
EXPORTS: tuple[str, ...] = get_args(ExportFormat)
ConfidenceLevel = Literal["high", "medium", "low"]
#: What the reader gets: a cited answer; passages that most likely hold the
#: answer (no claim made); or word that the book does not seem to cover it.
Outcome = Literal["answer", "passages", "not_found"]

# -- limits -----------------------------------------------------------------

#: Characters of a question, after trimming (DESIGN.md).
MAX_QUESTION = 2000
#: Characters of a reader's selection, after trimming.
MAX_SELECTION = 20_000
#: Passages an answer is drawn from by default, and at most over HTTP.
DEFAULT_K = 6
MAX_K = 20
#: Characters of a reader's feedback reason, after trimming.
MAX_REASON = 500

#: A site's name on a server of several (``ragcite serve --site NAME=...``):
#: the first folder of its URLs, ``/v1.2/guide.html``.
SITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")

# -- passage IDs ------------------------------------------------------------

PASSAGE_ID = re.compile(r"^ch(?P<c>[0-9]+)-sec(?P<s>[0-9]+)-p(?P<p>[0-9]+)$")
#: Characters of a passage ID a request may send (HTTP, MCP, ``ragcite cite``):
#: longer is refused by its length, never looked up or echoed back.
MAX_PASSAGE_ID = 100
#: The ``passage_id`` of a reader's selected text in selection mode.
USER_SELECTION = "user-selection"


def passage_id(chapter: int, section: int, position: int) -> str:
    return f"ch{chapter}-sec{section}-p{position}"


def parse_passage_id(value: str) -> tuple[int, int, int] | None:
    match = PASSAGE_ID.match(value)
    if match is None:
        return None
    return int(match["c"]), int(match["s"]), int(match["p"])


#: The runs of whitespace a snippet keeps as one space.
SNIPPET_SPACES = re.compile(r"[ \t\r\f\v\n]+")
#: A snippet's characters at most, and at least where a word boundary cuts it.
SNIPPET_CHARS = 200
SNIPPET_MIN_CHARS = 50


def make_snippet(
    text: str, limit: int = SNIPPET_CHARS, minimum: int = SNIPPET_MIN_CHARS
) -> str:
    """A passage's ``snippet``: a prefix of its text cut at a word boundary.

    In Chinese, Japanese and Korean text every character boundary next to a
    CJK character is a word boundary.
    """
    flat = SNIPPET_SPACES.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit + 1)
    if not any(map(is_cjk, flat[max(cut, minimum - 1) : limit + 1])):
        return flat[: cut if cut >= minimum else limit].rstrip()
    cut = next(
        i
        for i in range(limit, minimum - 1, -1)
        if flat[i] == " " or is_cjk(flat[i - 1]) or is_cjk(flat[i])
    )
    return flat[:cut].rstrip()


# -- the index files ----------------------------------------------------------


class PassageRecord(TypedDict):
    """One line of ``passages.jsonl``: a passage and where it lives."""

    passage_id: str
    docname: str
    #: page URL + ``#passage_id``, relative to the site root
    url: str
    chapter: str
    section: str
    heading_path: list[str]
    text: str
    snippet: str
    char_start: int
    char_end: int
    content_hash: str


class ServedRecord(PassageRecord, total=False):
    """A record as a server of several sites hands it out: which site, which
    version, and ``url`` relative to the server's root (``NAME/page.html#ID``)."""

    site: str
    version: str


#: Field -> type every record must have (checked when an index is loaded).
PASSAGE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "passage_id": str,
    "docname": str,
    "url": str,
    "chapter": str,
    "section": str,
    "heading_path": list,
    "text": str,
    "snippet": str,
    "char_start": int,
    "char_end": int,
    "content_hash": str,
}


class Counts(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    passages: int = Field(ge=0)
    documents: int = Field(0, ge=0)
    moved: int = Field(0, ge=0)


class EmbeddingInfo(BaseModel):
    """How the dense vectors were made: a query must be embedded the same way."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str
    dim: int = Field(gt=0, le=65_536)
    dtype: Literal["int8"] = "int8"
    scale_dtype: Literal["float32"] = "float32"
    max_tokens: int = Field(gt=0)
    #: sentence vectors embedded at build time (0: the server embeds them)
    sentences: int = Field(default=0, ge=0)
    #: the vectors rank passages in hybrid search; False: BM25 alone ranks
    #: them and the vectors only score sentences (an English encoder on a
    #: Chinese, Japanese or Korean book, extension/embedding.py)
    search: bool = True
    #: "separate": each sentence its own encoder pass; "passage": pooled from
    #: its passage's token vectors (``ragcite_sentence_pooling``)
    sentence_pooling: Literal["separate", "passage"] = "separate"
    #: which encoder the build chose (``ragcite_encoder``) and why
    encoder: str = ""
    chosen_because: str = ""
    #: put before a question / a passage or sentence before it is embedded
    query_prefix: str = ""
    passage_prefix: str = ""
    #: the encoder's files ship in ``_ragcite/`` (roles ``model`` and
    #: ``tokenizer``): the server and the browser load those, never another
    shipped: bool = False


#: A SHA-256 digest in hex.
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class Manifest(BaseModel):
    """``_ragcite/manifest.json``; the reader checks it before trusting any file.

    Unknown keys are kept (a newer build may add some); the ones below are
    what query time relies on.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    format_version: int
    project: str = ""
    author: str = ""
    copyright: str = ""
    version: str = ""
    release: str = ""
    html_baseurl: str = ""
    language: str | None = None
    builder: str = ""
    root_url: str = ""
    built_at: str = ""
    counts: Counts
    tokenizer: dict[str, Any] = Field(default_factory=dict)
    bm25: dict[str, Any] = Field(default_factory=dict)
    embedding: EmbeddingInfo | None = None
    citation: dict[str, Any] = Field(default_factory=dict)
    #: role -> file name relative to ``_ragcite/``
    files: dict[str, str]
    sha256: dict[str, str]
    bytes: dict[str, int]

    @field_validator(
        "project",
        "author",
        "copyright",
        "version",
        "release",
        "html_baseurl",
        "builder",
        "root_url",
        "built_at",
        mode="before",
    )
    @classmethod
    def _text(cls, value: object) -> str:
        """Book facts are display text: conf.py may give None or a list."""
        if value is None:
            return ""
        if isinstance(value, (list, tuple)):
            return ", ".join(str(v) for v in value)
        if isinstance(value, (dict, bool)):
            raise ValueError("must be text")
        return str(value)

    @model_validator(mode="after")
    def _complete(self) -> Manifest:
        required = {"passages", "bm25.params", "bm25.vocab", "bm25.data"}
        required |= {"bm25.indices", "bm25.indptr"}
        if self.embedding is not None:
            required |= {"embeddings", "embedding_scales"}
            if self.embedding.shipped:
                required |= {"model", "tokenizer"}
        missing = sorted(required - set(self.files))
        if missing:
            raise ValueError(f"files: no entry for {', '.join(missing)}")
        for role in self.files:
            digest = self.sha256.get(role)
            if not isinstance(digest, str) or not _SHA256.match(digest):
                raise ValueError(f"sha256: no valid digest for {role!r}")
            size = self.bytes.get(role)
            if not isinstance(size, int) or size < 0:
                raise ValueError(f"bytes: no valid size for {role!r}")
        return self


# -- retrieval results --------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """A ranked passage; ``bm25``/``dense`` are None when that side did not run."""

    passage: PassageRecord
    row: int
    score: float
    bm25: float | None = None
    dense: float | None = None

    @property
    def passage_id(self) -> str:
        return self.passage["passage_id"]

    def as_json(self) -> dict[str, Any]:
        return {
            "passage_id": self.passage_id,
            "score": round(self.score, 6),
            "bm25": None if self.bm25 is None else round(self.bm25, 6),
            "dense": None if self.dense is None else round(self.dense, 6),
            **{k: v for k, v in self.passage.items() if k != "passage_id"},
        }


# -- the answer JSON (DESIGN.md) ----------------------------------------------

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


#: Lower bounds of the confidence bands. ``confidence`` is a calibrated
#: probability that the cited passage answers the question, so "high" means
#: right at least 9 times in 10 (measured on dev sets held out of the fit).
HIGH_CONFIDENCE = 0.9
MEDIUM_CONFIDENCE = 0.7


def confidence_level(value: float) -> ConfidenceLevel:
    """high >= 0.9, medium 0.7-0.9, low below 0.7 (of a calibrated probability)."""
    if value >= HIGH_CONFIDENCE:
        return "high"
    if value >= MEDIUM_CONFIDENCE:
        return "medium"
    return "low"


#: Optional answer-JSON fields left out when unset, so one site's JSON is unchanged.
SCOPE_FIELDS = ("site", "version")
#: Those and the other optional fields left out when unset (``answer_id``: a
#: server without a question log), so old clients see the JSON they always did.
UNSET_FIELDS = (*SCOPE_FIELDS, "answer_id")


class _Scoped(BaseModel):
    """``site``/``version`` (declared last by each model) are set only when
    several sites are served together, and left out of the JSON when unset
    (not written as ``null``), so a server of one site, ``ragcite ask`` and
    old clients see the answer JSON they always did; so is an answer's
    ``answer_id`` (only a server keeping a question log sets it).
    """

    # No return annotation on purpose: pydantic then keeps the model's own
    # JSON schema for the output (OpenAPI); ``-> Any`` would make it ``{}``.
    @model_serializer(mode="wrap")
    def _drop_unset_scope(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        if isinstance(data, dict):
            for name in UNSET_FIELDS:
                if data.get(name, "") is None:
                    del data[name]
        return data


class Citation(_Scoped):
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
    quote_spans: list[tuple[int, int]] = Field(
        default_factory=list,
        description="[start, end) of each quoted sentence in the passage's text "
        "(the selection's, for a selection), in the order of the quote",
    )
    similarity_score: float = Field(ge=0, le=1)
    confidence_score: float = Field(ge=0, le=1)
    grounded: bool
    source_type: Literal["book", "selection"] = "book"
    citation_date: str
    site: str | None = Field(
        None,
        description="several sites served: the site (--site NAME=...) it is "
        "from; url is then relative to the server's root",
    )
    version: str | None = Field(
        None, description="several sites served: that site's conf.py version"
    )


class ShownPassage(_Scoped):
    """A passage the ``passages`` outcome points to, with its best sentence."""

    model_config = ConfigDict(extra="forbid")

    passage_id: str
    url: str | None
    chapter: str
    section: str
    heading_path: list[str]
    snippet: str
    quote: str = Field(description="the passage's sentence most likely to answer")
    quote_spans: list[tuple[int, int]] = Field(
        default_factory=list,
        description="[start, end) of that sentence in the passage's text",
    )
    confidence: float = Field(
        ge=0,
        le=1,
        description="calibrated probability that this passage answers the question",
    )
    site: str | None = Field(None, description="several sites served: its site")
    version: str | None = Field(
        None, description="several sites served: that site's conf.py version"
    )


class Answer(_Scoped):
    """The response of ``POST /api/ask`` and ``ragcite ask --format json``.

    With several sites, ``site`` is the one site asked (absent when the
    question was asked across sites) and ``version`` the version asked about
    (absent when the sites asked differ in version).
    """

    model_config = ConfigDict(extra="forbid")

    question: str
    mode: AnswerMode
    answer: str
    citations: list[Citation]
    confidence: float = Field(ge=0, le=1)
    confidence_level: ConfidenceLevel
    grounded: bool
    metadata: dict[str, Any]
    outcome: Outcome = Field(
        "answer",
        description="answer: a cited answer (grounded); passages: no claim, "
        "`passages` lists where the answer most likely is; not_found: the "
        "book does not seem to cover it (`metadata.see_also`: closest pages)",
    )
    passages: list[ShownPassage] = Field(
        default_factory=list,
        description="outcome passages: up to three passages, most likely first",
    )
    site: str | None = Field(
        None,
        description="several sites served: the one site asked (absent when "
        "asked across sites)",
    )
    version: str | None = Field(
        None,
        description="several sites served: the version asked about (absent "
        "when the sites asked differ)",
    )
    answer_id: str | None = Field(
        None,
        description="a server keeping a question log (--questions-log): this "
        "answer's ID in it, for POST /api/feedback (absent otherwise)",
    )
