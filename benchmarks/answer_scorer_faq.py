"""Training data for the answer-sentence cross-encoder, from the Python FAQs.

The SQuAD groups (``answer_scorer_data.py``) teach the cross-encoder what an
answering sentence looks like in encyclopaedia prose; the books it serves are
technical documentation, which answers "how do I ..." with a sentence and the
code it introduces. The Python FAQs are written exactly so: a question heading
and its answer. This turns them into training groups in the same format
(``question``, ``positives``, ``negatives``, ``source``, ``id``).

- Source: the HTML of the Debian package ``python3.11-doc`` (pulled in by
  ``python3-doc``; installed offline under ``/usr/share/doc/python3.11/html``),
  ``faq/*.html`` and the two ``howto/`` pages with question headings. An entry
  is a section whose heading ends with "?"; its answer is the section's own
  content (not its sub-sections), turned into text the way the project sees
  passages: blocks separated by blank lines, a paragraph on one line, list
  items, table rows and code lines on their own lines.
- Units: the answer's sentences (``split_sentences``) grouped as the engine
  groups them (``units_of``): a sentence, or a sentence ending with ":" with
  the lines it introduces; code lines on their own are never units.
- Positives (a heuristic: an FAQ answer starts with its answer): the first
  prose sentence of at least 4 words; a bare lead-in ("Yes.", "No.",
  "There are several advantages.") is joined with the sentence after it. If
  that sentence ends with ":", the unit with the code or list it introduces
  (up to 6 lines) is a second positive. An entry without such a sentence is
  skipped.
- Negatives (at most 15): units of the same answer from its 3rd sentence on
  (hard negatives, at most 4), then the units of other entries of the same
  split that BM25 (the project's tokenizer) ranks highest for the question,
  at most 3 from one entry. Units under 4 words are skipped, and so is any
  that contains a positive's text or is contained in it.
- Split by page, so valid is a topic the model has not read: the set of
  pages whose entry count is closest to 15% of all. Questions are unique
  (a repeated question keeps its first entry). Nothing is random.

Measured: see ``benchmarks/qa/README.md`` (Answer scorer training data).

    python benchmarks/answer_scorer_faq.py    # results/.answer_scorer/data/
    python benchmarks/answer_scorer_faq.py --out DIR --show 5
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sphinx_ragcite.answer.evidence import Evidence  # noqa: E402
from sphinx_ragcite.answer.units import (  # noqa: E402
    _CODE_LINE,
    MAX_FOLLOW_LINES,
    _code_blocks,
    looks_like_code,
    units_of,
)
from sphinx_ragcite.text import (
    split_sentences,
    tokenize,
)

sys.path.insert(0, str(HERE))
from answer_scorer_data import show_groups  # noqa: E402

HTML = Path("/usr/share/doc/python3.11/html")
PACKAGE = "python3.11-doc"
PAGES = (
    "faq/general",
    "faq/programming",
    "faq/design",
    "faq/library",
    "faq/extending",
    "faq/windows",
    "faq/gui",
    "faq/installed",
    "howto/curses",
    "howto/enum",
)
OUT = HERE / "results" / ".answer_scorer" / "data"
NEGATIVES = 15
IN_ANSWER = 4
#: Hard negatives start at this sentence of the answer (0-based: the 3rd).
FAR_FROM_START = 2
PER_OTHER_ENTRY = 3
MAX_POSITIVES = 2
MIN_WORDS = 4
VALID_FRACTION = 0.15

_SPACES = re.compile(r"\s+")
#: A first sentence that only announces the answer.
_LEAD_IN = re.compile(
    r"^(there (are|is) (several|a few|many|various|two|three|a number of)\b"
    r"|it depends\b)",
    re.IGNORECASE,
)
#: A first sentence that sets the question up or puts it off instead of
#: answering it (read off this source's answers: no rule finds them all).
_NOT_AN_ANSWER = re.compile(
    r"^(suppose|assume|if you wrote|you probably tried|users are often surprised"
    r"|this is not necessarily|that.s a tough one|i would like to"
    r"|see (the next question|the \w+ howto)\.$)",
    re.IGNORECASE,
)
_BLOCKS = {"p", "pre", "ul", "ol", "dl", "table", "blockquote", "div", "section"}
_BLOCKS |= {"li", "dt", "dd", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "figure"}


@dataclass
class Entry:
    page: str
    anchor: str
    question: str
    text: str
    positives: list[str] = field(default_factory=list)
    units: list[tuple[int, str]] = field(default_factory=list)  # (sentence, text)

    @property
    def source(self) -> str:
        return f"python-faq/{self.page}#{self.anchor}"


def _inline(node: Tag | NavigableString) -> str:
    return _SPACES.sub(" ", node.get_text()).strip()


def _is_code(node: Tag) -> bool:
    return node.name == "pre" or "highlight" in (node.get("class") or [])


def _lines(node: Tag) -> list[str]:
    """Lines of one block: code keeps its lines, anything else one per block."""
    if _is_code(node):
        lines = [line.rstrip() for line in node.get_text().split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        return lines
    if node.name == "tr":
        cells = [_inline(c) for c in node.find_all(["td", "th"])]
        return [" | ".join(cells)]
    out: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        text = _SPACES.sub(" ", "".join(inline)).strip()
        if text:
            out.append(text)
        inline.clear()

    for child in node.children:
        if isinstance(child, Tag) and (child.name in _BLOCKS or _is_code(child)):
            flush()
            out += _lines(child)
        elif isinstance(child, Tag):
            inline.append(child.get_text())
        elif isinstance(child, NavigableString):
            inline.append(str(child))
    flush()
    return out


def answer_text(section: Tag) -> str:
    """The section's own content (not its sub-sections) as passage text."""
    blocks: list[str] = []

    def add(node: Tag) -> None:
        if node.name in ("blockquote", "div") and not _is_code(node):
            classes = list(node.get("class") or [])
            if "admonition" not in classes and any(
                isinstance(c, Tag) for c in node.children
            ):
                for child in node.children:
                    if isinstance(child, Tag):
                        add(child)
                return
        lines = _lines(node)
        if lines:
            blocks.append("\n".join(lines))

    heading = True
    for child in section.children:
        if not isinstance(child, Tag):
            continue
        if heading and re.fullmatch(r"h[1-6]", child.name):
            heading = False
            continue
        if child.name == "section":
            continue
        add(child)
    return re.sub(r"\n{3,}", "\n\n", "\n\n".join(blocks)).strip()


def load_page(html: Path, page: str) -> list[Entry]:
    soup = BeautifulSoup(
        (html / f"{page}.html").read_text(encoding="utf-8"), "html.parser"
    )
    main = soup.find("div", attrs={"role": "main"})
    assert isinstance(main, Tag), f"{page}: no main content"
    for link in main.find_all("a", class_="headerlink"):
        link.decompose()
    entries = []
    for h in main.find_all(re.compile(r"^h[1-6]$")):
        question = _inline(h).replace("¶", "").strip()
        section = h.parent
        if not question.endswith("?") or not isinstance(section, Tag):
            continue
        text = answer_text(section)
        if text:
            entries.append(Entry(page, str(section.get("id", "")), question, text))
    return entries


def _words(text: str) -> int:
    return len(text.split())


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def label(entry: Entry) -> str | None:
    """Fill the entry's positives and units; the reason it is skipped, or None."""
    sentences = tuple(split_sentences(entry.text))
    evidence = Evidence(
        key=entry.source,
        record=None,
        text=entry.text,
        sentences=sentences,
        vectors=np.zeros((len(sentences), 1), dtype=np.float32),
        words=frozenset(),
        numbers=frozenset(),
        relevance=0.0,
        rank=0,
    )
    units = units_of(0, evidence)
    blocks = [entry.text.count("\n\n", 0, s.start) for s in sentences]
    code_blocks = _code_blocks(sentences, blocks)

    def is_prose(i: int) -> bool:
        text = sentences[i].text
        return not (
            looks_like_code(text)
            or _CODE_LINE.match(text)
            or text.startswith(("#", '"', "'"))  # a code comment or string
            or blocks[i] in code_blocks
        )

    # a unit opening with code ("def up(self):" and its body) is kept out:
    # as a negative it is too easy, and the engine rarely ranks one
    entry.units = [
        (u.first, u.text)
        for u in units
        if _words(u.text) >= MIN_WORDS and is_prose(u.first)
    ]

    if not sentences or not is_prose(0):
        return "answer opens with code"
    text = sentences[0].text
    joined = 0
    if (_words(text) < MIN_WORDS or _LEAD_IN.match(text)) and (
        len(sentences) > 1 and is_prose(1)
    ):
        text = f"{text} {sentences[1].text}"
        joined = 1
    if _words(text) < MIN_WORDS:
        return "first sentence too short"
    if _NOT_AN_ANSWER.match(text):
        return "first sentence is no answer"
    entry.positives = [text]
    covered = joined  # the last sentence a positive holds
    if text.endswith(":"):
        unit = next(
            (u for u in units if u.first <= joined < u.last and u.extended), None
        )
        if unit is not None:
            after = entry.text[sentences[joined].end : sentences[unit.last].end]
            lines = [line.rstrip() for line in after.split("\n") if line.strip()]
            if lines:
                entry.positives.append("\n".join([text, *lines[:MAX_FOLLOW_LINES]]))
                covered = unit.last
    entry.positives = entry.positives[:MAX_POSITIVES]
    # units that overlap the positive sentences are neither positive nor negative
    entry.units = [(i, t) for i, t in entry.units if i > covered]
    return None


def _clean(unit: str, positives: list[str]) -> bool:
    n = _norm(unit)
    return _words(unit) >= MIN_WORDS and not any(
        _norm(p) in n or n in _norm(p) for p in positives
    )


def groups(
    entries: list[Entry], stats: dict[str, int], in_answer: int = IN_ANSWER
) -> list[dict[str, Any]]:
    """Training groups for the entries of one split."""
    pool = [(e, text) for e, entry in enumerate(entries) for _, text in entry.units]
    index = bm25s.BM25()
    index.index([tokenize(t) or ["_"] for _, t in pool], show_progress=False)
    out = []
    for e, entry in enumerate(entries):
        negs: list[str] = []
        for i, t in entry.units:
            if len(negs) >= in_answer:
                break
            fresh = not any(t in n or n in t for n in negs)
            if i >= FAR_FROM_START and fresh and _clean(t, entry.positives):
                negs.append(t)
        n_in = len(negs)
        scores = np.asarray(index.get_scores(tokenize(entry.question) or ["_"]))
        taken: dict[int, int] = defaultdict(int)
        for j in np.argsort(-scores, kind="stable"):
            if len(negs) >= NEGATIVES:
                break
            other, text = pool[int(j)]
            if other == e or taken[other] >= PER_OTHER_ENTRY:
                continue
            if any(text in n or n in text for n in negs):
                continue  # overlapping units ("This ..." with its sentence before)
            if not _clean(text, entry.positives):
                stats["dropped_contains_positive"] += 1
                continue
            taken[other] += 1
            negs.append(text)
        stats["in_answer"] += n_in
        stats["other_entries"] += len(negs) - n_in
        stats["with_code_positive"] += len(entry.positives) > 1
        out.append(
            {
                "question": entry.question,
                "positives": entry.positives,
                "negatives": negs,
                "source": entry.source,
                "id": f"pyfaq-{entry.page.replace('/', '-')}-{entry.anchor}",
            }
        )
    return out


def choose_valid(counts: dict[str, int]) -> set[str]:
    """The pages whose entry count is closest to VALID_FRACTION of all."""
    target = VALID_FRACTION * sum(counts.values())
    pages = sorted(counts)
    best: tuple[float, int, tuple[str, ...]] | None = None
    for n in range(1, len(pages)):
        for combo in itertools.combinations(pages, n):
            key = (abs(sum(counts[p] for p in combo) - target), n, combo)
            if best is None or key < best:
                best = key
    assert best is not None
    return set(best[2])


def summary(name: str, rows: list[dict[str, Any]]) -> str:
    n = len(rows)
    pos = sum(len(r["positives"]) for r in rows) / max(n, 1)
    neg = sum(len(r["negatives"]) for r in rows) / max(n, 1)
    return (
        f"{name}: {n} questions, positives {pos:.2f}, negatives {neg:.2f} per question"
    )


def package_version() -> str:
    try:
        return subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", PACKAGE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--html", type=Path, default=HTML, help="the Python docs' HTML folder"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=OUT,
        help="folder for faq_train.jsonl and faq_valid.jsonl",
    )
    parser.add_argument(
        "--in-answer",
        type=int,
        default=IN_ANSWER,
        help="hard negatives from the question's own answer (0: none; later "
        "sentences of an answer often answer too)",
    )
    parser.add_argument(
        "--show", type=int, default=5, help="print this many groups to spot-check"
    )
    args = parser.parse_args(argv)
    if not (args.html / "faq").is_dir():
        parser.error(f"{args.html}/faq not found: apt-get install python3-doc")

    print(f"source: {PACKAGE} {package_version()} ({args.html})")
    stats: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    by_page: dict[str, list[Entry]] = {}
    for page in PAGES:
        found = load_page(args.html, page)
        kept = []
        for entry in found:
            key = _norm(entry.question)
            if key in seen:
                stats["duplicate question"] += 1
                print(f"  duplicate question skipped: {entry.source}")
                continue
            reason = label(entry)
            if reason:
                stats[reason] += 1
                continue
            seen.add(key)
            kept.append(entry)
        by_page[page] = kept
        print(f"  {page}: {len(found)} entries, {len(kept)} kept")
    valid_pages = choose_valid({p: len(e) for p, e in by_page.items()})
    splits = {
        "faq_train": [e for p in PAGES if p not in valid_pages for e in by_page[p]],
        "faq_valid": [e for p in PAGES if p in valid_pages for e in by_page[p]],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    all_rows: list[dict[str, Any]] = []
    for name, entries in splits.items():
        rows = groups(entries, stats, args.in_answer)
        all_rows += rows
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        note = (
            f" (pages {', '.join(sorted(valid_pages))})" if name == "faq_valid" else ""
        )
        print(summary(name, rows) + note)
    print(summary("all", all_rows))
    questions = [_norm(r["question"]) for r in all_rows]
    assert len(set(questions)) == len(questions), "duplicate questions"
    print(
        "skipped: "
        + ", ".join(
            f"{k} {v}"
            for k, v in sorted(stats.items())
            if k
            not in (
                "in_answer",
                "other_entries",
                "dropped_contains_positive",
                "with_code_positive",
            )
        )
    )
    print(
        f"negatives from the same answer {stats['in_answer']}, other entries "
        f"{stats['other_entries']}; dropped as containing a positive "
        f"{stats['dropped_contains_positive']}; questions with a code/list "
        f"positive {stats['with_code_positive']}"
    )
    show_groups(all_rows, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
