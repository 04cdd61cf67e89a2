"""_ragcite/ files -> hits: loading checks, modes, fusion, filters, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite.cli import main
from sphinx_ragcite.errors import SiteIndexError as RagciteIndexError
from sphinx_ragcite.evaluate import evaluate_retrieval, load_qa, score_ranking
from sphinx_ragcite.retrieval.fusion import Candidates, linear, rrf
from sphinx_ragcite.retrieval.searchable import Filters
from sphinx_ragcite.retrieval.site import Site, _top

from helpers.repo import EXAMPLE_BOOK


@pytest.mark.slow
def test_hybrid_matches_or_beats_both_modes_on_the_qa_set(site: Site) -> None:
    results = evaluate_retrieval(site, load_qa(EXAMPLE_BOOK / "qa.jsonl"))
    best_single = max(results["bm25"]["recall@5"], results["dense"]["recall@5"])
    assert results["hybrid"]["recall@5"] >= best_single
    assert results["hybrid"]["mrr@10"] >= max(
        results["bm25"]["mrr@10"], results["dense"]["mrr@10"]
    )
    assert results["hybrid"]["recall@5"] >= 0.9


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_modes_find_the_bloom(site: Site, mode: str) -> None:
    hits = site.search("How long should the bloom last in a pour-over?", 5, mode=mode)
    assert len(hits) == 5
    assert any("bloom" in h.passage["text"].lower() for h in hits[:2])
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    hit = hits[0]
    assert hit.dense is not None if mode != "bm25" else hit.bm25 is not None


def test_hits_carry_both_scores_in_hybrid(site: Site) -> None:
    hit = site.search("descaling a kettle", 1)[0]
    assert hit.bm25 is not None
    assert hit.dense is not None
    assert set(hit.as_json()) >= {"passage_id", "score", "bm25", "dense", "url"}


def reference_search(
    site: Site, query: str, vector: np.ndarray, k: int, mode: str, fusion: str
) -> list[str]:
    """The search before int8 vectors: every row scored by the float32 matrix."""
    dense = np.asarray(site.vectors) @ vector
    bm25 = site.bm25_scores(query)
    if mode == "dense":
        rows = _top(dense, k, None)
    else:
        lexical = _top(bm25, 50, None, positive=True)
        semantic = _top(dense, 50, None)
        scored = {*lexical, *semantic}
        fused = (
            rrf((lexical, semantic))
            if fusion == "rrf"
            else linear(
                Candidates(
                    lexical,
                    semantic,
                    {r: float(bm25[r]) for r in scored},
                    {r: float(dense[r]) for r in scored},
                )
            )
        )
        rows = [r for r, _ in sorted(fused.items(), key=lambda i: (-i[1], i[0]))][:k]
    return [site.passages[r]["passage_id"] for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "fusion"), [("dense", "rrf"), ("hybrid", "rrf"), ("hybrid", "linear")]
)
def test_rankings_are_those_of_the_float32_matrix(
    site: Site, mode: str, fusion: str
) -> None:
    """int8 search with float32 rescoring ranks exactly as scoring every row."""
    questions = [q.question for q in load_qa(EXAMPLE_BOOK / "qa.jsonl")]
    vectors = site.embedder.embed(questions)
    for question, vector in zip(questions, vectors, strict=True):
        for k in (1, 10, 40):
            hits = site.search(
                question,
                k,
                mode=mode,
                fusion=fusion,
                query_vector=vector,
            )
            assert [h.passage_id for h in hits] == reference_search(
                site, question, vector, k, mode, fusion
            ), question
            dense = np.asarray(site.vectors) @ vector
            for hit in hits:
                assert hit.dense == pytest.approx(float(dense[hit.row]), abs=1e-6)


def test_filters(site: Site) -> None:
    hits = site.search("grind size", 10, filters=Filters(docnames=("brewing",)))
    assert hits
    assert all(h.passage["docname"].startswith("brewing/") for h in hits)
    chapter = int(hits[0].passage_id.split("-")[0][2:])
    only = site.search("grind size", 10, filters=Filters(chapters=(chapter,)))
    assert all(h.passage_id.startswith(f"ch{chapter}-") for h in only)


def test_query_without_known_words_returns_no_bm25_hits(site: Site) -> None:
    assert site.search("zzzz qqqq", 5, mode="bm25") == []
    assert len(site.search("zzzz qqqq", 5, mode="hybrid")) == 5  # dense still ranks


def test_score_ranking() -> None:
    metrics = score_ranking([4, 2, 9], {2})
    assert metrics["recall@1"] == 0.0
    assert metrics["recall@5"] == 1.0
    assert metrics["mrr@10"] == 0.5


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RagciteIndexError, match="sphinx_ragcite"):
        Site.load(tmp_path)


def role_path(site: Path, role: str) -> Path:
    """The file the manifest names for *role* (names are content-addressed)."""
    manifest = json.loads((site / "_ragcite" / "manifest.json").read_text())
    return site / "_ragcite" / manifest["files"][role]


def test_corrupt_file_is_detected(index_copy: Path) -> None:
    path = role_path(index_copy, "embeddings")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RagciteIndexError, match="corrupt"):
        Site.load(index_copy)


def test_missing_file_is_detected(index_copy: Path) -> None:
    role_path(index_copy, "bm25.vocab").unlink()
    with pytest.raises(RagciteIndexError, match="missing"):
        Site.load(index_copy)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: {**m, "format_version": 999}, "format 999"),
        (lambda m: [1, 2], "not an index manifest"),
    ],
)
def test_manifest_mismatch(index_copy: Path, edit, message: str) -> None:
    path = index_copy / "_ragcite" / "manifest.json"
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    with pytest.raises(RagciteIndexError, match=message):
        Site.load(index_copy)


def test_truncated_manifest(index_copy: Path) -> None:
    path = index_copy / "_ragcite" / "manifest.json"
    path.write_text(path.read_text()[:40])
    with pytest.raises(RagciteIndexError, match="cannot be read"):
        Site.load(index_copy)


def test_cli_search_json(
    example_site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["search", "water temperature", "--site", str(example_site), "--json"])
    assert code == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert len(hits) == 5
    assert {"passage_id", "score", "url", "snippet"} <= set(hits[0])


def test_cli_search_text_and_errors(
    example_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "espresso", "--site", str(example_site), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(" 1. ch")
    assert main(["search", "espresso", "--site", str(tmp_path)]) == 2
    assert "sphinx_ragcite" in capsys.readouterr().err
    assert main(["search", "  ", "--site", str(example_site)]) == 2


def test_cli_eval(
    example_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text(
        '{"question": "how hot should the water be", "answer": "96"}\n'
        '{"question": "best tea?", "passage_ids": [], "answer": null}\n'
    )
    assert main(["eval", "--site", str(example_site), "--qa", str(qa), "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) == {"bm25", "dense", "hybrid"}
    assert results["hybrid"]["questions"] == 1
    qa.write_text('{"question": 3}\n')
    assert main(["eval", "--site", str(example_site), "--qa", str(qa)]) == 2
    assert "qa.jsonl:1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("mode", "fusion"),
    [("bm25", "rrf"), ("dense", "rrf"), ("hybrid", "rrf"), ("hybrid", "linear")],
)
@pytest.mark.parametrize(
    "filters", [Filters(docnames=("nonexistent",)), Filters(chapters=(42,))]
)
def test_a_filter_that_keeps_nothing_finds_nothing(
    site: Site, mode: str, fusion: str, filters: Filters
) -> None:
    """Linear fusion of no candidates was a numpy error (a 500 on every door)."""
    hits = site.search(
        "How long should the bloom take?", 5, mode=mode, fusion=fusion, filters=filters
    )
    assert hits == []


def test_the_answer_to_a_filter_that_keeps_nothing_is_not_found(site: Site) -> None:
    from sphinx_ragcite.answer.engine import AnswerEngine

    engine = AnswerEngine(site)
    for filters in (Filters(docnames=("nonexistent",)), Filters(chapters=(42,))):
        answer = engine.answer("How long should the bloom take?", filters=filters)
        assert answer.citations == []
        assert answer.grounded is False
