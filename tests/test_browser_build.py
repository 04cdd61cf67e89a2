"""Passages -> the browser engine's files in ``_ragcite/``: what ships, how it is
named, what the option and a missing runtime leave out, and that rebuilding
neither changes nor copies anything again."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sphinx_ragcite.encoder import default_model_files
from sphinx_ragcite.extension import assets, browser_index
from sphinx_ragcite.extension.browser_assets import ort_runtime_files
from sphinx_ragcite.extension.writer import IndexWriter, file_digest
from sphinx_ragcite.formats import shards
from sphinx_ragcite.formats.static import read_static, static_passage

from helpers.builds import build, index_files, read_manifest, read_passages
from helpers.repo import REPO

BROWSER_ROLES = {"model", "tokenizer", "ranker", "shards", "ort_js", "ort_wasm"}
needs_runtime = pytest.mark.skipif(
    ort_runtime_files() is None,
    reason="onnxruntime-web is not installed (npm ci in the checkout)",
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def statuses(app) -> list[str]:
    """The build log's lines about answers in the browser."""
    lines = app._status.getvalue().splitlines()
    return [line for line in lines if "ragcite:" in line and "in the browser" in line]


# -- what ships --------------------------------------------------------------------


@needs_runtime
def test_manifest_lists_each_browser_file_by_its_content(example_site: Path) -> None:
    manifest = read_manifest(example_site)
    folder = example_site / "_ragcite"
    assert BROWSER_ROLES | {"ort_mjs"} <= set(manifest["files"])
    for role in BROWSER_ROLES | {"ort_mjs"}:
        name = manifest["files"][role]
        data = (folder / name).read_bytes()
        assert sha256(data) == manifest["sha256"][role], role
        assert len(data) == manifest["bytes"][role], role
        assert f".{sha256(data)[:16]}." in name, (role, name)
    # the model the build embedded with as the browser runs it (its tables
    # looked up before they are dequantised: browser_model.py), the
    # tokenizer and ranker the server reads, and the runtime the wheel brought
    model = default_model_files()
    onnx = pytest.importorskip("onnx")
    from sphinx_ragcite.extension.browser_model import gather_first

    rewritten = onnx.load(str(model.model))
    assert gather_first(rewritten) == 2
    assert manifest["sha256"]["model"] == sha256(rewritten.SerializeToString())
    tokenizer = json.loads((folder / manifest["files"]["tokenizer"]).read_bytes())
    assert tokenizer == json.loads(model.tokenizer.read_bytes())
    ranker = (REPO / "sphinx_ragcite" / "answer" / "ranker.json").read_bytes()
    assert (folder / manifest["files"]["ranker"]).read_bytes() == ranker
    runtime = ort_runtime_files()
    assert runtime is not None
    for role, path in runtime.items():
        assert manifest["sha256"][role] == file_digest(path)[0], role
    # the emscripten glue is stored as .js: hosts serve that as JavaScript
    assert manifest["files"]["ort_mjs"].endswith(".js")


@needs_runtime
def test_shards_hold_each_passage_and_its_sentence_vectors(example_site: Path) -> None:
    manifest = read_manifest(example_site)
    folder = example_site / "_ragcite"
    listing = json.loads((folder / manifest["files"]["shards"]).read_bytes())
    records = read_passages(example_site)
    static = read_static((folder / manifest["files"]["static"]).read_bytes())
    offsets = np.load(folder / manifest["files"]["sentence_offsets"])
    codes = np.load(folder / manifest["files"]["sentence_embeddings"])
    scales = np.load(folder / manifest["files"]["sentence_scales"])
    assert listing["rows"] == len(records)
    assert listing["dim"] == codes.shape[1]
    row = 0
    for count, name in listing["shards"]:
        data = (folder / name).read_bytes()
        assert name == shards.shard_name(data)  # named by its content
        assert 1 <= count <= shards.ROWS_PER_SHARD
        rows = shards.read_shard(data)
        assert len(rows) == count
        assert len({records[r]["docname"] for r in range(row, row + count)}) == 1
        for found in rows:
            # the browser's record: the static index's fields, the listing's,
            # the shard's: together the build's record, exactly
            whole = {
                **static_passage(static, row),
                **shards.row_meta(listing, row),
                **found.record,
            }
            assert whole == records[row]
            assert found.sentences is not None
            start, end = offsets[row], offsets[row + 1]
            np.testing.assert_array_equal(found.sentences[0], scales[start:end])
            np.testing.assert_array_equal(found.sentences[1], codes[start:end])
            row += 1
    assert row == len(records)
    # every shard file is listed, and nothing else is in shards/
    listed = {name for _, name in listing["shards"]}
    on_disk = {p.relative_to(folder).as_posix() for p in (folder / "shards").iterdir()}
    assert on_disk == listed


@needs_runtime
def test_the_site_ships_the_engines_scripts(example_site: Path) -> None:
    static = example_site / "_static" / "ragcite"
    for name in assets.BROWSER_SCRIPTS:
        assert (static / name).read_bytes() == (REPO / "js" / name).read_bytes()
    page = (example_site / "index.html").read_text("utf-8")
    assert 'data-ragcite-browser="on"' in page
    # loaded on demand: no page names them
    for name in (*assets.BROWSER_SCRIPTS, *assets.ENGINE_SCRIPTS):
        assert f"ragcite/{name}" not in page


def test_the_worker_loads_what_the_build_ships(node: str) -> None:
    """One order for the engine's scripts, the build's: the worker reads it
    from spec.js (the worker once missed sentences, retrieve and evidence)."""
    listed = subprocess.run(
        [
            node,
            "-e",
            'console.log(JSON.stringify(require("./js/worker.js").CORE_SCRIPTS))',
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(listed) == list(assets.WORKER_SCRIPTS)


@pytest.mark.slow
@needs_runtime
def test_the_store_reads_the_built_site_in_node(node: str, example_site: Path) -> None:
    """js/test/store.test.js's part that needs a real site."""
    result = subprocess.run(
        [node, "--test", "js/test/store.test.js"],
        cwd=REPO,
        env={**os.environ, "RAGCITE_TEST_SITE": str(example_site)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout
    assert "# skipped 0" in result.stdout


# -- what the option and a missing runtime leave out ------------------------------


def test_browser_answers_off_keeps_keyword_search_only(make_app, srcdir):
    app = build(
        make_app, "html", srcdir, confoverrides={"ragcite_browser_answers": False}
    )
    manifest = read_manifest(app.outdir)
    assert "embeddings" in manifest["files"]  # the index is today's
    assert not BROWSER_ROLES & set(manifest["files"])
    assert not (app.outdir / "_ragcite" / "shards").exists()
    assert not list((app.outdir / "_ragcite").glob("model.*"))
    for name in assets.BROWSER_SCRIPTS:
        assert not (app.outdir / "_static" / "ragcite" / name).exists()
    page = (app.outdir / "index.html").read_text("utf-8")
    assert 'data-ragcite-browser="off"' in page
    assert statuses(app) == []
    assert app.warning.getvalue().strip() == ""


def test_missing_runtime_is_one_log_line_and_keyword_search(
    make_app, srcdir, monkeypatch
):
    monkeypatch.setattr(browser_index, "_runtime_files", lambda: None)
    app = build(make_app, "html", srcdir)
    manifest = read_manifest(app.outdir)
    assert "embeddings" in manifest["files"]
    assert not BROWSER_ROLES & set(manifest["files"])
    assert not (app.outdir / "_ragcite" / "shards").exists()
    lines = statuses(app)
    assert len(lines) == 1, lines
    assert "onnxruntime-web" in lines[0]
    assert "npm did not run" in lines[0]
    assert "static mode stays keyword search" in lines[0]
    assert app.warning.getvalue().strip() == ""
    # the pages never start an engine the site does not have
    page = (app.outdir / "index.html").read_text("utf-8")
    assert 'data-ragcite-browser="off"' in page
    assert not (app.outdir / "_static" / "ragcite" / "worker.js").exists()


@needs_runtime
def test_the_log_says_how_many_mb_the_option_adds(make_app, srcdir):
    app = build(make_app, "html", srcdir)
    manifest = read_manifest(app.outdir)
    folder = app.outdir / "_ragcite"
    added = sum(manifest["bytes"][r] for r in BROWSER_ROLES | {"ort_mjs"})
    added += sum(p.stat().st_size for p in (folder / "shards").iterdir())
    lines = statuses(app)
    assert len(lines) == 1, lines
    said = re.search(r"answers in the browser add ([0-9.]+) MB", lines[0])
    assert said, lines[0]
    assert float(said.group(1)) == round(added / 1e6, 1)
    assert "ragcite_browser_answers = False" in lines[0]


def test_a_tokenizer_the_browser_cannot_read_is_refused(tmp_path: Path) -> None:
    bpe = tmp_path / "tokenizer.json"
    bpe.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    with pytest.raises(
        browser_index.Unavailable, match=r"WordPiece and Unigram.*'BPE'"
    ):
        browser_index.tokenizer_bytes(bpe)
    wordpiece = default_model_files().tokenizer
    compact = browser_index.tokenizer_bytes(wordpiece)
    assert json.loads(compact) == json.loads(wordpiece.read_bytes())


def test_runtime_roles_are_the_encoders_roles(tmp_path: Path) -> None:
    """The roles are ``ort_runtime_files()``' keys (the old code read roles
    from the keys' suffixes, found none, and shipped no engine at all)."""
    names = {
        "ort_js": "ort.wasm.min.js",
        "ort_wasm": "ort-wasm-simd-threaded.wasm",
        "ort_mjs": "ort-wasm-simd-threaded.mjs",
    }
    files = {role: tmp_path / name for role, name in names.items()}
    roles = browser_index.runtime_roles(files)
    assert roles == {
        "ort_js": ("ort.wasm.min.js", files["ort_js"]),
        "ort_wasm": ("ort-wasm-simd-threaded.wasm", files["ort_wasm"]),
        "ort_mjs": ("ort-wasm-simd-threaded.js", files["ort_mjs"]),
    }
    runtime = ort_runtime_files()
    if runtime is not None:  # this checkout's own files
        assert set(browser_index.runtime_roles(runtime)) == set(names)
    with pytest.raises(browser_index.Unavailable, match="ort_wasm"):
        browser_index.runtime_roles({k: v for k, v in files.items() if k != "ort_wasm"})


# -- rebuilding ----------------------------------------------------------------


@pytest.mark.slow
@needs_runtime
def test_two_clean_builds_write_the_same_bytes(make_app, rootdir, tmp_path):
    outs = []
    for name in ("a", "b"):
        src = tmp_path / name
        shutil.copytree(rootdir / "test-basic", src)
        outs.append(build(make_app, "html", src).outdir)
    assert index_files(outs[0]) == index_files(outs[1])
    first, second = (read_manifest(o) for o in outs)
    first.pop("built_at"), second.pop("built_at")
    assert first == second
    assert set(first["files"]) >= BROWSER_ROLES


@pytest.mark.slow
@needs_runtime
def test_a_rebuild_copies_nothing_again_and_an_edit_changes_its_shards(
    make_app, srcdir
):
    app = build(make_app, "html", srcdir)
    folder = app.outdir / "_ragcite"

    def stats() -> dict[str, tuple[int, int]]:
        return {
            p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in folder.rglob("*")
            if p.is_file() and p.name != "manifest.json"
        }

    before = stats()
    manifest = read_manifest(app.outdir)
    listing = json.loads((folder / manifest["files"]["shards"]).read_bytes())
    build(make_app, "html", srcdir)
    assert stats() == before  # not one file written again, the model included

    records = read_passages(app.outdir)
    first_doc = records[0]["docname"]
    page = srcdir / f"{first_doc}.rst"
    page.write_text(page.read_text("utf-8") + "\nA new closing sentence.\n", "utf-8")
    build(make_app, "html", srcdir)
    after = stats()
    new_listing = json.loads(
        (folder / read_manifest(app.outdir)["files"]["shards"]).read_bytes()
    )
    old_names = {name for _, name in listing["shards"]}
    new_names = {name for _, name in new_listing["shards"]}
    changed = old_names - new_names
    assert changed  # the edited document's shards
    kept = old_names & new_names
    assert kept  # the other documents' shards keep their names (and caches)
    for name in kept:
        assert after[name] == before[name]
    for name in changed:
        assert name not in after  # pruned
    model = manifest["files"]["model"]
    assert after[model] == before[model]


# -- the pieces ------------------------------------------------------------------


def record(pid: str, doc: str, text: str) -> dict:
    return {
        "passage_id": pid,
        "docname": doc,
        "url": f"{doc}.html#{pid}",
        "chapter": doc,
        "section": doc,
        "heading_path": [doc],
        "text": text,
        "snippet": text[:50],
        "char_start": 0,
        "char_end": len(text),
        "content_hash": "0" * 16,
    }


def test_shards_split_at_documents_and_every_few_rows() -> None:
    records = [record(f"ch1-sec0-p{i}", "a", "x") for i in range(1, 7)]
    records += [record("ch2-sec0-p1", "b", "y")]
    assert shards.shard_groups(records, 4) == [(0, 4), (4, 2), (6, 1)]
    assert shards.shard_groups(records, 0) == [(0, 6), (6, 1)]
    assert shards.shard_groups([], 4) == []


def test_a_shard_round_trips_and_refuses_damage() -> None:
    records = [
        record("ch1-sec0-p1", "a", "One. Two."),
        record("ch1-sec0-p2", "a", "Three."),
    ]
    vectors = shards.SentenceVectors(
        np.array([0, 2, 3]),
        np.arange(3 * 4, dtype=np.int8).reshape(3, 4),
        np.array([0.5, 1.5, 2.5], dtype=np.float32),
    )
    data = shards.shard_bytes(records, vectors, 0)
    rows = shards.read_shard(data)
    assert [r.record["text"] for r in rows] == ["One. Two.", "Three."]
    assert rows[1].sentences is not None
    np.testing.assert_array_equal(rows[1].sentences[1], vectors.codes[2:3])
    bare = shards.read_shard(shards.shard_bytes(records, None, 0))
    assert [r.sentences for r in bare] == [None, None]
    for bad in (data[:-1], data + b"\0", b"XXXX" + data[4:]):
        with pytest.raises(ValueError, match="shard"):
            shards.read_shard(bad)


def finish(writer: IndexWriter) -> dict:
    """The files every manifest must name, from one passage, then the manifest."""
    from sphinx_ragcite.formats.bm25 import bm25_files, build_bm25

    one = {"passage_id": "ch0-sec0-p1", "heading_path": ["T"], "text": "Tea."}
    writer.add("passages", "passages.jsonl", (json.dumps(one) + "\n").encode())
    for name, data in bm25_files(build_bm25([one])).items():
        writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    writer.add("static", "search.js", b"globalThis.x=1", alias=True)
    counts = {"passages": 1, "documents": 1, "moved": 0}
    return writer.finish({"counts": counts, "embedding": None})


def test_the_writer_copies_a_file_once_and_prunes_dropped_extras(
    tmp_path: Path,
) -> None:
    source = tmp_path / "model.onnx"
    source.write_bytes(b"weights" * 1000)
    writer = IndexWriter(tmp_path / "out")
    writer.add_file("model", "model.onnx", source, file_digest(source))
    writer.add_extra("shards/aaaa.bin", b"one")
    manifest = finish(writer)
    folder = tmp_path / "out" / "_ragcite"
    copied = folder / manifest["files"]["model"]
    assert copied.read_bytes() == source.read_bytes()
    assert manifest["bytes"]["model"] == 7000
    stamp = copied.stat().st_mtime_ns, copied.stat().st_ino
    again = IndexWriter(tmp_path / "out")
    again.add_file("model", "model.onnx", source, file_digest(source))
    again.add_extra("shards/bbbb.bin", b"two")
    finish(again)
    assert (copied.stat().st_mtime_ns, copied.stat().st_ino) == stamp
    assert not (folder / "shards" / "aaaa.bin").exists()
    assert (folder / "shards" / "bbbb.bin").read_bytes() == b"two"


@needs_runtime
def test_the_server_never_reads_the_browsers_files(
    example_site: Path, tmp_path: Path
) -> None:
    """A Python process has no use for ~38 MB of model and runtime copies: it
    loads a site whose browser files are gone."""
    from sphinx_ragcite.formats.manifest import read_manifest as load_manifest
    from sphinx_ragcite.retrieval.site import Site, read_site_files

    copy = tmp_path / "html"
    shutil.copytree(example_site, copy)
    folder = copy / "_ragcite"
    manifest = read_manifest(copy)
    for role in BROWSER_ROLES | {"ort_mjs"}:
        (folder / manifest["files"][role]).unlink()
    shutil.rmtree(folder / "shards")
    read = read_site_files(folder, load_manifest(folder))
    assert not set(read) & (BROWSER_ROLES | {"ort_mjs"})
    site = Site.load(copy)
    assert site.search("bloom", 3)
