"""An answer -> what ``ragcite ask`` prints: text, quotes, JSON or Markdown.

One place decides how a citation reads for people, so the CLI's formats
agree with each other: ``[n]`` in the answer always names the ``n``-th
source line, whatever the style, and ``--export`` swaps that list for a
BibTeX/RIS/CSL-JSON file of the same sources. The answer's ``outcome``
decides what is printed: an answer with its sources; the passages that may
hold the answer, each with its best sentence; or word that the book does
not seem to cover the question, with the closest pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sphinx_ragcite.cite.records import (
    Book,
    CitationSettings,
    Reference,
    from_citation,
    from_passage,
)
from sphinx_ragcite.cite.reference_files import export
from sphinx_ragcite.cite.styles import format_reference

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable

    from sphinx_ragcite.contracts import Answer, Outcome

#: What the outcomes other than an answer say first (the widget says the same).
MAYBE_HERE = "The book may answer this here:"
NOT_COVERED = "This book does not seem to cover that."
CLOSEST = "Closest pages:"
_MARKER = re.compile(r"\[(\d+)\]")
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<>])")
_ANSI = {
    "bold": "1",
    "dim": "2",
    "italic": "3",
    "underline": "4",
    "cyan": "36",
    "yellow": "33",
    "green": "32",
}


@dataclass(frozen=True)
class Paint:
    """ANSI colour when on, the text untouched when off (pipes, NO_COLOR)."""

    on: bool = False

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not text:
            return text
        codes = ";".join(_ANSI[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


@dataclass(frozen=True)
class Options:
    """How to render: the site's citation settings plus the command's choices."""

    settings: CitationSettings = field(default_factory=CitationSettings)
    export: str | None = None
    color: bool = False
    today: dt.date | None = None

    @property
    def style(self) -> str:
        return self.settings.style


def outcome_of(answer: Answer) -> Outcome:
    """What the reader gets. An answer that is not grounded is ``not_found``
    (answer JSON from before ``outcome``), and so is ``passages`` without any."""
    if answer.outcome == "answer" and not answer.grounded:
        return "not_found"
    if answer.outcome == "passages" and not answer.passages:
        return "not_found"
    return answer.outcome


def references(answer: Answer, book: Book, today: dt.date | None) -> list[Reference]:
    return [from_citation(c, book, today) for c in answer.citations]


def render(answer: Answer, fmt: str, book: Book, options: Options) -> str:
    """The whole output of ``ragcite ask`` for *answer*, ending in a newline."""
    if fmt == "json":
        return answer.model_dump_json() + "\n"
    renderers: dict[str, Callable[[Answer, Book, Options], str]] = {
        "text": _text,
        "quotes": _quotes,
        "markdown": _markdown,
    }
    if fmt not in renderers:
        raise ValueError(f"unknown format {fmt!r}")
    return renderers[fmt](answer, book, options)


def _opening(
    answer: Answer, book: Book, options: Options
) -> str | tuple[Paint, str, list[Reference]]:
    """The painted answer and its references; or the whole output, when the
    answer abstained or the references are exported."""
    if outcome_of(answer) != "answer":
        return _abstained(answer, book, options)
    paint = Paint(options.color)
    body = _paint_markers(answer.answer, paint)
    refs = references(answer, book, options.today)
    if options.export:
        return _with_export(body, refs, options.export)
    return paint, body, refs


def _text(answer: Answer, book: Book, options: Options) -> str:
    opening = _opening(answer, book, options)
    if isinstance(opening, str):
        return opening
    paint, body, refs = opening
    lines = [body, "", paint("Sources:", "bold")]
    for ref in refs:
        lines.append(_source_line(ref, options, paint))
    return "\n".join(lines) + "\n"


def _quotes(answer: Answer, book: Book, options: Options) -> str:
    opening = _opening(answer, book, options)
    if isinstance(opening, str):
        return opening
    paint, body, refs = opening
    lines = [body]
    limit = options.settings.max_quote_length
    for citation, ref in zip(answer.citations, refs, strict=True):
        lines += ["", _source_line(ref, options, paint)]
        quote = truncate(citation.quote or citation.snippet, limit)
        lines += [paint(f"> {line}".rstrip(), "dim") for line in quote.splitlines()]
    return "\n".join(lines) + "\n"


def _markdown(answer: Answer, book: Book, options: Options) -> str:
    outcome = outcome_of(answer)
    plain = _plain(options)
    if outcome == "passages":
        lines = [MAYBE_HERE, ""]
        for ref, likely, quote in _shown(answer, book, options):
            lines.append(f"- {_markdown_reference(ref, plain)} ({likely})")
            lines.append(f"  > {markdown_escape(quote)}")
        return "\n".join(lines) + "\n"
    if outcome == "not_found":
        lines = [NOT_COVERED]
        see_also = _see_also(answer, book, options)
        if see_also:
            lines += ["", CLOSEST, ""]
            lines += [f"- {_markdown_reference(r, plain)}" for r in see_also]
        return "\n".join(lines) + "\n"
    refs = references(answer, book, options.today)
    if options.export:
        # Footnote markers would dangle without their definitions.
        fence = {"bibtex": "bibtex", "ris": "", "csl-json": "json"}[options.export]
        exported = export(refs, options.export).rstrip("\n")
        body = markdown_escape(answer.answer)
        return f"{body}\n\n```{fence}\n{exported}\n```\n"
    pieces = _MARKER.split(answer.answer)
    body = "".join(
        f"[^{piece}]" if i % 2 else markdown_escape(piece)
        for i, piece in enumerate(pieces)
    )
    lines = [body, ""]
    for ref in refs:
        lines.append(f"[^{ref.n}]: {_markdown_reference(ref, options)}")
    return "\n".join(lines) + "\n"


def _source_line(ref: Reference, options: Options, paint: Paint) -> str:
    return f"{paint(f'[{ref.n}]', 'bold')} {_source(ref, options, paint)}"


def _source(ref: Reference, options: Options, paint: Paint) -> str:
    text = format_reference(ref, options.style, options.settings)
    if ref.url and options.settings.link_to_source and ref.url in text:
        text = text.replace(ref.url, paint(ref.url, "underline", "cyan"), 1)
    return text


def _markdown_reference(ref: Reference, options: Options) -> str:
    text = format_reference(ref, options.style, options.settings)
    url = ref.url if options.settings.link_to_source else None
    if not url:
        return markdown_escape(text)
    if options.style == "plain" or ref.is_selection:
        label = text.rsplit(" — ", 1)[0]
        return f"[{markdown_escape(label)}]({_link_target(url)})"
    before, found, after = text.partition(url)
    if not found:
        return markdown_escape(text)
    link = f"[{markdown_escape(url)}]({_link_target(url)})"
    return markdown_escape(before) + link + markdown_escape(after)


def _abstained(answer: Answer, book: Book, options: Options) -> str:
    """No answer: the passages that may hold it, each with its best sentence
    (``passages``); or the closest pages (``not_found``)."""
    paint = Paint(options.color)
    plain = _plain(options)
    if outcome_of(answer) == "passages":
        lines = [paint(MAYBE_HERE, "yellow"), ""]
        for ref, likely, quote in _shown(answer, book, options):
            lines.append(f"- {_source(ref, plain, paint)} ({likely})")
            lines.append(paint(f"  > {quote}", "dim"))
        return "\n".join(lines) + "\n"
    lines = [paint(NOT_COVERED, "yellow")]
    see_also = _see_also(answer, book, options)
    if see_also:
        lines += ["", paint(CLOSEST, "bold")]
        lines += [f"- {_source(ref, plain, paint)}" for ref in see_also]
    return "\n".join(lines) + "\n"


def _shown(
    answer: Answer, book: Book, options: Options
) -> list[tuple[Reference, str, str]]:
    """Each passage of the ``passages`` outcome: its reference, how likely it
    answers (its calibrated confidence) and its best sentence, cut as quotes are."""
    limit = options.settings.max_quote_length
    return [
        (
            from_passage(shown.model_dump(), book, options.today),
            f"{round(shown.confidence * 100)}% likely to answer",
            truncate(shown.quote or shown.snippet, limit),
        )
        for shown in answer.passages
    ]


def _plain(options: Options) -> Options:
    """Suggestions are not citations: they read as plain chapter and link."""
    return replace(options, settings=replace(options.settings, style="plain"))


def _see_also(answer: Answer, book: Book, options: Options) -> list[Reference]:
    """Passages an abstaining answer points to instead (metadata ``see_also``)."""
    items: list[dict[str, Any]] = answer.metadata.get("see_also") or []
    return [from_passage(item, book, options.today) for item in items]


def _with_export(body: str, refs: list[Reference], fmt: str) -> str:
    return f"{body}\n\n{export(refs, fmt)}"


def _paint_markers(text: str, paint: Paint) -> str:
    return _MARKER.sub(lambda m: paint(m.group(0), "bold", "cyan"), text)


def truncate(text: str, limit: int) -> str:
    """At most *limit* characters, cut at a word boundary and ended with ``…``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 1)]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:—–-") + "…"


def markdown_escape(text: str) -> str:
    """Backslash the characters Markdown would read as formatting or links."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def _link_target(url: str) -> str:
    return url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
