"""A book in another language embedded with an encoder its author supplies
(``ragcite_embedding_model``, docs/howto/own-model.md; issue 29).

The shipped encoder is English, so a Chinese book built with it ranks
passages with BM25 alone (test_languages.py). An encoder the author chose is
trusted: its vectors rank passages. The encoder here is made in the test, a
real ONNX graph run by onnxruntime with a real ``tokenizer.json``: a table of
seeded random vectors, one per character or word of the test book, looked up
per token (mean-pooled by sphinx-ragcite, it scores passages by the
characters they share with the question).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, checker, helper, numpy_helper, save
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

from sphinx_ragcite.cli import main
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.retrieval.site import Site

from helpers.builds import read_manifest, sphinx_build
from helpers.repo import ROOTS

BOOK = ROOTS / "test-languages" / "zh_CN"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
DIM = 32
MAX_TOKENS = 64
QUESTION = "目标网络的参数多久复制一次？"
#: the passage that answers it: "目标网络的参数每隔一定步数从主网络复制一次…"
ANSWER = "sec3-p1"


def bert_tokenizer(vocab: dict[str, int] | None = None) -> Tokenizer:
    """A multilingual-BERT-style tokenizer: each CJK character a token,
    words and punctuation split, ``[CLS] … [SEP]`` around the text."""
    tokenizer = Tokenizer(models.WordPiece(vocab or {"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(
        handle_chinese_chars=True, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if vocab:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
        )
    return tokenizer


def make_encoder(folder: Path, texts: list[str]) -> Path:
    """``model.onnx`` + ``tokenizer.json`` covering every token of *texts*."""
    cutter = bert_tokenizer()
    assert cutter.normalizer is not None
    assert cutter.pre_tokenizer is not None
    words = sorted(
        {
            word
            for text in texts
            for word, _ in cutter.pre_tokenizer.pre_tokenize_str(
                cutter.normalizer.normalize_str(text)
            )
        }
    )
    vocab = {token: i for i, token in enumerate([*SPECIALS, *words])}
    folder.mkdir()
    bert_tokenizer(vocab).save(str(folder / "tokenizer.json"))

    table = np.random.default_rng(29).standard_normal((len(vocab), DIM))
    table[: len(SPECIALS)] = 0.0  # padding and markers carry no meaning
    batch_tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["table", "input_ids"], ["vectors"]),
            helper.make_node("Unsqueeze", ["attention_mask", "last"], ["mask3"]),
            helper.make_node("Cast", ["mask3"], ["weights"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["vectors", "weights"], ["last_hidden_state"]),
        ],
        "tiny-multilingual-encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch_tokens),
            helper.make_tensor_value_info(
                "attention_mask", TensorProto.INT64, batch_tokens
            ),
        ],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, [*batch_tokens, DIM]
            )
        ],
        initializer=[
            numpy_helper.from_array(table.astype(np.float32), "table"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "last"),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    checker.check_model(model)
    save(model, str(folder / "model.onnx"))
    return folder


@pytest.fixture(scope="module")
def own_model_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The Chinese test book built with the tiny encoder: (model folder, html)."""
    root = tmp_path_factory.mktemp("own-model")
    src = root / "src"
    shutil.copytree(BOOK, src)
    texts = [(src / "index.rst").read_text("utf-8"), QUESTION]
    model = make_encoder(root / "tiny-zh", texts)
    html = root / "html"
    sphinx_build(
        src,
        html,
        "-d", str(root / "doctrees"),
        "-D", "ragcite_embeddings=1",
        "-D", f"ragcite_embedding_model={model}",
        "-D", f"ragcite_embedding_max_tokens={MAX_TOKENS}",
    )  # fmt: skip
    return model, html


@pytest.mark.slow
def test_the_manifest_names_the_model_and_keeps_dense_search(
    own_model_build: tuple[Path, Path],
) -> None:
    model, html = own_model_build
    manifest = read_manifest(html)
    assert manifest["tokenizer"]["segment"] == "cjk-bigrams"
    embedding = manifest["embedding"]
    digest = hashlib.sha256((model / "model.onnx").read_bytes()).hexdigest()
    assert embedding["model"] == f"tiny-zh@{digest[:12]}"
    assert embedding["dim"] == DIM
    assert embedding["max_tokens"] == MAX_TOKENS
    assert embedding["embedded"] == manifest["counts"]["passages"]
    # an encoder the author chose ranks passages, even in a Chinese book
    assert embedding.get("search", True) is True


def test_dense_and_hybrid_search_rank_with_the_model(
    own_model_build: tuple[Path, Path],
) -> None:
    model, html = own_model_build
    site = Site.load(html, model_dir=str(model))
    assert site.dense_search
    assert site.vectors is not None
    # the stored vectors are the tiny model's vectors of the passages' texts
    for row, record in enumerate(site.passages):
        text = " ".join(record["heading_path"]) + "\n" + record["text"]
        fresh = site.embedder.embed([text])[0]
        assert float(fresh @ site.vectors[row]) > 0.999

    dense = site.search(QUESTION, 3, mode="dense")
    assert dense
    assert dense[0].passage_id.endswith(ANSWER)
    hybrid = site.search(QUESTION, 3)
    bm25 = site.search(QUESTION, 3, mode="bm25")
    assert hybrid[0].passage_id.endswith(ANSWER)
    # fused: every hit carries its dense score, unlike BM25 alone
    assert all(h.dense is not None for h in hybrid)
    assert all(h.dense is None for h in bm25)
    assert [(h.passage_id, h.score) for h in hybrid] != [
        (h.passage_id, h.score) for h in bm25
    ]
    # the dense side brings in a passage that shares no bigram with the question
    assert {h.passage_id for h in bm25} < {h.passage_id for h in hybrid}


def test_searching_without_the_model_is_a_clear_error(
    own_model_build: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, html = own_model_build
    site = Site.load(html)  # loading needs no model: the first question does
    with pytest.raises(SiteIndexError, match=r"tiny-zh@.*--embedding-model"):
        site.search(QUESTION, 3)
    assert site.search(QUESTION, 3, mode="bm25")
    assert main(["search", QUESTION, "--site", str(html)]) == 2
    error = capsys.readouterr().err
    assert "ragcite: error: This index was embedded with model 'tiny-zh@" in error
    assert "pass its folder (--embedding-model)" in error


def test_cli_search_with_the_model(
    own_model_build: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    model, html = own_model_build
    argv = ["search", QUESTION, "--site", str(html), "--embedding-model", str(model)]
    assert main([*argv, "--k", "2", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["passage_id"].endswith(ANSWER)
    assert all(h["dense"] is not None and h["bm25"] is not None for h in hits)
    assert main([*argv, "--mode", "dense", "--k", "1"]) == 0
    assert ANSWER in capsys.readouterr().out
