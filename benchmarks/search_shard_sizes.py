"""How big the static index's shards should be (issue 46): gzip bytes and
requests per keyword question, for each term-shard size and passage-shard
size, on the example book and the big books.

For each book the sharded index is cut again at each size from the book's
own passages (``passages.jsonl``, tokenized as the build tokenized them),
and each question costs the shards of its terms plus the passage shards of
its ten best results, counted as gzip level 6 (as a static host serves
them): cold (an empty cache) and after the questions before it left theirs
in the cache. The root (paid once per visit) is reported apart.

    .venv/bin/python benchmarks/search_shard_sizes.py [--pages 400 5000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import TYPE_CHECKING, Any

from benchmarks._big_book import big_book
from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    envelope,
    example_build,
    percentile,
    read_jsonl,
    read_manifest,
    table,
    write_result,
)
from benchmarks.browser_answers import gz

if TYPE_CHECKING:
    from pathlib import Path

TERM_BYTES = (3_000, 6_000, 12_000, 24_000, 48_000)
PASSAGE_ROWS = (4, 8, 16, 32, 64)


def costs(site: Path, questions: list[str]) -> dict[str, Any]:
    from sphinx_ragcite.formats.bm25 import tokenized
    from sphinx_ragcite.formats.search_shards import ShardedIndex, search_shards
    from sphinx_ragcite.retrieval.site import Site

    manifest = read_manifest(site)
    loaded = Site.load(site)
    records = [loaded.passages[i] for i in range(len(loaded.passages))]
    spec = manifest["tokenizer"]
    # English books: the questions' tokenizer is the passages' (a Chinese
    # book's passages are cut at jieba's words, not measured here)
    corpus = tokenized(records, loaded.tokenizer)  # type: ignore[arg-type]
    queries = [loaded.tokenizer.tokenize(q) for q in questions]
    out: dict[str, Any] = {"passages": len(records), "sizes": []}
    for term_bytes in TERM_BYTES:
        for rows in PASSAGE_ROWS:
            built = search_shards(
                records,  # type: ignore[arg-type]
                corpus,
                spec,
                term_bytes=term_bytes,
                passage_rows=rows,
            )
            size = {name: gz(data) for name, data in built.files.items()}
            cold, warm, requests = [], [], []
            seen: set[str] = set()
            for tokens in queries:
                index = ShardedIndex(built.root, built.files.__getitem__)
                for row in index.search(tokens, 10):
                    index.passage(row)
                names = set(index.loaded)
                cold.append(sum(size[n] for n in names))
                warm.append(sum(size[n] for n in names - seen))
                requests.append(len(names))
                seen |= names
            out["sizes"].append(
                {
                    "term_bytes": term_bytes,
                    "passage_rows": rows,
                    "root_gzip": gz(built.root),
                    "files": len(built.files),
                    "cold_mean": statistics.mean(cold),
                    "cold_p90": percentile(cold, 90),
                    "warm_mean": statistics.mean(warm),
                    "requests_mean": statistics.mean(requests),
                }
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, nargs="*", default=[400, 5000])
    parser.add_argument("--questions", type=int, default=200)
    args = parser.parse_args(argv)
    example, _ = example_build()
    books = {"example_book": (example, [q["question"] for q in read_jsonl(EXAMPLE_QA)])}
    for pages in args.pages:
        site, squad = big_book(pages)
        step = max(1, len(squad) // args.questions)
        books[f"book_{pages}_pages"] = (site, [q["question"] for q in squad[::step]])
    results = {}
    for name, (site, questions) in books.items():
        print(f"{name}: {len(questions)} questions", file=sys.stderr, flush=True)
        results[name] = costs(site, questions[: args.questions])
        rows = [
            [
                f"{s['term_bytes'] / 1e3:.0f} KB",
                str(s["passage_rows"]),
                f"{s['root_gzip'] / 1e3:.1f}",
                str(s["files"]),
                f"{s['cold_mean'] / 1e3:.1f}",
                f"{s['cold_p90'] / 1e3:.1f}",
                f"{s['warm_mean'] / 1e3:.1f}",
                f"{s['requests_mean']:.1f}",
            ]
            for s in results[name]["sizes"]
        ]
        head = ["term shard", "rows", "root KB", "files", "cold KB", "p90", "warm"]
        print(f"\n{name}: {results[name]['passages']} passages")
        print(table([*head, "requests"], rows))
    write_result(
        RESULTS / "search_shard_sizes.json",
        {**envelope("search_shard_sizes", gzip_level=6), "books": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
