"""Parity case files: the Python engine's answers the browser engine must match.

For every question of a dev set, the case file holds the question, the
Python encoder's vector of it (float32, base64) and what the Python engine
answered (``AnswerEngine``, book mode, extractive: what ``POST /api/ask``
returns): the outcome, the cited passage IDs in order, the shown passages,
the confidence, the answer text and the retrieved IDs. Every sixth question
is asked again about a selection (selection mode), with every text that
answer embedded and its vector. ``js/test/parity.test.js``
runs the JS engine (``js/engine.js``) on the same site with the same vectors
and compares (``tests/test_browser_parity.py`` runs both).

    # one site and one QA file (ragcite eval format)
    python tools/write_parity_cases.py --site BUILD_DIR --qa QA.jsonl \\
        --set NAME --out CASES.json
    # dev sets of benchmarks/devsets.py, built (or reused) as it builds them
    python tools/write_parity_cases.py --sets example_book click xuance_zh \\
        --out-dir DIR

``--sets`` names dev sets of ``benchmarks/devsets.py`` (the example book, the
corpora of ../shared/corpora, the SQuAD sample, the sdists); a set whose inputs are
missing is reported and skipped (exit code 2 if none was written).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

REPO = Path(__file__).resolve().parents[1]
FORMAT = 1
#: The files whose bytes decide an answer; a case file names their digests
#: so that a reader can tell whether it was written from the same build.
DECISIVE = (
    "passages",
    "static",
    "embeddings",
    "embedding_scales",
    "sentence_embeddings",
    "sentence_offsets",
    "sentence_scales",
)


def site_digest(site: Path) -> str:
    """One digest of a build's answer-deciding files and the ranker."""
    from sphinx_ragcite.formats.manifest import index_dir, read_manifest

    manifest = read_manifest(index_dir(site))
    parts = [f"{role}:{manifest.sha256.get(role, '-')}" for role in DECISIVE]
    # the ranker both engines read: the one the site ships (its encoder's)
    shipped = manifest.sha256.get("ranker")
    if shipped is None:
        ranker = (REPO / "sphinx_ragcite" / "answer" / "ranker.json").read_bytes()
        shipped = hashlib.sha256(ranker).hexdigest()
    parts.append("ranker:" + shipped)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def vector_text(vector: np.ndarray) -> str:
    """A float32 vector as base64 of its little-endian bytes (exact)."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


#: Every SELECTION_EVERY-th question is also asked about a selection (selection
#: mode): the opening sentences of the passage the book answer retrieved first,
#: as a reader selects a paragraph's start; every other one of them asks
#: "What does this mean?" instead of the question.
SELECTION_EVERY = 6
SELECTION_SENTENCES = 2
ABOUT_THIS = "What does this mean?"


class Recording:
    """An embedder that keeps every text it embedded with its vector: selection
    mode embeds more than the question (the selection, its sentences, the
    quotes), and the JS engine is given exactly these vectors."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        #: kind ("passage", "query") -> text -> vector: e5 embeds a text
        #: apart by its prefix
        self.seen: dict[str, dict[str, np.ndarray]] = {"passage": {}, "query": {}}

    def embed(self, texts: list[str], *, kind: str = "passage") -> np.ndarray:
        vectors = self.embedder.embed(texts, kind=kind)
        self.seen[kind].update(zip(texts, vectors, strict=True))
        return vectors  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.embedder, name)


def selection_for(loaded: Any, retrieved: list[str]) -> str | None:
    """The first sentences of the first retrieved passage, as the reader
    would select them on its page (one stretch of its text)."""
    from sphinx_ragcite.text import split_sentences

    record = loaded.passage(retrieved[0]) if retrieved else None
    if record is None:
        return None
    found = split_sentences(record["text"])[:SELECTION_SENTENCES]
    return record["text"][found[0].start : found[-1].end] if found else None


def case(qid: str, question: str, vector: np.ndarray, answer: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "vector": vector_text(vector),
        "outcome": answer.outcome,
        "cited": [c.passage_id for c in answer.citations],
        "shown": [p.passage_id for p in answer.passages],
        "confidence": answer.confidence,
        "answer": answer.answer,
        "retrieved": answer.metadata["retrieved"],
        "answerability": answer.metadata.get("answerability"),
    }


def cases_for(
    name: str, site: Path, questions: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """The case file of dev set *name*: *questions* are (id, question) pairs,
    every :data:`SELECTION_EVERY`-th also asked about a selection."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.retrieval.site import Site

    loaded = Site.load(site)
    recording = Recording(loaded.embedder)
    loaded.__dict__["embedder"] = recording  # the engine's, and its caches'
    engine = AnswerEngine(loaded)
    cases = []
    started = time.perf_counter()
    for number, (qid, question) in enumerate(questions):
        vector = recording.embed([question.strip()], kind="query")[0]
        answer = engine.answer(question)
        cases.append(case(qid, question, vector, answer))
        if number % SELECTION_EVERY:
            continue
        selection = selection_for(loaded, answer.metadata["retrieved"])
        if selection is None:
            continue
        asked = question if number % (2 * SELECTION_EVERY) == 0 else ABOUT_THIS
        recording.seen = {"passage": {}, "query": {}}
        vector = recording.embed([asked.strip()], kind="query")[0]
        about = engine.answer(asked, mode="selection", selection=selection)
        cases.append(
            {
                **case(f"{qid}~selection", asked, vector, about),
                "selection": selection,
                "embedded": {
                    t: vector_text(v) for t, v in recording.seen["passage"].items()
                },
                "embedded_queries": {
                    t: vector_text(v) for t, v in recording.seen["query"].items()
                },
            }
        )
    per_question = (time.perf_counter() - started) / max(len(questions), 1)
    print(f"{name}: {1000 * per_question:.1f} ms a question in Python", file=sys.stderr)
    return {
        "format": FORMAT,
        "set": name,
        "site": _shown_path(site),
        "digest": site_digest(site),
        "index_version": loaded.version,
        "embedding_model": loaded.manifest.embedding.model
        if loaded.manifest.embedding
        else None,
        "written_by": "tools/write_parity_cases.py",
        "cases": cases,
    }


def _shown_path(site: Path) -> str:
    """The site's path, relative to the repository when it is inside it."""
    resolved = site.resolve()
    try:
        return resolved.relative_to(REPO).as_posix()
    except ValueError:
        return str(resolved)


def qa_questions(path: Path) -> list[tuple[str, str]]:
    """(id, question) of a QA file in ``ragcite eval`` format."""
    out = []
    lines = path.read_text("utf-8").splitlines()
    for number, line in enumerate(filter(str.strip, lines), start=1):
        record = json.loads(line)
        out.append(
            (str(record.get("id") or f"{path.stem}:{number}"), record["question"])
        )
    return out


def dev_set(name: str, rebuild: bool = False) -> tuple[Path, list[tuple[str, str]]]:
    """A dev set (``benchmarks/devsets.py``): its built site and its questions."""
    from benchmarks.devsets import LOADERS

    devset = LOADERS[name](rebuild)
    return devset.site, [(item.id, item.question) for item in devset.items]


def write(path: Path, payload: dict[str, Any]) -> None:
    """The case file, one case per line (a diff shows which answers changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = {k: v for k, v in payload.items() if k != "cases"}
    text = json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ',\n "cases": [\n'
    text += ",\n".join(json.dumps(c, ensure_ascii=False) for c in payload["cases"])
    text += "\n ]\n}\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (with --qa)")
    parser.add_argument("--qa", type=Path, help="its questions (ragcite eval format)")
    parser.add_argument("--set", dest="name", help="the set's name (with --site)")
    parser.add_argument("--out", type=Path, help="the case file (with --site)")
    parser.add_argument("--sets", nargs="+", help="answer_quality.py dev sets")
    parser.add_argument("--out-dir", type=Path, help="where --sets' files go")
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--rebuild", action="store_true", help="rebuild --sets")
    args = parser.parse_args(argv)
    jobs: list[tuple[str, Path, list[tuple[str, str]], Path]] = []
    if args.site is not None:
        if args.qa is None or args.out is None:
            parser.error("--site needs --qa and --out")
        name = args.name or args.qa.stem
        jobs.append((name, args.site, qa_questions(args.qa), args.out))
    for name in args.sets or ():
        if args.out_dir is None:
            parser.error("--sets needs --out-dir")
        try:
            site, questions = dev_set(name, args.rebuild)
        except (FileNotFoundError, KeyError) as error:
            print(f"{name}: skipped ({error})", file=sys.stderr)
            continue
        jobs.append((name, site, questions, args.out_dir / f"{name}.json"))
    if not jobs:
        parser.error("nothing to write: give --site/--qa/--out or --sets/--out-dir")
    for name, site, questions, out in jobs:
        chosen = questions[: args.limit] if args.limit else questions
        payload = cases_for(name, site, chosen)
        write(out, payload)
        print(f"{name}: {len(chosen)} questions -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
