"""The browser engine from page to page (issue 42), in Chromium on a site served
by a plain file server: a private window keeps the engine's files in Cache
Storage for the later pages of a visit (checked again when read, one build's
files at most), the panel says when the engine starts after its download,
and the model the site ships turns only the rows a question needs into
float32 (the same vectors in a fraction of a tab's memory).

The times and the memory are measured in benchmarks/engine_start.py, never
asserted here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.browser import CHROMIUM, LAUNCH_ARGS, QUESTION, ask, watched
from helpers.builds import read_manifest
from helpers.repo import REPO
from helpers.servers import serve

#: The files a later page must not fetch again (the runtime and the model).
LARGE = ("model", "ort_wasm")


def bodies(served: list[tuple[str, str, int]], name: str) -> int:
    """How many times the server sent *name* (under _ragcite/) in full."""
    return sum(
        1 for _, path, code in served if path == f"/_ragcite/{name}" and code == 200
    )


def cached_urls(page) -> list[str]:
    """The URLs the page's origin keeps in the engine's Cache Storage."""
    return page.evaluate(
        """async () => {
          const out = [];
          for (const name of await caches.keys()) {
            if (!name.startsWith("ragcite-engine ")) continue;
            const cache = await caches.open(name);
            for (const request of await cache.keys()) out.push(request.url);
          }
          return out.sort();
        }"""
    )


def test_a_later_page_in_a_private_window_fetches_neither_model_nor_runtime(
    watched_page, engine_site: Path
) -> None:
    files = read_manifest(engine_site)["files"]
    page = watched_page
    with serve(engine_site) as (base, served):
        page.goto(f"{base}/index.html")
        assert ask(page, QUESTION)["metadata"]["engine"] == "browser"
        for later in ("beans.html", "brewing/pour_over.html"):
            page.goto(f"{base}/{later}")
            answer = ask(page, "What grind size suits espresso?")
            assert answer["metadata"]["engine"] == "browser"
        for role in LARGE:
            assert bodies(served, files[role]) == 1, (role, served)
        kept = cached_urls(page)
    assert f"{base}/_ragcite/{files['model']}" in kept
    assert f"{base}/_ragcite/{files['ort_wasm']}" in kept


def test_the_cache_keeps_only_the_files_of_the_current_build(
    watched_page, engine_site: Path, tmp_path: Path
) -> None:
    """A new build names new files: the next visit deletes the old ones
    from the cache, so it never holds more than one build."""
    root = tmp_path / "html"
    shutil.copytree(engine_site, root)
    page = watched_page
    with serve(root) as (base, _):
        page.goto(f"{base}/index.html")
        ask(page, QUESTION)
        manifest_path = root / "_ragcite" / "manifest.json"
        manifest = json.loads(manifest_path.read_text("utf-8"))
        before = set(cached_urls(page))
        old = manifest["files"]["model"]
        assert f"{base}/_ragcite/{old}" in before
        # "rebuild": the model under a new name (same bytes, same checksum)
        new = "model.0123456789abcdef.onnx"
        (root / "_ragcite" / old).rename(root / "_ragcite" / new)
        manifest["files"]["model"] = new
        manifest_path.write_text(json.dumps(manifest), "utf-8")
        page.goto(f"{base}/beans.html")
        assert ask(page, QUESTION)["metadata"]["engine"] == "browser"
        page.wait_for_timeout(300)
        after = set(cached_urls(page))
    assert f"{base}/_ragcite/{old}" not in after
    assert f"{base}/_ragcite/{new}" in after
    named = {f"{base}/_ragcite/{n}" for n in manifest["files"].values()}
    assert after <= named, after - named


def test_a_damaged_copy_in_the_cache_is_not_run_but_fetched_again(
    watched_page, engine_site: Path
) -> None:
    files = read_manifest(engine_site)["files"]
    page = watched_page
    with serve(engine_site) as (base, served):
        page.goto(f"{base}/index.html")
        ask(page, QUESTION)
        url = f"{base}/_ragcite/{files['model']}"
        page.evaluate(
            """async (url) => {
              for (const name of await caches.keys()) {
                const cache = await caches.open(name);
                const junk = new Response("not a model");
                if (await cache.match(url)) await cache.put(url, junk);
              }
            }""",
            url,
        )
        page.goto(f"{base}/beans.html")
        answer = ask(page, QUESTION)
        assert answer["metadata"]["engine"] == "browser"
        assert bodies(served, files["model"]) == 2  # the damaged copy replaced


def test_the_panel_says_the_engine_is_starting_after_the_download(
    watched_page, engine_site: Path
) -> None:
    """The bar is full for seconds while the runtime compiles and the model
    starts: the label says so instead of "37.9 of 37.9 MB"."""
    with serve(engine_site) as (base, _):
        watched_page.goto(f"{base}/index.html")
        watched_page.evaluate("window.ragcite.open()")
        watched_page.fill("#ragcite-question", QUESTION)
        watched_page.press("#ragcite-question", "Enter")
        watched_page.locator(".ragcite-in-browser").wait_for(
            state="visible", timeout=120_000
        )
        shown = watched_page.evaluate("window.__progress")
        phases = [
            m for _, m in watched_page.evaluate("window.__messages") if m == "phase"
        ]
    assert "Starting the answer engine…" in shown, shown
    assert shown.index("Starting the answer engine…") > 0  # after the download
    assert phases == ["phase"]


def test_a_plain_http_host_answers_without_cache_storage(
    browser, engine_site: Path
) -> None:
    """On a host over plain HTTP (not localhost) the page is no secure
    context and has no Cache Storage: answers still come, from the HTTP
    cache and the network, with nothing in the console."""
    with serve(engine_site) as (base, _):
        port = base.rsplit(":", 1)[1]
        other = browser.browser_type.launch(
            executable_path=str(CHROMIUM),
            args=[*LAUNCH_ARGS, "--host-resolver-rules=MAP docs.example 127.0.0.1"],
        )
        try:
            context = other.new_context()
            page = watched(context.new_page())
            page.goto(f"http://docs.example:{port}/index.html")
            assert page.evaluate("window.isSecureContext") is False
            assert page.evaluate("typeof caches") == "undefined"
            assert ask(page, QUESTION)["metadata"]["engine"] == "browser"
            assert not page.errors, page.errors
            assert not [e for e in page.console_errors if "cache" in e.lower()]
        finally:
            other.close()


# -- the model as the browser runs it ---------------------------------------------


def test_the_shipped_model_looks_rows_up_before_it_dequantises(
    engine_site: Path,
) -> None:
    onnx = pytest.importorskip("onnx")
    model = onnx.load(
        str(engine_site / "_ragcite" / read_manifest(engine_site)["files"]["model"])
    )
    made_by = {out: n for n in model.graph.node for out in n.output}
    tables = {t.name: tuple(t.dims) for t in model.graph.initializer}
    gathers = [n for n in model.graph.node if n.op_type == "Gather"]
    # the word table's lookup reads the int8 table itself, not a float copy
    word = [n for n in gathers if tables.get(n.input[0], (0,))[0] > 30_000]
    assert word, [n.input[0] for n in gathers]
    assert all(made_by.get(n.input[0]) is None for n in word)


def test_node_gives_python_vectors_with_the_shipped_model(
    node: str, engine_site: Path
) -> None:
    """js/test/encode.test.js over the model the site ships (not the
    package's): Python's vectors, cosine >= 0.9999."""
    model = engine_site / "_ragcite" / read_manifest(engine_site)["files"]["model"]
    run = subprocess.run(
        [node, "--test", str(REPO / "js" / "test" / "encode.test.js")],
        env={**os.environ, "RAGCITE_MODEL_ONNX": str(model)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "# skipped 0" in run.stdout, run.stdout[-2000:]


def test_the_rewrite_gives_the_same_output_bit_for_bit() -> None:
    onnx = pytest.importorskip("onnx")
    import numpy as np
    import onnxruntime as ort

    from sphinx_ragcite.extension.browser_assets import question_model_files
    from sphinx_ragcite.extension.browser_model import gather_first

    source, _ = question_model_files()
    model = onnx.load(str(source))
    assert gather_first(model) == 2  # the word and the position tables
    ids = np.array([[101, 2129, 2146, 2003, 1996, 13066, 1029, 102]], dtype=np.int64)
    outputs = []
    for data in (source.read_bytes(), model.SerializeToString()):
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        feeds = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        outputs.append(session.run(None, feeds)[0])
    assert np.array_equal(outputs[0], outputs[1])
