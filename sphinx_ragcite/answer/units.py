"""Evidence -> answer units: the pieces of a passage an answer may quote.

A unit is one sentence, or a sentence with what it cannot stand without: the
list, table or code block it introduces (it ends with a colon), or the
sentence before it when it refers back ("This ...", "It ..."). Documentation
answers "how do I ..." in option names and code, which only such units carry.
Each unit gets the signals the ranker (:mod:`sphinx_ragcite.answer.ranker`)
weighs, including whether it holds the kind of answer the question asks for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sphinx_ragcite.answer.sentences import content_words, word_count
from sphinx_ragcite.answer.spec import (
    BACK_REFERENCE,
    CAPITALISED,
    CAUSE,
    CJK_PROSE,
    CODE_LINE,
    CODE_SYMBOLS,
    CODE_TOKEN,
    DEFINITION,
    FEATURES,
    KIND_NUMBER,
    LISTWISE,
    MAX_FOLLOW_LINES,
    MAX_UNIT_WORDS,
    MIN_UNIT_WORDS,
    MONTH,
    NUMBER_WORD,
    OPENER_WORDS,
    PROSE_MARKS,
    QUESTION_KINDS,
    UNIT_FEATURES,
    YEAR,
)
from sphinx_ragcite.text import STOPWORDS, Sentence

if TYPE_CHECKING:
    from sphinx_ragcite.answer.evidence import Evidence


def question_kind(question: str) -> str:
    """What kind of answer the question asks for ("other" when unsure)."""
    text = question.strip().lower()
    for kind, pattern in QUESTION_KINDS:
        if pattern.search(text):
            return kind
    return "other"


#: Characters that are no code symbols besides letters, digits and spaces.
_PROSE = frozenset(PROSE_MARKS + CJK_PROSE)
#: Capitalised words that open a sentence without naming anyone.
_OPENERS = frozenset(STOPWORDS) | frozenset(OPENER_WORDS)


def looks_like_code(text: str) -> bool:
    symbols = sum(1 for c in text if not (c.isalnum() or c.isspace() or c in _PROSE))
    return symbols > CODE_SYMBOLS * max(len(text), 1)


def _code_blocks(sentences: tuple[Sentence, ...], blocks: list[int]) -> set[int]:
    """Blocks most of whose lines are code: their lines are never prose units
    (``"--password", prompt=True,`` inside a decorator is not an answer)."""
    lines: dict[int, list[bool]] = {}
    for sentence, block in zip(sentences, blocks, strict=True):
        text = sentence.text
        lines.setdefault(block, []).append(
            looks_like_code(text) or bool(CODE_LINE.match(text))
        )
    return {b for b, flags in lines.items() if sum(flags) * 2 > len(flags)}


def names_someone(text: str, asked: set[str]) -> bool:
    """A capitalised word the question does not contain and that is not a
    sentence's opening word: "Deacons assist elders" names someone, "The
    French press is a jug" does not (asked who invented it)."""
    for match in CAPITALISED.finditer(text):
        word = match.group(0).lower()
        if word not in asked and word not in _OPENERS:
            return True
    return False


def kind_match(kind: str, text: str, question: str = "") -> float:
    """1 if *text* holds the kind of answer asked for, 0 if not, 0.5 if unknown.

    What the question itself contains does not count: "Who invented the
    French press?" is not answered by a sentence naming the French press.
    """
    asked = set(re.findall(r"\w+", question.lower()))

    def new(pattern: re.Pattern[str]) -> bool:
        return any(m.group(0).lower() not in asked for m in pattern.finditer(text))

    if kind == "when":
        return float(new(YEAR) or new(KIND_NUMBER) or new(NUMBER_WORD) or new(MONTH))
    if kind == "quantity":
        return float(new(KIND_NUMBER) or new(NUMBER_WORD))
    if kind == "who":
        return float(names_someone(text, asked))
    if kind == "why":
        return float(bool(CAUSE.search(text)))
    if kind == "howto":
        return float(bool(CODE_TOKEN.search(text)))
    if kind == "definition":
        return float(bool(DEFINITION.search(text)))
    return 0.5


@dataclass(frozen=True)
class Unit:
    """Consecutive sentences ``first..last`` of evidence item ``evidence``."""

    evidence: int
    first: int
    last: int
    text: str
    start: int
    end: int
    #: the unit grew past its sentence (a list/code it introduces, a referent)
    extended: bool

    def sentence_indices(self) -> range:
        return range(self.first, self.last + 1)


def _block_of(text: str, offset: int) -> int:
    return text.count("\n\n", 0, offset)


def units_of(e: int, item: Evidence) -> list[Unit]:
    """Every unit of one evidence item, in text order."""
    sentences = item.sentences
    text = item.text
    blocks = [_block_of(text, s.start) for s in sentences]
    in_code = _code_blocks(sentences, blocks)
    out: list[Unit] = []
    for i, sentence in enumerate(sentences):
        words = word_count(sentence.text)
        code = looks_like_code(sentence.text) or blocks[i] in in_code
        if sentence.text.endswith(("?", "？")) or (code and not _opens(i, blocks)):
            continue  # questions are not answers; code rides with its start
        first, last = i, i
        if i > 0 and BACK_REFERENCE.match(sentence.text) and blocks[i - 1] == blocks[i]:
            first = i - 1
        introduces = sentence.text.rstrip().endswith((":", "："))
        if introduces or code:
            # an introduction takes the block after it; a code block, itself;
            # either goes on into code blocks that follow (a blank line in
            # a listing splits it: "import codecs" alone answers nothing)
            taken = blocks[i] + 1 if introduces else blocks[i]
            total = words
            j = i + 1
            while (
                j < len(sentences)
                and j - i <= MAX_FOLLOW_LINES
                and (
                    blocks[j] <= taken
                    or (
                        blocks[j] == taken + 1
                        and blocks[j] in in_code
                        and taken in in_code
                    )
                )
                and total < MAX_UNIT_WORDS
            ):
                taken = max(taken, blocks[j])
                total += word_count(sentences[j].text)
                last = j
                j += 1
        if first == last and words < MIN_UNIT_WORDS and not code:
            continue
        if sentences[last].text.rstrip().endswith(("?", "？")):
            continue  # "For more details: Is setup.py deprecated?" asks, not answers
        out.append(_unit(e, item, sentences, first, last, first != i or last != i))
    return out


def _opens(i: int, blocks: list[int]) -> bool:
    """The sentence starts its block (a code block nobody introduces)."""
    return i == 0 or blocks[i - 1] != blocks[i]


def _unit(
    e: int,
    item: Evidence,
    sentences: tuple[Sentence, ...],
    first: int,
    last: int,
    extended: bool,
) -> Unit:
    start, end = sentences[first].start, sentences[last].end
    if first == last:
        body = sentences[first].text
    elif "\n\n" in item.text[start:end]:  # a listing: its lines as written
        body = "\n".join(
            line.rstrip() for line in item.text[start:end].split("\n") if line.strip()
        )
    else:  # keep a code block's lines, a paragraph's single spaces
        body = "\n".join(" ".join(s.text.split()) for s in sentences[first : last + 1])
    return Unit(e, first, last, body, start, end, extended)


#: What the answerability gate and its unit model see: a unit's own signals.
#: With the listwise ones as well, the gate fitted each training set's
#: abstentions and transferred worse to a set held out (more false
#: abstention); the listwise signals only choose among units.
GATE_FEATURES = UNIT_FEATURES
_LISTWISE_COLUMNS = [UNIT_FEATURES.index(name) for name in LISTWISE]


def listwise(rows: np.ndarray) -> np.ndarray:
    """The units' own signals [units, UNIT_FEATURES] -> all of FEATURES."""
    if not len(rows):
        return np.zeros((0, len(FEATURES)))
    own = rows[:, _LISTWISE_COLUMNS]
    below = own.max(axis=0) - own
    place = np.argsort(np.argsort(-rows[:, 0], kind="stable"), kind="stable")
    return np.hstack([rows, below, (1.0 / (1.0 + place))[:, None]])


def features(
    unit: Unit,
    item: Evidence,
    sims: np.ndarray,
    asked: dict[str, float],
    kind: str,
    bm25_share: float,
    question: str = "",
) -> list[float]:
    """The unit's signals; *sims* holds the question's cosine per sentence,
    *asked* the question's content words with their idf."""
    similarity = float(max(sims[i] for i in unit.sentence_indices()))
    words = content_words(unit.text)
    path = " ".join(item.record["heading_path"]) if item.record else ""
    headings = content_words(path)
    total = sum(asked.values()) or 1.0

    def share(found: frozenset[str]) -> float:
        return sum(w for t, w in asked.items() if t in found) / total

    count = len(asked) or 1
    overlap = sum(1 for t in asked if t in words) / count if asked else 0.0
    heading_overlap = (
        sum(1 for t in asked if t in words or t in headings) / count if asked else 0.0
    )
    lines = unit.text.split("\n")
    match = kind_match(kind, unit.text, question)
    return [
        similarity,
        overlap,
        heading_overlap,
        share(words),
        share(words | headings),
        share(item.words | headings),
        float(sims.max()) - similarity,
        float(item.relevance),
        bm25_share,
        1.0 / max(item.rank, 1),
        float(match == 1.0),
        float(match == 0.0),
        float(unit.extended),
        sum(looks_like_code(line) for line in lines) / len(lines),
        math.log1p(word_count(unit.text)),
        float(unit.first == 0),
        similarity * overlap,
    ]
