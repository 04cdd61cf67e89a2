"""The dev sets: each set's questions with their gold, and its built book.

One registry that ``answer_quality.py``, ``near_topic.py``, the tests and
the ranker's training all load from (``LOADERS[name](rebuild)``), so none
of them imports another to find a set::

    from benchmarks.devsets import LOADERS
    devset = LOADERS["click"](False)   # DevSet: name, kind, site, items
    devset.items[0]                    # Item: question, gold_ids, answers

A set's book is built with the extension (or reused while nothing it
depends on changed: ``_harness.cached_build``); ``norm`` is how a gold
answer string is matched against passage text.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchmarks import _corpora
from benchmarks._harness import (
    BENCHMARKS,
    EXAMPLE_QA,
    RESULTS,
    build_code_key,
    cached_build,
    corpus_site,
    digest,
    example_build,
    read_jsonl,
    read_passages,
    site_root,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

QA_DIR = BENCHMARKS / "qa"
#: Fetched sdists, unpacked (where ``answer_quality.py`` first kept them).
SDISTS = RESULTS / ".answer_quality" / "sdists"
SETS = (
    *("example_book", "click", "packaging_guide", "requests", "squad"),
    *("flask", "attrs", "jinja", "xuance_zh", "emcee", "rqalpha_zh"),
    "network_ja",
)
#: Which target class each set belongs to (issue 13: prose vs technical docs).
KIND = {
    "example_book": "prose",
    "click": "technical",
    "packaging_guide": "technical",
    "requests": "technical",
    "squad": "prose",
    "flask": "technical",
    "attrs": "technical",
    "jinja": "technical",
    "xuance_zh": "technical",
    "emcee": "technical",
    "rqalpha_zh": "technical",
    "network_ja": "technical",
}
#: Sets built from a corpus of ``_corpora.py``: set -> (corpus, questions).
CORPUS_SETS = {
    "click": ("click-docs", BENCHMARKS / "click_qa.jsonl"),
    "packaging_guide": ("packaging-guide", QA_DIR / "packaging_guide.jsonl"),
    "requests": ("requests-docs", QA_DIR / "requests.jsonl"),
    # Chinese, built with -D language=zh_CN; held out from training (issue 29)
    "xuance_zh": ("xuance-docs-zh", QA_DIR / "xuance_zh.jsonl"),
    # Japanese, its conf.py sets language = 'ja'; trained on (issue 45)
    "network_ja": ("network-doc-ja", QA_DIR / "network_ja.jsonl"),
}
#: Documentation that ships in a project's sdist on PyPI: set -> (the pinned
#: sdist, its SHA-256, the modules its docs/conf.py needs).
SDIST_CORPORA: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "flask": (
        "flask==3.1.3",
        "0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb",
        ("flask", "pallets_sphinx_themes", "sphinx_tabs", "sphinxcontrib.log_cabinet"),
    ),
    "jinja": (
        "jinja2==3.1.6",
        "0137fb05990d35f1275a587e9aee6d56da821fc83491a0fb838183be43f66d6d",
        ("jinja2", "pallets_sphinx_themes", "sphinxcontrib.log_cabinet"),
    ),
    "attrs": (
        "attrs==26.1.0",
        "d03ceb89cb322a8fd706d4fb91940737b6642aa36998fe130a9bc96c985eff32",
        ("attr", "myst_parser", "furo", "notfound", "sphinxcontrib.towncrier"),
    ),
    # notebook-heavy (issue 36): six tutorials are .ipynb pages with stored
    # outputs, built by myst-nb with its own nb_execution_mode = "off"
    "emcee": (
        "emcee==3.1.6",
        "11af4daf6ab8f9ca69681e3c29054665db7bbd87fd4eb8e437d2c3a1248c637d",
        ("emcee", "myst_nb", "sphinx_book_theme", "IPython", "pkg_resources"),
    ),
    # Chinese, trained on (issue 36); the sdist's license is Apache-2.0 for
    # non-commercial use (benchmarks/qa/README.md)
    "rqalpha_zh": (
        "rqalpha==6.4.2",
        "deb2fda12e36d3ea04ad0abea1b2306857e897515d496f67c6d18e760da064b9",
        ("myst_nb", "sphinx_autodoc_typehints", "jieba"),
    ),
}
#: An sdist's Sphinx source folder, where it is not ``docs``.
SDIST_SOURCE = {"rqalpha_zh": "docs/source"}
#: Lines appended to an sdist's ``conf.py`` (after ``sphinx_ragcite``): in
#: ``conf.py``, not ``-D``, so that ``near_topic.py``'s folds, which copy the
#: prepared sources, build the same way.
SDIST_CONF = {
    # Its pages are Chinese but its conf.py says "en": built as zh_CN, so the
    # index is cut into words with jieba as xuance_zh's is. nbsphinx needs
    # pandoc and the rtd theme pins an older Sphinx: myst-nb reads its one
    # notebook as stored, and Sphinx's default theme is used.
    "rqalpha_zh": (
        'language = "zh_CN"\n'
        "extensions = [\n"
        '    {"nbsphinx": "myst_nb"}.get(e, e)\n'
        "    for e in extensions\n"
        '    if e != "sphinx_rtd_theme"\n'
        "]\n"
        'nb_execution_mode = "off"\n'
    ),
}
SQUAD_JSON = "squad-dev-41-48/squad-dev-v1.1-articles-41-48.json"
SQUAD_TOOL = "squad_to_sphinx.py"
_SPACE = re.compile(r"\s+")


#: Typography that differs between a gold string and the rendered text
#: (curly quotes, inline-code backticks) is not a different answer.
_TYPOGRAPHY = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "`": None}
)


def norm(text: str) -> str:
    """Lower case, straight quotes, no backticks, runs of white space as one
    space: how gold strings match."""
    return _SPACE.sub(" ", text.translate(_TYPOGRAPHY)).strip().lower()


@dataclass(frozen=True)
class Item:
    """One question with its gold: passage IDs and answer strings (any counts)."""

    id: str
    question: str
    gold_ids: frozenset[str]
    answers: tuple[str, ...]

    @property
    def answerable(self) -> bool:
        return bool(self.answers or self.gold_ids)


@dataclass
class DevSet:
    name: str
    kind: str
    site: Path
    items: list[Item]
    build_seconds: float | None
    notes: list[str] = field(default_factory=list)


def qa_items(path: Path, prefix: str) -> list[Item]:
    """A QA file in ``ragcite eval`` format; ids from ``id`` or the line number.

    ``alt_answers`` (other strings of a gold passage that answer as well) count
    like ``answer``.
    """
    items = []
    for number, record in enumerate(read_jsonl(path), start=1):
        answer = record.get("answer")
        answers = [answer] if answer else []
        answers += record.get("alt_answers") or []
        items.append(
            Item(
                str(record.get("id") or f"{prefix}:{number}"),
                record["question"],
                frozenset(record.get("passage_ids") or ()),
                tuple(answers),
            )
        )
    return items


def shared_dir() -> Path | None:
    corpora = _corpora.corpora_dir()
    return corpora.parent if corpora is not None else None


def load_example_book(rebuild: bool) -> DevSet:
    site, seconds = example_build(rebuild=rebuild)
    items = qa_items(EXAMPLE_QA, "example_book")
    return DevSet("example_book", KIND["example_book"], site, items, seconds)


def load_corpus(name: str, rebuild: bool) -> DevSet:
    """A set on a corpus of ../shared/corpora, built as its README says."""
    corpus, qa = CORPUS_SETS[name]
    site, seconds = corpus_site(corpus, rebuild=rebuild)
    return DevSet(name, KIND[name], site, qa_items(qa, name), seconds)


def sdist_tree(requirement: str, sha256: str, source: str = "docs") -> Path:
    """The unpacked sdist, fetched once by pip from its configured index and
    checked against *sha256* (a corpus that changes under its questions
    would re-gold them silently); *source* holds its ``conf.py``.

    Only the project itself is refused as a wheel: ``--no-binary :all:``
    made pip build the sdist's build backend from source too (hatchling and
    its dependencies for attrs), 53 CPU seconds instead of 5 with an empty
    pip cache, as on CI (issue 34)."""
    name, version = requirement.split("==")
    root = SDISTS
    unpacked = root / f"{name}-{version}"
    if (unpacked / source / "conf.py").is_file():
        return unpacked
    root.mkdir(parents=True, exist_ok=True)
    archive = root / f"{name}-{version}.tar.gz"
    if not archive.is_file():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q"]
        cmd += ["--no-binary", name, "-d", str(root), requirement]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not archive.is_file():
            raise FileNotFoundError(f"pip could not fetch the {requirement} sdist")
    found = hashlib.sha256(archive.read_bytes()).hexdigest()
    if found != sha256:
        raise RuntimeError(f"{archive} has SHA-256 {found}, expected {sha256}")
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return unpacked


def load_sdist_corpus(name: str, rebuild: bool) -> DevSet:
    """A project's documentation from its PyPI sdist, built with ragcite."""
    requirement, sha256, deps = SDIST_CORPORA[name]
    missing = [m for m in deps if importlib.util.find_spec(m) is None]
    if missing:
        raise FileNotFoundError(f'{name} needs {missing}: pip install -e ".[corpora]"')
    source = SDIST_SOURCE.get(name, "docs")
    tree = sdist_tree(requirement, sha256, source)
    extra = SDIST_CONF.get(name, "")
    key = build_code_key() + sha256
    if extra:  # the other sets' keys (and cached builds) stay as they were
        key += digest([extra.encode()])

    def prepare(work: Path) -> Path:
        docs = work / tree.name / source
        _corpora.copy_tree(tree, work / tree.name)
        _corpora.edit_conf(docs, with_ragcite=True)
        if extra:
            with (docs / "conf.py").open("a", encoding="utf-8") as conf:
                conf.write(f"# added by benchmarks/devsets.py\n{extra}")
        return docs

    site, seconds = cached_build(name, key, prepare, rebuild=rebuild)
    return DevSet(
        name, KIND[name], site, qa_items(QA_DIR / f"{name}.jsonl", name), seconds
    )


def squad_inputs() -> tuple[Path, Path]:
    shared = shared_dir()
    if shared is None:
        raise FileNotFoundError("shared/ (datasets, tools) not found")
    data = shared / "datasets" / SQUAD_JSON
    tool = shared / "tools" / SQUAD_TOOL
    if not data.is_file() or not tool.is_file():
        raise FileNotFoundError(f"{data} or {tool} missing")
    return data, tool


def load_squad(rebuild: bool) -> DevSet:
    data, tool = squad_inputs()
    key = build_code_key() + digest([data.read_bytes(), tool.read_bytes()])

    def prepare(work: Path) -> Path:
        book = work / "book"
        cmd = [sys.executable, str(tool), str(data), "--book-dir", str(book)]
        cmd += ["--questions", str(work / "questions.jsonl")]
        cmd += ["--passages", str(work / "paragraphs.jsonl")]
        cmd += ["--source-name", "SQuAD dev-v1.1 articles 41-48"]
        subprocess.run(cmd, check=True, capture_output=True)
        return book

    options = ["-D", "extensions=sphinx_ragcite"]
    site, seconds = cached_build(
        "squad", key, prepare, options=options, rebuild=rebuild
    )
    work = site_root("squad") / "src"
    items, notes = squad_items(site, work)
    return DevSet("squad", KIND["squad"], site, items, seconds, notes)


def squad_items(site: Path, work: Path) -> tuple[list[Item], list[str]]:
    """The fixed sample of SQuAD questions plus the hand-written unanswerable ones.

    Gold passages are the built passages that overlap the gold paragraph: the
    paragraph's text lies in the passage's or the passage's in the paragraph's.
    """
    sample = json.loads((QA_DIR / "squad_sample.json").read_text("utf-8"))
    wanted = set(sample["ids"])
    paragraphs = {
        p["paragraph_label"]: norm(p["text"])
        for p in read_jsonl(work / "paragraphs.jsonl")
    }
    passages = [(p["passage_id"], norm(p["text"])) for p in read_passages(site)]
    overlap: dict[str, frozenset[str]] = {}
    for label, text in paragraphs.items():
        overlap[label] = frozenset(
            pid for pid, ptext in passages if text in ptext or ptext in text
        )
    items, unmatched = [], 0
    for q in read_jsonl(work / "questions.jsonl"):
        if q["id"] not in wanted:
            continue
        gold = overlap.get(q["paragraph_label"], frozenset())
        unmatched += not gold
        answers = tuple(dict.fromkeys(a for a in q["answers"] if a.strip()))
        items.append(Item(q["id"], q["question"], gold, answers))
    notes = []
    if len(items) != len(wanted):
        notes.append(f"{len(wanted) - len(items)} sampled ids not in the data")
    if unmatched:
        notes.append(f"{unmatched} questions whose gold paragraph matched no passage")
    items += qa_items(QA_DIR / "squad_unanswerable.jsonl", "squad")
    return items, notes


LOADERS: dict[str, Callable[[bool], DevSet]] = {
    "example_book": load_example_book,
    "click": lambda rebuild: load_corpus("click", rebuild),
    "packaging_guide": lambda rebuild: load_corpus("packaging_guide", rebuild),
    "requests": lambda rebuild: load_corpus("requests", rebuild),
    "squad": load_squad,
    "flask": lambda rebuild: load_sdist_corpus("flask", rebuild),
    "attrs": lambda rebuild: load_sdist_corpus("attrs", rebuild),
    "jinja": lambda rebuild: load_sdist_corpus("jinja", rebuild),
    "xuance_zh": lambda rebuild: load_corpus("xuance_zh", rebuild),
    "emcee": lambda rebuild: load_sdist_corpus("emcee", rebuild),
    "rqalpha_zh": lambda rebuild: load_sdist_corpus("rqalpha_zh", rebuild),
    "network_ja": lambda rebuild: load_corpus("network_ja", rebuild),
}
