"""The question encoder in the browser gives Python's ids and vectors.

``js/wordpiece.js`` and ``js/encode.js`` (onnxruntime-web, CPU-only WASM, one
thread) run in Node on the golden files ``tools/write_wordpiece_cases.py``
writes, on every code point against ``tokenizers``, and in a Web Worker of
headless Chromium served by a plain file server. The goldens are checked to
still be what Python gives (``RAGCITE_UPDATE_GOLDENS=1`` rewrites them).

Node and ``npm ci``'s node_modules are needed: without them these tests skip
saying so, and fail under ``CI=true``, where a skip would hide a regression.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from sphinx_ragcite.extension import browser_assets
from sphinx_ragcite.extension.browser_assets import (
    ORT_FILES,
    ort_runtime_files,
    question_model_files,
)

from helpers.ci import skip_or_fail
from helpers.node import need_node
from helpers.repo import REPO
from helpers.servers import serve

if TYPE_CHECKING:
    from types import ModuleType

UPDATE = os.environ.get("RAGCITE_UPDATE_GOLDENS") == "1"
MIN_COSINE = 0.9999
#: Why CI fails where Node or the runtime is missing.
WHY = "the browser encoder must be tested"


def need_node_and_ort() -> str:
    """Node's path, and the runtime from ``npm ci``; else skip (fail in CI)."""
    node = need_node(WHY)
    if ort_runtime_files() is None:
        skip_or_fail(browser_assets.ORT_MISSING, WHY)
    return node


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    """``tools/write_wordpiece_cases.py``, imported."""
    from tools import write_wordpiece_cases

    return write_wordpiece_cases


# -- the goldens are Python's ------------------------------------------------------


@pytest.mark.slow
def test_the_goldens_are_what_python_gives(tool: ModuleType) -> None:
    """Ids exactly; vectors to 1e-5 in cosine (their floats are rounded)."""
    encoder = tool.embedder()
    cases = tool.wordpiece_cases(encoder)
    vectors = tool.question_vectors(encoder)
    if UPDATE:
        tool.write(tool.WORDPIECE_CASES, cases)
        tool.write(tool.QUESTION_VECTORS, vectors)
    stored = json.loads(tool.WORDPIECE_CASES.read_text("utf-8"))
    assert [c["ids"] for c in stored["cases"]] == [c["ids"] for c in cases["cases"]]
    assert stored["cases"] == cases["cases"]
    stored_vectors = json.loads(tool.QUESTION_VECTORS.read_text("utf-8"))
    assert stored_vectors["model"] == vectors["model"]
    assert stored_vectors["max_tokens"] == vectors["max_tokens"] == 256
    assert len(stored_vectors["cases"]) == len(vectors["cases"]) == 50
    for old, new in zip(stored_vectors["cases"], vectors["cases"], strict=True):
        assert (old["text"], old["ids"]) == (new["text"], new["ids"])
        assert np.dot(old["vector"], new["vector"]) > 0.99999, old["text"]


def test_the_cases_reach_truncation_and_unk(tool: ModuleType) -> None:
    cases = json.loads(tool.WORDPIECE_CASES.read_text("utf-8"))["cases"]
    assert sum(c["about"] == "dev-set question" for c in cases) > 500
    assert sum(len(c["ids"]) == c["max_tokens"] == 256 for c in cases) >= 4
    assert any(c["ids"] == [101, 100, 102] for c in cases)  # a long word
    long = json.loads(tool.QUESTION_VECTORS.read_text("utf-8"))["cases"][-1]
    assert len(long["ids"]) == 256
    zh = [c for c in cases if re.search("[\u4e00-\u9fff]", c["text"])]
    assert len(zh) > 80


# -- Node ----------------------------------------------------------------------------


@pytest.mark.slow
def test_node_gives_python_ids_and_vectors() -> None:
    """``js/test/wordpiece.test.js`` and ``encode.test.js``, nothing skipped."""
    node = need_node_and_ort()
    model, _ = question_model_files()
    result = subprocess.run(
        [node, "--test", "js/test/wordpiece.test.js", "js/test/encode.test.js"],
        cwd=REPO,
        env={**os.environ, "RAGCITE_MODEL_ONNX": str(model)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "# fail 0" in out
    assert "# skipped 0" in out, out
    passed = re.search(r"^# pass (\d+)$", result.stdout, re.MULTILINE)
    assert passed, out
    assert int(passed.group(1)) == 11, out


#: Runs js/wordpiece.js over every code point, each as "x<c>x", and writes
#: the words it cuts, one line per code point (a file: no pipe limits).
SWEEP = r"""
const fs = require("fs");
const [wordpiece, tokenizer, output] = process.argv.slice(1);
const { WordPiece } = require(wordpiece);
const wp = WordPiece.fromJSON(JSON.parse(fs.readFileSync(tokenizer, "utf8")));
const lines = [];
for (let cp = 0; cp < 0x110000; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  lines.push(wp.words("x" + String.fromCodePoint(cp) + "x").join("\u0001"));
}
fs.writeFileSync(output, lines.join("\n"));
"""


@pytest.fixture(scope="module")
def python_words() -> list[str]:
    """``tokenizers``' words of "x<c>x" for every code point but surrogates."""
    from tokenizers import Tokenizer

    need_node_and_ort()  # no use computing them otherwise
    _, tokenizer_json = question_model_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    normalize = tokenizer.normalizer.normalize_str
    split = tokenizer.pre_tokenizer.pre_tokenize_str
    return [
        "\u0001".join(w for w, _ in split(normalize(f"x{chr(cp)}x")))
        for cp in (*range(0xD800), *range(0xE000, 0x110000))
    ]


@pytest.mark.slow
def test_every_code_point_is_cut_as_tokenizers_cuts(
    python_words: list[str], tmp_path: Path
) -> None:
    """Normalizer and pre-tokenizer, all 1,112,064 code points (no surrogates)."""
    node = need_node_and_ort()
    _, tokenizer_json = question_model_files()
    output = tmp_path / "words.txt"
    subprocess.run(
        [
            node,
            "-e",
            SWEEP,
            str(REPO / "js" / "wordpiece.js"),
            str(tokenizer_json),
            output,
        ],
        check=True,
        timeout=300,
    )
    js_words = output.read_text("utf-8").split("\n")
    assert len(js_words) == len(python_words) == 0x110000 - 0x800
    cps = [*range(0xD800), *range(0xE000, 0x110000)]
    wrong = [
        f"U+{cp:04X}: py {py!r} js {js!r}"
        for cp, py, js in zip(cps, python_words, js_words, strict=True)
        if py != js
    ]
    assert wrong == [], "\n".join(wrong[:40])


# -- where the files are found -------------------------------------------------------


def test_ort_runtime_files_in_this_checkout() -> None:
    need_node_and_ort()
    files = ort_runtime_files()
    assert files is not None
    assert set(files) == {"ort_js", "ort_mjs", "ort_wasm"}
    for key, path in files.items():
        assert path.name == ORT_FILES[key]
        assert path.is_relative_to(REPO / "node_modules" / "onnxruntime-web" / "dist")
    assert files["ort_wasm"].read_bytes()[:4] == b"\0asm"


def fake_tree(root: Path, pinned: str, installed: str | None, wheel: bool) -> Path:
    """A checkout's or a wheel's layout, with empty stand-ins for the files."""
    package = root / "sphinx_ragcite"
    package.mkdir(parents=True)
    (root / "package.json").write_text(
        json.dumps({"dependencies": {"onnxruntime-web": pinned}})
    )
    if installed is not None:
        npm = root / "node_modules" / "onnxruntime-web"
        (npm / "dist").mkdir(parents=True)
        (npm / "package.json").write_text(json.dumps({"version": installed}))
        for name in ORT_FILES.values():
            (npm / "dist" / name).write_bytes(b"")
    if wheel:
        (package / "static" / "ort").mkdir(parents=True)
        for name in ORT_FILES.values():
            (package / "static" / "ort" / name).write_bytes(b"")
    return package


@pytest.mark.parametrize(
    ("pinned", "installed", "wheel", "found"),
    [
        ("1.30.0", "1.30.0", False, "node_modules"),
        ("1.30.0", "1.29.0", False, None),  # a stale npm install counts as none
        ("1.30.0", None, False, None),
        ("1.30.0", None, True, "static"),  # a wheel: its own copy
    ],
)
def test_ort_runtime_files_where_and_when(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pinned: str,
    installed: str | None,
    wheel: bool,
    found: str | None,
) -> None:
    package = fake_tree(tmp_path, pinned, installed, wheel)
    monkeypatch.setattr(browser_assets, "_PACKAGE", package)
    files = ort_runtime_files()
    if found is None:
        assert files is None
    else:
        assert files is not None
        assert all(found in path.parts for path in files.values())
        assert all(path.is_file() for path in files.values())


def test_question_model_files_are_the_build_encoders() -> None:
    from sphinx_ragcite.encoder import default_model_files

    model, tokenizer = question_model_files()
    assert (model, tokenizer) == (
        default_model_files().model,
        default_model_files().tokenizer,
    )
    assert model.name == "model.onnx"
    assert tokenizer.name == "tokenizer.json"


def test_the_build_hook_reads_browser_assets_with_the_standard_library() -> None:
    """``hatch_build.py`` loads the module in a bare build environment."""
    code = (
        "import importlib.util, json, sys, pathlib;"
        "root = pathlib.Path(sys.argv[1]);"
        "spec = importlib.util.spec_from_file_location('m', root / sys.argv[2]);"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m);"
        "print(json.dumps([m.ORT_FILES, m.NPM_DIST, m.WHEEL_FOLDER]))"
    )
    hook = (REPO / "hatch_build.py").read_text("utf-8")
    path = re.search(r'ASSETS = "([^"]+)"', hook)
    assert path, "hatch_build.py names the module it reads"
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(REPO), path.group(1)],
        capture_output=True,
        text=True,
        check=True,
    )
    files, dist, folder = json.loads(result.stdout)
    assert files == ORT_FILES
    assert (dist, folder) == ("node_modules/onnxruntime-web/dist", "static/ort")


# -- Chromium: a real Web Worker ---------------------------------------------------

#: The worker: the runtime and the two modules by importScripts, as a site's
#: worker loads them; the runtime's files under content-addressed names, the
#: wasm found by URL or fetched by the worker itself (`binary`: as a site that
#: shows progress and checks the sha256 does).
WORKER = r"""
importScripts("ort.0123abcd.js", "lib.js", "wordpiece.js", "encode.js");
onmessage = async (event) => {
  const { texts, files, binary, sweep } = event.data;
  const base = self.location.href;
  const t0 = performance.now();
  // absolute URLs: a relative "ort/" would make import() see a bare specifier
  ort.env.wasm.wasmPaths = { mjs: new URL(files.ort_mjs, base).href };
  if (binary) {
    ort.env.wasm.wasmBinary = await (await fetch(files.ort_wasm)).arrayBuffer();
  } else {
    ort.env.wasm.wasmPaths.wasm = new URL(files.ort_wasm, base).href;
  }
  const [model, tokenizerJson] = await Promise.all([
    fetch("model.onnx").then((r) => r.arrayBuffer()),
    fetch("tokenizer.json").then((r) => r.json()),
  ]);
  const fetched = performance.now();
  const tokenizer = ragcite_lib.need("wordpiece").WordPiece.fromJSON(tokenizerJson);
  const encoder = await ragcite_lib.need("encode").createEncoder({
    ort, model, tokenizer, maxTokens: 256,
  });
  const loaded = performance.now();
  const vectors = [];
  const times = [];
  for (const text of texts) {
    const start = performance.now();
    vectors.push(Array.from(await encoder.embed(text)));
    times.push(performance.now() - start);
  }
  // every code point, as in Node: this browser's NFD and lower-casing too
  const expected = sweep ? (await (await fetch("words.txt")).text()).split("\n") : [];
  const wrong = [];
  let i = 0;
  for (let cp = 0; sweep && cp < 0x110000; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const got = tokenizer.words("x" + String.fromCodePoint(cp) + "x").join("\u0001");
    if (got !== expected[i++]) wrong.push(cp.toString(16));
  }
  postMessage({
    vectors, times, dim: encoder.dim, wrong, swept: i,
    fetchMs: fetched - t0, loadMs: loaded - t0, sessionMs: loaded - fetched,
    isolated: self.crossOriginIsolated,
  });
};
"""
PAGE = """<!doctype html><meta charset="utf-8"><title>encoder</title>
<script src="page.js"></script>"""
PAGE_JS = """
window.encode = (message) => new Promise((resolve, reject) => {
  const worker = new Worker("worker.js");
  worker.onmessage = (e) => { resolve(e.data); worker.terminate(); };
  worker.onerror = (e) => reject(new Error(e.message || "worker failed"));
  worker.postMessage(message);
});
"""
#: What a static host's page may allow: no 'unsafe-eval', no other origin.
CSP = (
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; "
    "worker-src 'self'; connect-src 'self'; object-src 'none'"
)


def test_chromium_worker_gives_python_vectors(
    python_words: list[str], tmp_path: Path, browser: Any
) -> None:
    """A question embedded in a Web Worker of headless Chromium (the
    session's, a context of its own), under a CSP without 'unsafe-eval',
    equals Python's; so does every code point's cut. Load and embed times
    printed."""
    need_node_and_ort()
    ort = ort_runtime_files()
    assert ort is not None
    model, tokenizer = question_model_files()
    names = {
        "ort_js": "ort.0123abcd.js",
        "ort_mjs": "ort.4567cdef.mjs",
        "ort_wasm": "ort.89ab0123.wasm",
    }
    for key, path in ort.items():
        shutil.copyfile(path, tmp_path / names[key])
    shutil.copyfile(model, tmp_path / "model.onnx")
    shutil.copyfile(tokenizer, tmp_path / "tokenizer.json")
    for name in ("lib.js", "wordpiece.js", "encode.js"):
        shutil.copyfile(REPO / "js" / name, tmp_path / name)
    (tmp_path / "worker.js").write_text(WORKER)
    (tmp_path / "words.txt").write_text("\n".join(python_words), "utf-8")
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "page.js").write_text(PAGE_JS)
    (tmp_path / "favicon.ico").write_bytes(b"")
    golden = json.loads((REPO / "tests/golden/question_vectors.json").read_text())
    cases = golden["cases"][:20]
    texts = [c["text"] for c in cases]

    with serve(tmp_path, csp=CSP) as (base, _):
        context = browser.new_context()
        page = context.new_page()
        requests: list[str] = []
        page.context.on("request", lambda r: requests.append(r.url))
        errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(f"{base}/index.html")
        files = {k: v for k, v in names.items() if k != "ort_js"}
        result = page.evaluate(
            "window.encode",
            {"texts": texts, "files": files, "binary": False, "sweep": True},
        )
        by_binary = page.evaluate(
            "window.encode",
            {"texts": texts[:1], "files": files, "binary": True, "sweep": False},
        )
        context.close()

    cosines = [
        float(np.dot(got, case["vector"]))
        for got, case in zip(result["vectors"], cases, strict=True)
    ]
    assert min(cosines) >= MIN_COSINE, list(zip(cosines, texts, strict=True))
    assert result["dim"] == golden["dim"]
    assert by_binary["vectors"] == result["vectors"][:1]
    assert result["isolated"] is False  # one thread: no COOP/COEP needed
    assert result["swept"] == len(python_words)
    assert result["wrong"] == []
    assert errors == []
    assert all(url.startswith(base) for url in requests), requests
    later = statistics.median(result["times"][1:])
    print(
        f"\nChromium worker: fetch {result['fetchMs']:.0f} ms, model load "
        f"{result['loadMs']:.0f} ms (session {result['sessionMs']:.0f} ms), first "
        f"embed {result['times'][0]:.1f} ms, later p50 {later:.1f} ms, "
        f"worst 1-cos {1 - min(cosines):.1e}"
    )
