"""Passages -> _ragcite/ files: contents, checksums, cache and determinism."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.encoder import (
    DEFAULT_MODEL_ID,
    Embedder,
    default_model_files,
    model_files,
)
from sphinx_ragcite.errors import ModelNotFoundError
from sphinx_ragcite.extension.writer import IndexWriter
from sphinx_ragcite.formats.embeddings import dequantize, quantize
from sphinx_ragcite.retrieval.site import Site

from helpers.builds import index_files, passages_bytes, read_manifest, sphinx_build
from helpers.repo import EXAMPLE_BOOK


def test_manifest_lists_every_file_with_its_checksum(example_site: Path) -> None:
    manifest = read_manifest(example_site)
    directory = example_site / "_ragcite"
    files = index_files(example_site)
    # the browser's fixed-name copies of two of them (see IndexWriter), and
    # the passage shards the shard listing names (formats/shards.py)
    listing = directory / manifest["files"].get("shards", "")
    shards = json.loads(listing.read_bytes())["shards"] if listing.is_file() else []
    listed = {name for _, name in shards}
    # and the sharded search index's shards its root names (search_shards.py)
    root = json.loads((directory / manifest["files"]["search_root"]).read_bytes())
    listed |= {name for _, name in root["terms"] + root["passages"]}
    assert set(files) == {*manifest["files"].values(), "search.js", "moved.js", *listed}
    assert files["search.js"] == files[manifest["files"]["static"]]
    assert files["moved.js"] == files[manifest["files"]["moved"]]
    for role, name in manifest["files"].items():
        data = (directory / name).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        assert digest == manifest["sha256"][role]
        assert len(data) == manifest["bytes"][role]
        # content-addressed: a name never names other bytes
        if role.startswith("bm25."):
            assert re.fullmatch(r"bm25\.[0-9a-f]{16}/[a-z]+\.[a-z.]+", name), name
        else:
            assert f".{digest[:16]}." in name, (role, name)
    assert manifest["tokenizer"]["stemmer"] == "snowball-english"
    assert manifest["embedding"]["model"] == DEFAULT_MODEL_ID
    assert manifest["embedding"]["dim"] == 384
    assert manifest["embedding"]["dtype"] == "int8"
    passages = manifest["counts"]["passages"]
    vector_bytes = (
        manifest["bytes"]["embeddings"] + manifest["bytes"]["embedding_scales"]
    )
    assert vector_bytes / passages <= 400 + 1  # + the .npy headers


def test_site_round_trips(example_site: Path) -> None:
    site = Site.load(example_site)
    lines = passages_bytes(example_site).decode().splitlines()
    assert site.passages == [json.loads(line) for line in lines]
    assert site.vectors is not None
    assert site.vectors.shape == (len(site.passages), 384)
    norms = np.linalg.norm(site.vectors, axis=1)
    assert np.allclose(norms, 1.0, atol=0.01)
    # The stored vector of a passage is the model's vector of its text.
    record = site.passages[3]
    text = " ".join(record["heading_path"]) + "\n" + record["text"]
    fresh = site.embedder.embed([text])[0]
    assert float(fresh @ site.vectors[3]) > 0.999


def test_embeddings_behave_like_the_reference_model() -> None:
    embedder = Embedder(default_model_files())
    a, b, c = embedder.embed(
        [
            "Brew with water between 90 and 96 degrees Celsius.",
            "The ideal brewing temperature is just below boiling.",
            "Descale the kettle with citric acid every month.",
        ]
    )
    assert a @ b > a @ c + 0.2
    assert embedder.dim == 384
    # independent of the batch a text is in
    alone = embedder.embed(["The ideal brewing temperature is just below boiling."])
    assert np.array_equal(alone[0], b)


def test_quantization_keeps_cosines() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    codes, scales = quantize(vectors)
    assert codes.dtype == np.int8
    back = dequantize(codes, scales)
    cosines = (back * vectors).sum(axis=1) / np.linalg.norm(back, axis=1)
    assert cosines.min() > 0.999


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        model_files(tmp_path / "nowhere")
    (tmp_path / "model.onnx").write_bytes(b"")
    with pytest.raises(ModelNotFoundError, match=r"tokenizer\.json"):
        model_files(tmp_path)


@pytest.fixture
def book_src(tmp_path: Path) -> Path:
    srcdir = tmp_path / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    return srcdir


@pytest.mark.slow
def test_incremental_build_embeds_only_changed_passages(
    book_src: Path, tmp_path: Path, example_site: Path, own_embedding_cache: None
) -> None:
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    options = ("-d", str(doctrees))
    sphinx_build(book_src, out, *options)
    total = read_manifest(out)["counts"]["passages"]
    assert read_manifest(out)["embedding"]["embedded"] == total
    assert index_files(out) == index_files(example_site)  # clean == clean

    (book_src / "water.rst").touch()
    sphinx_build(book_src, out, *options)
    assert read_manifest(out)["embedding"]["embedded"] == 0
    assert read_manifest(out)["embedding"]["sentences_embedded"] == 0
    assert index_files(out) == index_files(example_site)  # incremental == clean

    care = book_src / "care.rst"
    text = care.read_text("utf-8")
    first = text.index("\n\n", text.index("=====\n")) + 2  # first paragraph
    care.write_text(text[:first] + "Freshly edited. " + text[first:], "utf-8")
    sphinx_build(book_src, out, *options)
    assert read_manifest(out)["embedding"]["embedded"] == 1
    # one paragraph's sentences: its first one changed, the others are reused
    assert read_manifest(out)["embedding"]["sentences_embedded"] == 1


def test_sentence_vectors_are_the_answer_engines_sentences(
    example_site: Path,
) -> None:
    """Built vectors line up with the split the engine makes at query time,
    and are the vectors it would compute itself (up to int8 rounding)."""
    from sphinx_ragcite.text import split_sentences

    site = Site.load(example_site)
    assert site.sentences is not None
    total = 0
    for row in (0, len(site.passages) // 2, len(site.passages) - 1):
        texts = [s.text for s in split_sentences(site.passages[row]["text"])]
        built = site.sentences.of(row)
        assert built.shape == (len(texts), site.embedder.dim)
        fresh = site.embedder.embed(texts)
        assert (np.sum(built * fresh, axis=1) > 0.995).all()
        total += len(texts)
    assert total > 3
    assert site.manifest.embedding is not None
    assert site.manifest.embedding.sentences == int(site.sentences.offsets[-1])


@pytest.mark.slow
def test_without_sentence_vectors_answers_are_the_same(
    book_src: Path, tmp_path: Path, example_site: Path
) -> None:
    out = tmp_path / "plain"
    sphinx_build(book_src, out, "-D", "ragcite_sentence_vectors=0")
    manifest = read_manifest(out)
    assert "sentence_embeddings" not in manifest["files"]
    lazy, built = Site.load(out), Site.load(example_site)
    assert lazy.sentences is None
    question = "What water temperature should I use?"
    a = AnswerEngine(lazy).answer(question)
    b = AnswerEngine(built).answer(question)
    assert a.answer
    assert a.answer == b.answer
    assert [(c.passage_id, c.quote) for c in a.citations] == [
        (c.passage_id, c.quote) for c in b.citations
    ]
    # int8 rounding of the built vectors moves scores in the 4th decimal only
    assert a.confidence == pytest.approx(b.confidence, abs=0.005)


@pytest.mark.slow
def test_parallel_build_writes_identical_index(
    book_src: Path, tmp_path: Path, example_site: Path
) -> None:
    out = tmp_path / "parallel"
    sphinx_build(book_src, out, "-j", "2", "-d", str(tmp_path / "doctrees"))
    assert index_files(out) == index_files(example_site)


@pytest.mark.slow
def test_custom_model_folder_and_bm25_only(book_src: Path, tmp_path: Path) -> None:
    files = default_model_files()
    model = tmp_path / "my-model"
    model.mkdir()
    shutil.copy(files.model, model / "model.onnx")
    shutil.copy(files.tokenizer, model / "tokenizer.json")
    out = tmp_path / "custom"
    sphinx_build(book_src, out, "-D", f"ragcite_embedding_model={model}")
    embedding = read_manifest(out)["embedding"]
    assert embedding["model"].startswith("my-model@")
    with pytest.raises(Exception, match="embedding-model"):
        Site.load(out).search("bloom", mode="dense")
    hits = Site.load(out, model_dir=str(model)).search("bloom", mode="dense")
    assert hits

    out = tmp_path / "bm25only"
    sphinx_build(book_src, out, "-D", "ragcite_embeddings=0")
    manifest = read_manifest(out)
    assert manifest["embedding"] is None
    assert "embeddings" not in manifest["files"]
    site = Site.load(out)
    assert site.search("bloom", 3)  # hybrid falls back to BM25
    # answers are still verified, with the default encoder
    answer = AnswerEngine(site).answer("What pressure does espresso use?")
    assert answer.grounded
    assert answer.citations


@pytest.mark.slow
def test_missing_model_folder_warns_and_keeps_bm25(
    book_src: Path, tmp_path: Path
) -> None:
    out = tmp_path / "html"
    warnings = sphinx_build(book_src, out, "-D", "ragcite_embedding_model=/nonexistent")
    assert "does not exist" in warnings
    assert "[ragcite.model]" in warnings
    assert read_manifest(out)["embedding"] is None


def _minimal_index(writer: IndexWriter, text: str) -> dict:
    """The files a manifest must name, from one fake passage."""
    from sphinx_ragcite.formats.bm25 import bm25_files, build_bm25

    record = {"passage_id": "ch0-sec0-p1", "heading_path": ["T"], "text": text}
    writer.add("passages", "passages.jsonl", (json.dumps(record) + "\n").encode())
    for name, data in bm25_files(build_bm25([record])).items():
        writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    writer.add("static", "search.js", b"globalThis.x=" + text.encode(), alias=True)
    counts = {"passages": 1, "documents": 1, "moved": 0}
    return writer.finish({"counts": counts, "embedding": None})


def test_writer_names_files_by_content_and_prunes_the_rest(tmp_path: Path) -> None:
    directory = tmp_path / "_ragcite"
    directory.mkdir()
    for stale in ("passages.jsonl", "bm25/params.index.json", "x.tmp"):
        (directory / stale).parent.mkdir(exist_ok=True)
        (directory / stale).write_text("from an older build")
    (directory / "link").symlink_to(tmp_path)

    first = _minimal_index(IndexWriter(tmp_path), "Descale the kettle monthly.")
    names = set(first["files"].values())
    assert {p.relative_to(directory).as_posix() for p in directory.rglob("*")} == {
        "manifest.json",
        "search.js",
        *names,
        *{name.partition("/")[0] for name in names if "/" in name},
    }
    passages = directory / first["files"]["passages"]
    stamp = passages.stat().st_mtime_ns

    # same bytes, same names: an unchanged rebuild rewrites no data file
    again = _minimal_index(IndexWriter(tmp_path), "Descale the kettle monthly.")
    assert again["files"] == first["files"]
    assert passages.stat().st_mtime_ns == stamp

    # new bytes, new names; the old files go once the new manifest is in
    other = _minimal_index(IndexWriter(tmp_path), "Grind just before brewing.")
    assert set(other["files"].values()).isdisjoint(names)
    assert not passages.exists()
    assert (
        (directory / "search.js").read_bytes().endswith(b"Grind just before brewing.")
    )


#: A "word" of 1,000,004 characters (a pasted blob: base64, a hash dump).
HUGE_WORD = "q" * 1_000_000 + "uiet"
#: Lucene's ``maxTokenLength``, and ``text.MAX_TOKEN_LENGTH``.
MAX_TOKEN_LENGTH = 255


@pytest.mark.slow
def test_an_over_long_word_never_reaches_the_index(tmp_path: Path) -> None:
    """Issue 42: one 1 MB "word" grew the static index every reader downloads
    from 78 KB to 1.16 MB. Words over ``text.MAX_TOKEN_LENGTH`` (255 code
    points, Lucene's cap) are no BM25 term, in bm25s and the static index
    alike, and a question cut as the browser cuts it scores as on the server."""
    from sphinx_ragcite.formats.static import bm25_scores, read_static

    src = tmp_path / "src"
    shutil.copytree(Path(__file__).parent / "roots" / "test-basic", src)
    edge, over = "e" * MAX_TOKEN_LENGTH, "o" * (MAX_TOKEN_LENGTH + 1)
    astral = "\U00010300" * MAX_TOKEN_LENGTH  # two UTF-16 units each in JS
    (src / "blob.rst").write_text(
        "Blob\n====\n\nThe bloom of fresh beans lasts thirty seconds.\n\n"
        f"{HUGE_WORD}\n\nEdges: {edge} {over} {astral} {astral}\U00010300.\n",
        "utf-8",
    )
    index = src / "index.rst"
    index.write_text(index.read_text("utf-8") + "\n   blob\n", "utf-8")
    out = tmp_path / "out"
    sphinx_build(
        src, out, "-D", "ragcite_embeddings=0", "-D", "ragcite_browser_answers=0"
    )
    static_file = out / "_ragcite" / read_manifest(out)["files"]["static"]
    static = read_static(static_file.read_bytes())
    # the book's own words only: a few KB, not the 1 MB word
    assert static_file.stat().st_size < 20_000
    assert max(map(len, static["terms"])) == MAX_TOKEN_LENGTH
    assert {edge, astral} <= set(static["terms"])
    site = Site.load(out)
    assert max(map(len, site.bm25.vocab_dict)) == MAX_TOKEN_LENGTH
    assert HUGE_WORD[:300] not in json.dumps(static)
    for query in (f"bloom {HUGE_WORD}", f"{edge} {over}", astral, "bloom"):
        expected = site.bm25_scores(query)
        got = bm25_scores(static, site.tokenizer.tokenize(query))
        assert got == {int(d): float(expected[d]) for d in expected.nonzero()[0]}
