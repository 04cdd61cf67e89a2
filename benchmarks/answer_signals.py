"""Candidate answer-ranker signals of issue 36, kept out of the engine.

Wrong answers on unseen books followed four patterns: the answer announces
what follows instead of saying it (a lead-in), defines its subject when asked
how or why (a topic sentence), lacks the type of answer asked for, or lacks
the question's key term. Each pattern has a detector here, used to count
them (``error_patterns.py``) and, as extra columns of every unit, to measure
whether the ranker gains from them (``tools/ranker_experiments.py``,
leave-one-set-out). None gained on most sets, so the engine
(``sphinx_ragcite.answer.units``) does not compute them: see
benchmarks/README.md, "Issue 36".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.answer.sentences import content_words
from sphinx_ragcite.answer.spec import CODE_TOKEN, KIND_NUMBER, NUMBER_WORD
from sphinx_ragcite.answer.units import looks_like_code, names_someone, question_kind

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sphinx_ragcite.answer.evidence import Evidence
    from sphinx_ragcite.answer.units import Unit

#: A sentence that announces what follows instead of saying it: "You can
#: also use these settings:", "The following options control ...", "This
#: chapter is for readers who want to ...", "See the section below".
_POINTER = re.compile(
    r"\b(the following|as follows|(shown|listed|described|given|explained) "
    r"(below|later|next)|below\b|in the (next|following|later) "
    r"(chapter|section|page|part|step)s?|this (chapter|section|page|guide|"
    r"tutorial|document|part|book|notebook|article|lesson)|(see|refer to|read) "
    r"(the |this |our )?(section|chapter|page|documentation|docs|guide|tutorial)|"
    r"(use|see|set|try|read|install|run|follow|check) these\b|"
    r"以下|如下|下面|下列|下記|次の|本章|本节|本節|参阅|参见|参照)",
    re.IGNORECASE,
)


def announces(text: str) -> tuple[bool, bool]:
    """Whether the text announces what follows (a prose line ending with a
    colon, or pointing to "the following", "below", "this chapter" ...), and
    whether what it announces is quoted with it (lines follow that line)."""
    lines = [line for line in text.split("\n") if line.strip()]
    for i, line in enumerate(lines):
        if looks_like_code(line):
            continue
        if line.rstrip().endswith((":", "：")) or _POINTER.search(line):
            return True, i < len(lines) - 1
    return False, False


#: What the question asks for beyond :data:`QUESTION_KINDS`, first match wins:
#: a place or path, a number, an option or flag, code, a named item, a
#: procedure. English only; other questions have no type ("").
ANSWER_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "path",
        re.compile(
            r"^where\b.*\b(write|writes|written|store|stores|stored|save|saves|"
            r"saved|put|look|looks|install|installed|located|keep|kept|read|"
            r"reads|live|lives|go|goes|placed|cache|cached|log|logs|output|file|"
            r"files|config|configuration|directory|folder)\b|\b(which|what) "
            r"(file|directory|folder|path|location|url|filename)s?\b"
        ),
    ),
    ("place", re.compile(r"^where\b")),
    (
        "number",
        re.compile(
            r"\b(how (many|much|long|often|far|old|large|big|high|fast|hot)|"
            r"percentage|proportion|temperature|ratio|what (size|amount|number)|"
            r"(what|which) (default )?(port|version|number|size|limit|timeout|"
            r"year|percentage|count|length|depth|rate))\b"
        ),
    ),
    (
        "option",
        re.compile(
            r"\b(which|what) (\w+ )?(option|flag|argument|parameter|setting|"
            r"environment variable|keyword|key|field|variable|config)s?\b"
        ),
    ),
    (
        "code",
        re.compile(
            r"\b(which|what) (\w+ )?(command|function|method|class|decorator|"
            r"module|package|import|call|exception|error|attribute|hook|type)s?\b"
        ),
    ),
    (
        "procedure",
        re.compile(r"^(how (do|can|should|would) (i|you|we)|how to)\b"),
    ),
    ("named", re.compile(r"^(which|what) (?!(is|are|was|were|does|do|did)\b)\w+")),
    (
        "yesno",
        re.compile(r"^(is|are|can|could|does|do|did|should|will|must|may|has|have)\b"),
    ),
)
#: What answers a yes/no question: a stated polarity or condition.
_POLARITY = re.compile(
    r"(\b(not|no|never|cannot|can|only|must|always|yes|both|either|neither|"
    r"instead|required|requires?|optional|supports?|supported|unsupported|"
    r"allows?|default|unless|if)\b|n't\b)",
    re.IGNORECASE,
)
_PATH = re.compile(
    r"(~?/[\w.-]+|\b\w:\\|\b[\w-]+\.(py|toml|cfg|ini|txt|json|yaml|yml|md|rst|"
    r"html|log|lock|conf|env|sh|js|csv)\b|\b(directory|folder|path|dir)\b)",
    re.IGNORECASE,
)
_OPTION = re.compile(
    r"(--?[a-z][\w-]*|\b[a-z0-9]+_\w+\b|\b\w+=|`[^`]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|"
    r"\b[a-z]+[A-Z]\w*\b|\b\w+\.\w+\b)"
)
_PROCEDURE = re.compile(
    r"((^|\n|[.:;]\s+)(use|run|set|add|call|pass|install|create|open|click|"
    r"select|write|import|define|configure|enable|disable|put|change|edit|"
    r"remove|delete|specify|type|go|make|register|return|wrap|subclass|"
    r"replace|move|copy|start|stop|build|upload|download|check|apply|load|"
    r"save|mark|list|declare|give|provide|include|keep|avoid|try)\b|"
    r"\bby (using|running|setting|adding|calling|passing|creating|writing)\b|"
    r"\byou (can|should|must|need to|may|have to)\b|\bstep\b)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"[\"“”'‘’`][^\"“”'‘’`\n]{1,40}[\"“”'‘’`]")


def answer_type(question: str) -> str:
    """The type of answer the question asks for ("" when it names none)."""
    text = question.strip().lower()
    for kind, pattern in ANSWER_TYPES:
        if pattern.search(text):
            return kind
    return ""


def type_match(kind: str, text: str, question: str = "") -> float:
    """1 if *text* holds the answer type *kind* (:func:`answer_type`), 0 if
    not, 0.5 if the question names no type. What the question contains does
    not count."""
    if not kind:
        return 0.5
    asked = set(re.findall(r"\w+", question.lower()))

    def new(pattern: re.Pattern[str]) -> bool:
        return any(
            any(w not in asked for w in re.findall(r"\w+", m.group(0).lower()))
            for m in pattern.finditer(text)
        )

    if kind == "path":
        return float(new(_PATH))
    if kind == "place":
        return float(new(_PATH) or names_someone(text, asked))
    if kind == "number":
        return float(new(KIND_NUMBER) or new(NUMBER_WORD))
    if kind == "option":
        return float(new(_OPTION))
    if kind == "code":
        return float(new(CODE_TOKEN) or new(_OPTION))
    if kind == "yesno":
        return float(bool(_POLARITY.search(text)))
    if kind == "procedure":
        return float(bool(_PROCEDURE.search(text)) or bool(CODE_TOKEN.search(text)))
    return float(  # named: a name, code, a quoted term or a number it adds
        names_someone(text, asked) or new(_OPTION) or new(_QUOTED) or new(KIND_NUMBER)
    )


#: A sentence that says what its subject is ("Descaling is an important part
#: of caring for a kettle.", "Click is a Python package for ...").
_DEFINES = re.compile(
    r"^(?!(it|this|that|there|here|these|those|they|which|what)\b)"
    r"[^,.:;()\n]{1,60}?\b((is|are) (a|an|the|one of|what|how|where|when)\b|"
    r"(is|are) (\w+ ){1,3}(that|which|who)\b|(means|refers to|stands for)\b)",
    re.IGNORECASE,
)
#: Questions that ask how or why (a definition of the subject answers neither).
_HOW_WHY = re.compile(r"^(how|why|what is the (reason|point|purpose))\b")


def defines_subject(text: str) -> bool:
    """The text's first prose line is a definition of its subject."""
    return bool(_DEFINES.match(text.lstrip()))


def asks_how_or_why(question: str) -> bool:
    return bool(_HOW_WHY.match(question.strip().lower()))


#: What the tokenizer leaves of a contraction: no key term ("shouldn't").
_CONTRACTED = frozenset(
    {
        "t", "s", "d", "m", "ll", "ve", "re", "don", "doesn", "didn", "isn",
        "aren", "wasn", "weren", "won", "wouldn", "shouldn", "couldn", "hasn",
        "haven", "hadn", "mustn",
    }
)  # fmt: skip


def rarest(asked: dict[str, float]) -> str:
    """The question's content word of the highest idf (the first in sorted
    order among equals; no remnant of a contraction); "" when it has none."""
    best, weight = "", -1.0
    for term in sorted(asked):
        if term not in _CONTRACTED and asked[term] > weight:
            best, weight = term, asked[term]
    return best


#: The first line of an API object's passage: its signature, as autodoc and
#: ``.. function::`` render it ("class click.Option(param_decls=None, ...)",
#: "prepare_request(request: Request) → PreparedRequest", "attrs.frozen").
_SIGNATURE = re.compile(
    r"^(?:(?:class|exception|async|property|classmethod|staticmethod|"
    r"abstractmethod|final|data|attribute|method|function)\s+)*"
    r"[A-Za-z_][\w.]*\s*(?:\(.*\))?\s*(?:(?:→|->)\s*\S.*)?(?:\s*=\s*\S.*)?$"
)
#: The field labels autodoc puts before an object's parameters, returns,
#: exceptions (English, and as Sphinx translates them to Chinese).
_FIELD = re.compile(
    r"^(Parameters|Parameter|Keyword Arguments|Other Parameters|Returns|Return|"
    r"Return type|Raises|Yields|Type|参数|返回|返回类型|引发|类型)\s*[:：]"
)


def is_api(passage_text: str) -> bool:
    """The passage describes an API object: its first line is a signature
    (with a call, a dotted name, or "class"/"exception" before the name)."""
    first = passage_text.split("\n", 1)[0].strip()
    match = _SIGNATURE.match(first)
    return bool(match) and (
        "(" in first
        or "." in first.split("(")[0]
        or first.startswith(("class ", "exception "))
    )


def is_field(text: str) -> bool:
    """The unit is one of autodoc's fields ("Parameters: name – ...")."""
    return bool(_FIELD.match(text.lstrip()))


#: A sentence about what happens when nothing is done ("By default, requests
#: do not time out unless a timeout is set"): how to do it, it does not say.
_DEFAULT = re.compile(
    r"\b(by default|default(s)? to|unless|otherwise|if (no|not)|without)\b",
    re.IGNORECASE,
)
#: What a program printed, not what to do: a traceback, an error, a prompt's
#: output.
_OUTPUT = re.compile(
    r"^(Traceback \(most recent call last\)|[\w.]*(Error|Exception|Warning): |"
    r"\s*File \"[^\"]*\", line \d+)",
    re.MULTILINE,
)


def says_default(text: str) -> bool:
    return bool(_DEFAULT.search(text))


def is_output(text: str) -> bool:
    return bool(_OUTPUT.search(text))


#: The candidate signals of one unit, in column order (:func:`columns`).
CANDIDATES = (
    "lead_in",  # announces what follows, which it does not quote
    "lead_in_quoted",  # announces what follows and quotes it
    "key_unit",  # the question's key term (its rarest word) is in the unit
    "key_context",  # ... in the unit, its passage or its headings
    "key_retrieved",  # ... in any retrieved passage or its headings
    "type_match",  # the unit holds the answer type asked for
    "type_mismatch",  # a typed question whose type the unit lacks
    "topic_sentence",  # a how/why question, and the unit defines its subject
    "api_passage",  # the unit's passage describes an API object (autodoc)
    "api_field",  # the unit is one of autodoc's fields (Parameters:, Returns:)
    "default_howto",  # asked how to, and the unit says what happens by default
    "output",  # the unit holds a program's output (a traceback, an error)
)


def _headings(item: Evidence) -> frozenset[str]:
    path = " ".join(item.record["heading_path"]) if item.record else ""
    return content_words(path)


def columns(
    question: str,
    units: Sequence[Unit],
    evidence: Sequence[Evidence],
    idf: Callable[[str], float],
) -> np.ndarray:
    """The :data:`CANDIDATES` of every unit [units, candidates]."""
    terms = {term: idf(term) for term in sorted(content_words(question))}
    key = rarest(terms)
    kind = answer_type(question)
    how_why = asks_how_or_why(question)
    howto = question_kind(question) == "howto"
    retrieved = bool(key) and any(
        key in item.words or key in _headings(item) for item in evidence
    )
    rows = []
    for unit in units:
        item = evidence[unit.evidence]
        words = content_words(unit.text)
        lead_in, quoted = announces(unit.text)
        typed = type_match(kind, unit.text, question)
        rows.append(
            [
                float(lead_in and not quoted),
                float(lead_in and quoted),
                float(bool(key) and key in words),
                float(
                    bool(key)
                    and (key in words or key in item.words or key in _headings(item))
                ),
                float(retrieved),
                float(typed == 1.0),
                float(typed == 0.0),
                float(how_why and defines_subject(unit.text)),
                float(is_api(item.text)),
                float(is_field(unit.text)),
                float(howto and says_default(unit.text)),
                float(is_output(unit.text)),
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(CANDIDATES))
