"""The browser's tokenizer, stemmer and static search match the Python ones.

``js/tokenize.js``, ``js/stemmer.js`` and ``js/search.js`` run in Node on the
same inputs as ``sphinx_ragcite.text`` and ``search_static``; every
token list, stem and ranking must come out identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import Stemmer

from benchmarks._parity import CJK_TEXTS, TRICKY
from benchmarks._parity import node as run_node
from sphinx_ragcite.formats.static import (
    bm25_scores,
    read_static,
    search_static,
    static_passage,
)
from sphinx_ragcite.text import SPEC, spec_for, tokenize, tokenizer, words

from helpers.builds import read_manifest, read_passages
from helpers.repo import EXAMPLE_BOOK, ROOTS

#: Every test runs the browser scripts in Node (the ``node`` fixture skips
#: without it; under ``CI=true`` it fails: CI installs Node).
pytestmark = [pytest.mark.node, pytest.mark.usefixtures("node")]


def source_lines() -> list[str]:
    """Every line of the example book's and the test roots' sources."""
    lines: list[str] = []
    paths = sorted(
        p
        for base in (EXAMPLE_BOOK, ROOTS)
        for p in base.rglob("*")
        if p.suffix in {".rst", ".md", ".ipynb", ".jsonl"} and "_build" not in p.parts
    )
    for path in paths:
        text = path.read_text("utf-8")
        if path.suffix == ".ipynb":
            notebook = json.loads(text)
            for cell in notebook["cells"]:
                text = "".join(cell.get("source", []))
                lines += text.splitlines()
                for output in cell.get("outputs", []):
                    lines += "".join(output.get("text", [])).splitlines()
                    for value in output.get("data", {}).values():
                        if isinstance(value, list):
                            lines += "".join(value).splitlines()
        else:
            lines += text.splitlines()
    return lines


@pytest.fixture(scope="module")
def texts() -> list[str]:
    lines = source_lines()
    assert len(lines) > 1000
    return [*TRICKY, *lines]


def test_tokenize_parity(texts, tmp_path):
    got = run_node("tokenize", {"texts": texts, "spec": SPEC}, tmp_path)
    assert len(got) == len(texts)
    for text, (js_words, js_tokens) in zip(texts, got, strict=True):
        assert js_words == words(text), text
        assert js_tokens == tokenize(text), text


@pytest.mark.slow
@pytest.mark.parametrize(
    "language", ["de", "fr", "es", "ru", "tr", "fi", "zh_CN", "ja", "ko"]
)
def test_tokenize_parity_every_language(texts, language, tmp_path):
    """The tricky strings and every source line, under each language's spec."""
    spec = spec_for(language)
    tok = tokenizer(spec)
    sample = [*CJK_TEXTS, *texts]
    got = run_node("tokenize", {"texts": sample, "spec": spec}, tmp_path)
    for text, (js_words, js_tokens) in zip(sample, got, strict=True):
        assert js_words == tok.words(text), text
        if language != "fi":  # Snowball 3.0.1 vs 3.1 (test_languages.py)
            assert js_tokens == tok.tokenize(text), text


#: Endings glued onto the fixture's words, to walk the stemmer's steps.
SUFFIXES = ("s", "es", "ed", "ing", "ly", "edly", "ingly", "ness", "ational", "ization")


def test_stemmer_parity_on_vocabulary(texts, tmp_path):
    vocabulary = sorted({w for text in texts for w in words(text)})
    assert len(vocabulary) > 2000
    inflected = sorted({w + s for w in vocabulary if w.isalpha() for s in SUFFIXES})
    every = [*vocabulary, *inflected, "dog's", "dogs'", "'tis", "o'neill's'", "'", "''"]
    got = run_node("stem", {"words": every}, tmp_path)
    expected = Stemmer.Stemmer("english").stemWords(every)
    wrong = [(w, j, p) for w, j, p in zip(every, got, expected, strict=True) if j != p]
    assert not wrong, (
        f"{len(wrong)} of {len(every)} words stem differently: {wrong[:20]}"
    )


@pytest.fixture(scope="module")
def static_index(example_site: Path) -> dict:
    files = read_manifest(example_site)["files"]
    if "static" in files:
        return read_static((example_site / "_ragcite" / files["static"]).read_bytes())
    # The build does not ship the static index yet: make it from the passages.
    from sphinx_ragcite.formats.bm25 import tokenized
    from sphinx_ragcite.formats.static import static_index as make_static

    records = read_passages(example_site)
    # Through JSON, as the browser gets it.
    return json.loads(json.dumps(make_static(records, tokenized(records))))


def test_passage_text_tokenize_parity(example_site, tmp_path):
    from sphinx_ragcite.formats.bm25 import indexed_text

    texts = [indexed_text(r) for r in read_passages(example_site)]
    got = run_node("tokenize", {"texts": texts, "spec": SPEC}, tmp_path)
    assert [tokens for _, tokens in got] == [tokenize(t) for t in texts]


def test_search_parity(static_index, tmp_path):
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    assert len(questions) >= 80
    # Section titles and a few odd queries besides the QA set.
    sections = sorted(
        {static_index["headings"][p[3]] for p in static_index["passages"]}
    )
    queries = [*questions, *sections, "", "the and of", "coffee coffee coffee", "zzzz"]
    k = 10
    got = run_node(
        "search", {"index": static_index, "queries": queries, "k": k}, tmp_path
    )
    passages = static_index["passages"]
    for query, hits in zip(queries, got, strict=True):
        docs = search_static(static_index, tokenize(query), k)
        assert [h["passage_id"] for h in hits] == [passages[d][0] for d in docs], query
        scores = bm25_scores(static_index, tokenize(query))
        for hit, doc in zip(hits, docs, strict=True):
            # to the bit: JS sums float32 weights as Python does
            assert hit == {**static_passage(static_index, doc), "score": scores[doc]}
    # Not vacuous: every question of the QA set finds something.
    assert all(got[: len(questions)]), [
        q for q, h in zip(questions, got[: len(questions)], strict=True) if not h
    ]


def test_static_scores_are_bm25s_scores(example_site):
    """The static index's BM25 scores equal the server's (bm25s) to the bit,
    so the answer engine in the browser retrieves what the server does."""
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(example_site)
    static = read_static((example_site / "_ragcite" / "search.js").read_bytes())
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    queries = [*questions, "coffee coffee coffee", "zzzz", ""]
    compared = 0
    for query in queries:
        expected = site.bm25_scores(query)
        got = bm25_scores(static, site.tokenizer.tokenize(query))
        assert set(got) == {int(d) for d in expected.nonzero()[0]}, query
        for doc, score in got.items():
            assert score == float(expected[doc]), (query, doc)
            compared += 1
    assert compared > 1000


def test_sharded_search_is_the_whole_index_search(example_site, static_index, tmp_path):
    """The sharded index (search_shards.py) ranks and scores as the whole one,
    in Python and in the browser's search.js, fetching only a query's shards."""
    from sphinx_ragcite.formats.search_shards import ShardedIndex

    folder = example_site / "_ragcite"
    root_name = read_manifest(example_site)["files"]["search_root"]
    root_bytes = (folder / root_name).read_bytes()
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    queries = [*questions, "", "the and of", "coffee coffee coffee", "zzzz", "aaa"]
    k = 10
    got = run_node(
        "sharded",
        {"folder": str(folder), "root": root_name, "queries": queries, "k": k},
        tmp_path,
    )
    root = json.loads(root_bytes)
    every = len(root["terms"]) + len(root["passages"])
    for query, result in zip(queries, got, strict=True):
        sharded = ShardedIndex(root_bytes, lambda n: (folder / n).read_bytes())
        tokens = tokenize(query)
        docs = search_static(static_index, tokens, k)
        assert sharded.search(tokens, k) == docs, query
        assert sharded.bm25_scores(tokens) == bm25_scores(static_index, tokens)
        scores = bm25_scores(static_index, tokens)
        assert result["hits"] == [
            {**static_passage(static_index, d), "score": scores[d]} for d in docs
        ], query
        for d in docs:
            whole = static_passage(static_index, d)
            assert {k: sharded.passage(d)[k] for k in whole} == whole
        # only this query's shards: never all of them
        assert len(result["loaded"]) < every, query
    assert sum(bool(r["hits"]) for r in got) >= len(questions)
