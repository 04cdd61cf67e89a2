"""In-memory index parts: int8 vectors with exact rankings, compressed records."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.embeddings import dequantize, quantize
from sphinx_ragcite.retrieval.dense import DenseVectors
from sphinx_ragcite.retrieval.int8_product import QUERY_LIMIT, Int8Product
from sphinx_ragcite.retrieval.passage_store import BLOCK, PassageStore, RowIndex


def float32_top(
    codes: np.ndarray,
    scales: np.ndarray,
    query: np.ndarray,
    k: int,
    keep: np.ndarray | None = None,
) -> list[int]:
    """The ranking before int8 search: the float32 matrix, every row scored."""
    scores = dequantize(codes, scales) @ query.astype(np.float32)
    rows = np.arange(len(scores)) if keep is None else np.flatnonzero(keep)
    return [int(r) for r in rows[np.lexsort((rows, -scores[rows]))][:k]]


def vectors(rows: int, seed: int, clustered: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if clustered:  # real embeddings crowd together: many near ties
        centre = rng.standard_normal(384)
        values = centre + 0.15 * rng.standard_normal((rows, 384))
    else:
        values = rng.standard_normal((rows, 384))
    values /= np.linalg.norm(values, axis=1, keepdims=True)
    return values.astype(np.float32)


def test_the_integer_product_is_exact_at_the_extremes() -> None:
    """Codes at +-127 against a query at +-63 everywhere: no 16-bit saturation
    (AVX2 without VNNI), no rounding; the result is the integer product."""
    codes = np.full((6, 384), 127, dtype=np.int8)
    codes[1] = -127
    codes[2, ::2] = -127
    codes[3] = np.resize(np.array([127, 127, -127, -127], dtype=np.int8), 384)
    codes[4] = 0
    codes[5] = np.random.default_rng(0).integers(-127, 128, 384)
    product = Int8Product(384)
    shifted = codes.view(np.uint8) ^ np.uint8(0x80)
    for query in (
        np.full(384, QUERY_LIMIT),
        np.full(384, -QUERY_LIMIT),
        np.resize(np.array([QUERY_LIMIT, -QUERY_LIMIT]), 384),
    ):
        got = product(shifted, query.astype(np.int8))
        want = codes.astype(np.int64) @ query.astype(np.int64)
        assert got.tolist() == want.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("clustered", [False, True])
def test_top_k_is_the_float32_ranking(clustered: bool) -> None:
    codes, scales = quantize(vectors(3000, 1, clustered))
    # duplicates tie exactly: the lower row must come first, as before
    codes[2000:2050] = codes[100:150]
    scales[2000:2050] = scales[100:150]
    dense = DenseVectors(codes, scales)
    rng = np.random.default_rng(2)
    keep = rng.random(3000) < 0.3
    for query in vectors(40, 3, clustered):
        for k in (1, 10, 50, 200):
            rows, scores = dense.top(query, k)
            assert rows.tolist() == float32_top(codes, scales, query, k)
            assert scores.tolist() == dense.scores(query, rows).tolist()
        rows, _ = dense.top(query, 10, keep)
        assert rows.tolist() == float32_top(codes, scales, query, 10, keep)


def test_top_k_with_few_rows_left() -> None:
    codes, scales = quantize(vectors(100, 4))
    dense = DenseVectors(codes, scales)
    query = vectors(1, 5)[0]
    keep = np.zeros(100, dtype=bool)
    keep[[3, 50, 99]] = True
    assert dense.top(query, 10, keep)[0].tolist() == float32_top(
        codes, scales, query, 10, keep
    )
    assert dense.top(query, 10, np.zeros(100, dtype=bool))[0].tolist() == []
    assert len(dense.top(query, 500)[0]) == 100


def test_a_row_scores_the_same_in_any_batch() -> None:
    codes, scales = quantize(vectors(500, 6))
    dense = DenseVectors(codes, scales)
    query = vectors(1, 7)[0]
    every = dense.scores(query, np.arange(500))
    for row in (0, 17, 499):
        assert dense.scores(query, np.array([row]))[0] == every[row]
    assert np.abs(every - dequantize(codes, scales) @ query).max() < 1e-6


def test_rows_are_the_stored_vectors() -> None:
    codes, scales = quantize(vectors(50, 8))
    dense = DenseVectors(codes, scales)
    matrix = dequantize(codes, scales)
    assert np.array_equal(np.asarray(dense), matrix)
    assert np.array_equal(dense[7], matrix[7])
    assert dense.shape == (50, 384)
    assert dense.nbytes == 50 * (384 + 4)


def test_a_bad_query_vector_is_refused() -> None:
    codes, scales = quantize(vectors(20, 9))
    dense = DenseVectors(codes, scales)
    with pytest.raises(ValueError, match="384 finite"):
        dense.top(np.full(384, np.nan), 5)
    with pytest.raises(ValueError, match="384 finite"):
        dense.top(np.ones(12), 5)


def test_non_numbers_are_noticed() -> None:
    codes, scales = quantize(vectors(20, 10))
    scales[3] = np.float32(3e38)  # finite, but code * scale overflows
    assert not DenseVectors(codes, scales).finite
    scales[3] = np.nan
    assert not DenseVectors(codes, scales).finite


def records(count: int) -> list[dict[str, object]]:
    return [
        {
            "passage_id": f"ch{n // 40}-sec{n % 40 // 8}-p{n % 8 + 1}",
            "docname": f"doc{n // 40}",
            "text": f"Passage {n} \u2028 with a line separator, é and \u00a0.",
            "heading_path": ["A", f"B {n // 8}"],
        }
        for n in range(count)
    ]


@pytest.mark.parametrize("count", [0, 1, BLOCK, BLOCK + 1, 5 * BLOCK + 3])
def test_the_store_gives_back_every_record(count: int) -> None:
    items = records(count)
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in items]
    store = PassageStore(
        lines, [str(r["docname"]) for r in items], [n // 40 for n in range(count)]
    )
    assert len(store) == count
    assert list(store) == items
    assert store == items
    assert store != [*items, {"other": 1}]
    assert [store[i] for i in range(count)] == items
    assert store[:3] == items[:3]
    if count:
        assert store[-1] == items[-1]
        assert store[np.int64(count - 1)] == items[-1]
        store[0]["text"] = "changed"
        assert store[0] == items[0]  # a fresh record every time
    with pytest.raises(IndexError):
        store[count]
    ids = [str(r["passage_id"]) for r in items]
    index = RowIndex(ids, store)
    assert {i: index[i] for i in ids} == {i: n for n, i in enumerate(ids)}
    assert index.get("ch999-sec1-p1") is None
    assert "ch999-sec1-p1" not in index
    assert list(index) == ids
    assert store.docnames == tuple(dict.fromkeys(str(r["docname"]) for r in items))


def passage_line(n: int, text: str) -> bytes:
    record = {
        "passage_id": f"ch1-sec1-p{n}",
        "docname": "doc",
        "url": f"doc.html#ch1-sec1-p{n}",
        "chapter": "1. One",
        "section": "1.1. Two",
        "heading_path": ["One", "Two"],
        "text": text,
        "snippet": text,
        "char_start": 0,
        "char_end": len(text),
        "content_hash": "0" * 16,
    }
    return json.dumps(record, ensure_ascii=False).encode()


def test_records_with_unicode_line_separators_load() -> None:
    """The writer leaves U+2028 and NEL raw (JSON allows it); only \\n ends a line."""
    lines = [passage_line(1, "a\u2028b"), passage_line(2, "c\x85d")]
    store = PassageStore.read(b"\n".join(lines) + b"\n", "site/passages")
    assert [r["text"] for r in store] == ["a\u2028b", "c\x85d"]
    assert store.rows["ch1-sec1-p2"] == 1


def test_bad_bytes_and_bad_lines_are_refused() -> None:
    with pytest.raises(SiteIndexError, match="cannot be read"):
        PassageStore.read(passage_line(1, "x") + b"\xff\n", "site/passages")
    with pytest.raises(SiteIndexError, match="line 2: not a passage record"):
        PassageStore.read(passage_line(1, "x") + b"\n[1]\n", "site/passages")
    with pytest.raises(
        SiteIndexError, match="line 2: passage_id 'ch1-sec1-p1' repeats"
    ):
        PassageStore.read(passage_line(1, "x") + b"\n" + passage_line(1, "y"), "site/p")
