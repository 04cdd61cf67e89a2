"""A real Sphinx book of ~400 pages, for what grows with a book's size.

``big_book(pages=400)`` returns the HTML build (reused while its sources and
the package's build side are unchanged) and the questions that have a home
in it. Its pages hold real prose: the SQuAD dev articles 41-48 of
``../shared/datasets`` (whole paragraphs, in order, five to a page, so their
1,589 questions find their paragraph where it was) and the paragraphs of the
click, requests and packaging-guide corpora of ``../shared/corpora``
(docs prose: directives, code and tables left out). A book needs more text
than that: later pages reuse the docs paragraphs with their sentences in
another order (so each passage is new text, and the encoder embeds it).
Each page has about four sections; pages are chapters of one toctree.

Built with the extension's defaults (embeddings, sentence vectors); the
first build embeds ~4,000 passages (minutes on two cores), later builds take
their vectors from the embedding cache.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

from benchmarks import _corpora
from benchmarks._harness import build_code_key, cached_build, digest

SQUAD_JSON = "datasets/squad-dev-41-48/squad-dev-v1.1-articles-41-48.json"
CORPORA = ("packaging-guide", "click-docs", "requests-docs")
#: Paragraphs per page (SQuAD pages: 5) and per section.
PER_PAGE = 20
PER_SECTION = 5
SEED = 0
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_MARKUP = (
    (re.compile(r":[a-z:]+:`([^`<]*?)(?:\s*<[^>]*>)?`"), r"\1"),  # :role:`text <x>`
    (re.compile(r"`([^`<]*?)\s*<[^>]*>`_+"), r"\1"),  # `text <url>`_
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [text](url)
    (re.compile(r"`+([^`]*)`+_*"), r"\1"),
    (re.compile(r"\*\*?([^*]+)\*\*?"), r"\1"),
    (re.compile(r"\{[a-z:]+\}"), ""),
)
_SKIP_START = tuple("..:#=-*|>{<+![`~^\"'0123456789")


def _plain(text: str) -> str:
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"([\\*`|_])", r"\\\1", text)


def docs_paragraphs(root: Path) -> list[str]:
    """Prose paragraphs of the docs corpora: unindented blocks of 25+ words."""
    found: list[str] = []
    for name in CORPORA:
        for path in sorted((root / "corpora" / name).rglob("*")):
            if path.suffix not in (".rst", ".md") or not path.is_file():
                continue
            text = path.read_text("utf-8", "replace")
            for block in re.split(r"\n\s*\n", text):
                lines = block.splitlines()
                if not lines or any(not line or line[0].isspace() for line in lines):
                    continue
                if lines[0].startswith(_SKIP_START) or "::" in block:
                    continue
                plain = _plain(" ".join(lines))
                if len(plain.split()) >= 25 and plain[-1] in ".!?:)":
                    found.append(plain.rstrip(":") + ("." if plain[-1] == ":" else ""))
    return found


def _shuffled(paragraph: str, rng: random.Random) -> str:
    sentences = _SENTENCE_END.split(paragraph)
    if len(sentences) > 1:
        rng.shuffle(sentences)
    return " ".join(sentences)


def _page(title: str, paragraphs: list[str], headings: list[str]) -> str:
    lines = [title, "=" * len(title), ""]
    for i in range(0, len(paragraphs), PER_SECTION):
        heading = headings[(i // PER_SECTION) % len(headings)]
        heading = f"{heading} {i // PER_SECTION + 1}"
        lines += [heading, "-" * len(heading), ""]
        for text in paragraphs[i : i + PER_SECTION]:
            lines += [text, ""]
    return "\n".join(lines)


def write_sources(dest: Path, shared: Path, pages: int) -> list[dict[str, Any]]:
    """The book's sources under *dest*; the SQuAD questions with their page."""
    rng = random.Random(SEED)
    squad = json.loads((shared / SQUAD_JSON).read_text("utf-8"))
    docs = docs_paragraphs(shared)
    names: list[str] = []
    questions: list[dict[str, Any]] = []
    (dest / "pages").mkdir(parents=True)
    for article in squad["data"]:
        title = article["title"].replace("_", " ")
        paragraphs = article["paragraphs"]
        for start in range(0, len(paragraphs), 5):
            group = paragraphs[start : start + 5]
            name = f"pages/p{len(names):04d}"
            page_title = f"{title} ({start // 5 + 1})"
            texts = [_plain(p["context"]) for p in group]
            (dest / f"{name}.rst").write_text(
                _page(page_title, texts, [title]), "utf-8"
            )
            for p in group:
                for qa in p["qas"]:
                    questions.append(
                        {
                            "id": qa["id"],
                            "question": qa["question"],
                            "docname": name,
                            "answers": [a["text"] for a in qa["answers"]],
                        }
                    )
            names.append(name)
    round_ = 0
    pool = list(docs)
    while len(names) < pages:
        if len(pool) < PER_PAGE:
            round_ += 1
            pool = [_shuffled(p, rng) for p in docs]
            rng.shuffle(pool)
        texts, pool = pool[:PER_PAGE], pool[PER_PAGE:]
        words = [w for w in re.findall(r"[A-Za-z]{5,}", " ".join(texts))][:3]
        title = " ".join(w.capitalize() for w in words) or "Notes"
        name = f"pages/p{len(names):04d}"
        headings = ["Overview", "Details", "Usage", "Notes"]
        (dest / f"{name}.rst").write_text(
            _page(f"{title} {len(names)}", texts, headings), "utf-8"
        )
        names.append(name)
    _toctrees(dest, names)
    (dest / "conf.py").write_text(
        'project = "Big book"\nextensions = ["sphinx_ragcite"]\n'
        'language = "en"\nsmartquotes = False\n',
        "utf-8",
    )
    return questions


#: A book of more pages than this is cut into parts of this many pages, each
#: with a toctree of its own: one flat toctree of 5,000 pages puts 5,000
#: links in every page's sidebar (the build took hours writing them).
PART_PAGES = 100


def _toctrees(dest: Path, names: list[str]) -> None:
    """The root toctree: every page, or (a big book) its parts, each of
    which lists its pages, as an author of a big book would arrange it."""
    head = ["A book of many pages", "=" * 20, "", ".. toctree::", "   :maxdepth: 1", ""]
    if len(names) <= PART_PAGES * 5:
        (dest / "index.rst").write_text(
            "\n".join([*head, *(f"   {n}" for n in names), ""]), "utf-8"
        )
        return
    parts = []
    for start in range(0, len(names), PART_PAGES):
        part = f"parts/part{start // PART_PAGES:03d}"
        title = f"Part {start // PART_PAGES + 1}"
        lines = [title, "=" * len(title), "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   /{n}" for n in names[start : start + PART_PAGES]]
        (dest / part).parent.mkdir(exist_ok=True)
        (dest / f"{part}.rst").write_text("\n".join([*lines, ""]), "utf-8")
        parts.append(part)
    (dest / "index.rst").write_text(
        "\n".join([*head, *(f"   {p}" for p in parts), ""]), "utf-8"
    )


def big_book(
    pages: int = 400, rebuild: bool = False
) -> tuple[Path, list[dict[str, Any]]]:
    """The built book of *pages* pages and its SQuAD questions."""
    corpora = _corpora.corpora_dir()
    shared = corpora.parent if corpora is not None else None
    if shared is None:
        raise FileNotFoundError("../shared (datasets, corpora) not found")
    key = build_code_key() + digest(
        [Path(__file__).read_bytes(), str(pages).encode(), str(SEED).encode()]
    )
    holder: dict[str, list[dict[str, Any]]] = {}

    def prepare(work: Path) -> Path:
        book = work / "book"
        holder["q"] = write_sources(book, shared, pages)
        (work / "questions.jsonl").write_text(
            "".join(json.dumps(q) + "\n" for q in holder["q"]), "utf-8"
        )
        return book

    # a big book builds on both cores, as its author's CI would
    options = ("-j", "2") if pages > PART_PAGES * 5 else ()
    site, seconds = cached_build(
        f"big_book{pages}", key, prepare, options=options, rebuild=rebuild
    )
    if seconds is not None:
        print(f"built the {pages}-page book in {seconds:.0f} s", file=sys.stderr)
    lines = (site.parent / "src" / "questions.jsonl").read_text("utf-8").splitlines()
    return site, [json.loads(line) for line in lines]
