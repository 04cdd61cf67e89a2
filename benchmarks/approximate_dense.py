"""How many answers the approximate dense search changes (issue 46).

A book of ``APPROXIMATE_FROM`` passages or more searches its passage vectors
approximately (``formats/dense_index.py``), in the browser and on the server
alike; a smaller one searches them exactly, so its answers do not change.
This measures, per dev set and big book, what the approximate search would
change if it were used: each question is answered by the Python engine
twice over the same built index, with exact dense search and with the
approximate index built from the site's own vectors by the parameters the
build would choose, and the answers are compared (outcome and cited
passages), with recall@10 of dense search against exact.

The index is read as it is in ``results/.sites`` (``--reuse``, the default:
only the engine is compared, so the code that built it does not matter).

    .venv/bin/python benchmarks/approximate_dense.py [--sets click ...]
        [--pages 400 5000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    SITES,
    envelope,
    read_jsonl,
    table,
    write_result,
)
from benchmarks.devsets import CORPUS_SETS, QA_DIR, qa_items

if TYPE_CHECKING:
    from pathlib import Path

#: set -> (its folder under results/.sites, its questions file)
SETS: dict[str, tuple[str, Path]] = {
    "example_book": ("example_book", EXAMPLE_QA),
    **{name: (corpus, qa) for name, (corpus, qa) in CORPUS_SETS.items()},
    **{
        name: (name, QA_DIR / f"{name}.jsonl")
        for name in ("flask", "attrs", "jinja", "emcee", "rqalpha_zh")
    },
}


def compare(site_dir: Path, questions: list[str]) -> dict[str, Any]:
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.formats import dense_index
    from sphinx_ragcite.formats.embeddings import read_vectors
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(site_dir)
    assert site.vectors is not None
    # the vectors as the build staged them (what it builds the index from)
    files = site.manifest.files
    rows, dim = site.vectors.shape
    codes, scales = read_vectors(
        (site_dir / "_ragcite" / files["embeddings"]).read_bytes(),
        (site_dir / "_ragcite" / files["embedding_scales"]).read_bytes(),
        rows,
        dim,
        str(site_dir),
    )
    chosen = dense_index.parameters(len(site.passages))
    started = time.perf_counter()
    root, shards = dense_index.build_dense_index(codes, scales)  # as a build does
    built_s = time.perf_counter() - started
    approximate = dense_index.ApproxDense(root, shards.__getitem__)
    vectors = site.embedder.embed(questions, kind="query")
    recall = []
    for q in vectors:
        exact, _ = site.vectors.top(q, 10)
        approx, _ = approximate.top(q, 10)
        recall.append(len(set(exact.tolist()) & set(approx.tolist())) / 10)
    engine = AnswerEngine(site)
    before = [engine.answer(q) for q in questions]
    site.approximate = approximate
    after = [engine.answer(q) for q in questions]
    changed = [
        {
            "question": q,
            "exact": [a.outcome, [c.passage_id for c in a.citations]],
            "approximate": [b.outcome, [c.passage_id for c in b.citations]],
        }
        for q, a, b in zip(questions, before, after, strict=True)
        if (a.outcome, [c.passage_id for c in a.citations])
        != (b.outcome, [c.passage_id for c in b.citations])
    ]
    return {
        "passages": len(site.passages),
        "questions": len(questions),
        "parameters": chosen.__dict__,
        "build_s": built_s,
        "recall_at_10": statistics.mean(recall),
        "answers_changed": len(changed),
        "changed": changed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--pages", type=int, nargs="*", default=[400, 5000])
    parser.add_argument("--questions", type=int, default=200)
    args = parser.parse_args(argv)
    books: dict[str, tuple[Path, list[str]]] = {}
    for name in args.sets:
        folder, qa = SETS[name]
        site = SITES / folder / "html"
        if site.is_dir() and qa.is_file():
            books[name] = (site, [i.question for i in qa_items(qa, name)])
        else:
            print(f"{name}: no built site at {site}, skipped", file=sys.stderr)
    for pages in args.pages:
        root = SITES / f"big_book{pages}"
        if (root / "html").is_dir():
            squad = read_jsonl(root / "src" / "questions.jsonl")
            step = max(1, len(squad) // args.questions)
            books[f"book_{pages}_pages"] = (
                root / "html",
                [q["question"] for q in squad[::step]],
            )
    results = {}
    for name, (site, questions) in books.items():
        print(
            f"{name}: {len(questions[: args.questions])} questions",
            file=sys.stderr,
            flush=True,
        )
        results[name] = compare(site, questions[: args.questions])
    rows = [
        [
            name,
            str(r["passages"]),
            f"{r['recall_at_10']:.3f}",
            f"{r['answers_changed']}/{r['questions']}",
            f"{r['build_s']:.1f}",
        ]
        for name, r in results.items()
    ]
    print(
        table(
            ["set", "passages", "recall@10", "answers changed", "index build s"], rows
        )
    )
    write_result(
        RESULTS / "approximate_dense.json",
        {**envelope("approximate_dense"), "sets": results},
    )
    print(json.dumps({n: r["answers_changed"] for n, r in results.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
