"""The browser engine from page to page (issue 42): what a later page of a
visit pays before its first answer.

A reader asks on one page, then moves to other pages and asks again. For each
later page, in headless Chromium on a site served by a plain file server
(``python -m http.server``'s handler, counting the bytes it sends):

- the time from the question to the answer, with a persistent profile (the
  HTTP cache on disk, as a reader's browser has) and in a private window
  (Playwright's ``new_context()``: off the record, an HTTP cache in memory that
  keeps nothing as large as the model), and in a private window again for a
  reader who opens the panel and types the question (``--typing``, 2 s): a
  later page of a visit starts the engine when the panel opens, from the
  caches;
- the bytes the page fetches for the engine (``_ragcite/`` and the engine's
  scripts) in a private window;
- the renderer's memory growth while the engine starts (a dedicated worker
  runs in its page's renderer), against the runtime's own floor: a worker
  that loads the same onnxruntime-web and opens a session over a one-node
  model;
- the main thread: the longest long task and the longest script (Long
  Animation Frames) while only the engine works, on every page;
- where the time goes, when the worker reports it (``ready``'s ``timings``).

    .venv/bin/python benchmarks/engine_start.py [--site DIR] [--label after]
        [--pages 3] [--load 2] [--typing 2] [--out benchmarks/results/engine_start.json]

``--site`` measures a build as it is (e.g. one built from an older checkout,
for a before/after); without it the example book is built with this
checkout. ``--load N`` keeps N processes busy while it runs (the machine a
reader's browser shares with other work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._browser_page import OBSERVE, blocking_scripts, engine_windows
from benchmarks._harness import (
    EXAMPLE_QA,
    RESULTS,
    envelope,
    example_build,
    read_jsonl,
    read_manifest,
    table,
    write_result,
)
from benchmarks.browser_answers import CHROMIUM, LAUNCH_ARGS, _renderer_rss, _serve

#: The first page a reader asks on, then the later pages of the visit.
FIRST_PAGE = "index.html"
LATER_PAGES = (
    "beans.html",
    "brewing/pour_over.html",
    "grinding.html",
    "water.html",
    "brewing/espresso.html",
    "tasting.html",
)
#: What the worker's `ready` message carries, kept by the page.
KEEP_READY = """
const Seen = window.Worker;
window.Worker = function (url, options) {
  const w = new Seen(url, options);
  w.addEventListener("message", (e) => {
    if (e.data && e.data.type === "ready") window.__ready = e.data;
    if (e.data && e.data.type === "phase") {
      window.__phases = window.__phases || [];
      window.__phases.push([performance.now(), e.data.phase]);
    }
  });
  return w;
};
window.__frames = [];
if (PerformanceObserver.supportedEntryTypes.includes("long-animation-frame")) {
  new PerformanceObserver((list) => {
    for (const f of list.getEntries()) {
      const scripts = f.scripts.reduce((n, s) => n + s.duration, 0);
      const render = f.renderStart ? f.startTime + f.duration - f.renderStart : 0;
      const end = f.startTime + f.duration;
      const layout = f.styleAndLayoutStart ? end - f.styleAndLayoutStart : 0;
      window.__frames.push([f.startTime, f.duration, scripts, render, layout,
        f.scripts.map((s) => [s.invoker, Math.round(s.duration)])]);
    }
  }).observe({ type: "long-animation-frame", buffered: true });
}
"""
TIMED = """async (q) => {
  const t = performance.now();
  const a = await window.ragcite.ask(q);
  return [t, performance.now() - t, a];
}"""
#: A request of the engine: its index folder, or the widget's scripts.
ENGINE_PATHS = ("/_ragcite/", "/_static/ragcite/")
#: The runtime's floor: a worker that opens a session over a one-node model.
FLOOR_PAGE = """<!doctype html><meta charset="utf-8"><title>floor</title>
<script>
window.floor = () => new Promise((resolve, reject) => {
  const w = new Worker("floor_worker.js");
  window.__floorWorker = w;
  w.onmessage = (e) => e.data.ok ? resolve(e.data) : reject(new Error(e.data.error));
  w.postMessage(null);
});
</script>"""
FLOOR_WORKER = """
onmessage = async () => {
  try {
    importScripts("../_ragcite/ORT_JS");
    ort.env.wasm.numThreads = 1;
    const here = location.href;
    ort.env.wasm.wasmPaths = { mjs: new URL("../_ragcite/ORT_MJS", here).href,
                               wasm: new URL("../_ragcite/ORT_WASM", here).href };
    const got = await fetch("tiny.onnx");
    const bytes = new Uint8Array(await got.arrayBuffer());
    const session = await ort.InferenceSession.create(bytes);
    const x = new ort.Tensor("float32", new Float32Array([1, -1, 2, -2]), [1, 4]);
    const out = await session.run({ x });
    self.kept = session;
    postMessage({ ok: true, y: Array.from(out.y.data) });
  } catch (error) {
    postMessage({ ok: false, error: String(error) });
  }
};
"""


def _tiny_model() -> bytes | None:
    """A one-node ONNX model (Relu over four floats), or None without onnx."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        return None
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t", [x], [y])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )
    return (
        model.SerializeToString() if onnx.checker.check_model(model) is None else None
    )


def _busy(until: float) -> None:
    while time.time() < until:
        pass


@contextlib.contextmanager
def _load(processes: int, seconds: float = 3600):
    """*processes* busy loops, for the run (none when 0)."""
    until = time.time() + seconds
    procs = [
        multiprocessing.Process(target=_busy, args=(until,)) for _ in range(processes)
    ]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
            p.join()


def _engine_bytes(sent: list[tuple[str, str, int]], mark: int) -> int:
    return sum(n for _, path, n in sent[mark:] if path.startswith(ENGINE_PATHS))


def _visit(
    page: Any,
    base: str,
    path: str,
    question: str,
    sent: list,
    dwell: float,
    typing: float | None = None,
) -> dict[str, Any]:
    """Open *path* in *page*'s tab, ask *question*, say what it cost, and
    stay *dwell* seconds (a reader reads the answer before moving on).
    *typing*: open the panel first and ask that many seconds later, as a
    reader who types the question does (the time is still question to
    answer)."""
    page.goto(f"{base}/{path}")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    mark = len(sent)
    if typing is not None:
        page.evaluate("window.ragcite.open()")
        page.wait_for_timeout(typing * 1000)
    rss_before = _renderer_rss()
    t0, ms, answer = page.evaluate(TIMED, question)
    rss_after = _renderer_rss()
    received = page.evaluate("window.__messages")
    posted = page.evaluate("window.__sent")
    windows = engine_windows(received, posted)
    held = blocking_scripts(page.evaluate("window.__scripts"), windows)
    long_tasks = [
        d
        for s, d in page.evaluate("window.__long")
        if any(lo <= s < hi for lo, hi in windows)
    ]
    ready = page.evaluate("window.__ready || null")
    # the longest frame while only the engine worked: its script time, its
    # rendering (style, layout, paint) and the rest (waiting for the thread)
    frames = [
        f
        for f in page.evaluate("window.__frames")
        if any(lo <= f[0] < hi for lo, hi in windows)
    ]
    worst = max(frames, key=lambda f: f[1], default=None)
    asked = next((t for t, kind in posted if kind == "load"), None)
    became_ready = next((t for t, kind in received if kind == "ready"), None)
    question_sent = next((t for t, kind in posted if kind == "ask"), None)
    answered = next((t for t, kind in received if kind == "answer"), None)
    steps = {  # ms: before the worker is asked to load; the load; the answer
        "to_load": asked - t0 if asked is not None else None,
        "to_ask": question_sent - became_ready
        if question_sent and became_ready
        else None,
        "answer": answered - question_sent if answered and question_sent else None,
    }
    phases = page.evaluate("window.__phases || []")
    page.wait_for_timeout(dwell * 1000)
    return {
        "page": path,
        "engine": (answer.get("metadata") or {}).get("engine"),
        "encode_ms": (answer.get("metadata") or {}).get("encode_ms"),
        "answer_ms": round(ms, 1),
        "load_to_ready_ms": (
            round(became_ready - asked, 1)
            if asked is not None and became_ready
            else None
        ),
        "page_steps_ms": {k: v if v is None else round(v, 1) for k, v in steps.items()},
        "engine_bytes": _engine_bytes(sent, mark),
        "all_bytes": sum(n for _, _, n in sent[mark:]),
        "renderer_rss_growth_mib": (
            round(rss_after - rss_before, 1)
            if rss_after is not None and rss_before is not None
            else None
        ),
        "longest_task_ms": round(max(long_tasks, default=0.0), 1),
        "longest_script_ms": round(max((s[1] for s in held), default=0.0), 1),
        "blocking_scripts": [[round(s[0]), round(s[1]), s[2], s[3]] for s in held],
        "longest_frame": worst
        and {
            "ms": round(worst[1]),
            "scripts_ms": round(worst[2]),
            "render_ms": round(worst[3]),
            "style_layout_ms": round(worst[4]),
            "scripts": worst[5],
        },
        "worker_timings": (ready or {}).get("timings"),
        "phases": phases,
    }


def _visit_pages(
    context: Any,
    base: str,
    sent: list,
    questions: list[str],
    pages: int,
    dwell: float,
    typing: float | None = None,
) -> list[dict]:
    """The first page asked at once; the later ones at once, or (*typing*)
    that many seconds after the panel opened."""
    page = context.pages[0] if context.pages else context.new_page()
    page.set_default_timeout(180_000)
    page.add_init_script(OBSERVE)
    page.add_init_script(KEEP_READY)
    out = [_visit(page, base, FIRST_PAGE, questions[0], sent, dwell)]
    for i, path in enumerate(LATER_PAGES[:pages]):
        out.append(_visit(page, base, path, questions[1 + i], sent, dwell, typing))
    return out


def _floor(browser: Any, base: str, site: Path) -> dict[str, Any] | None:
    """The renderer's growth for a worker that opens a session over a
    one-node model with the same runtime, and for nothing but the page."""
    model = _tiny_model()
    if model is None:
        return None
    files = read_manifest(site)["files"]
    folder = site / "_floor"
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text(FLOOR_PAGE, "utf-8")
    worker = FLOOR_WORKER
    for role in ("ort_js", "ort_mjs", "ort_wasm"):
        worker = worker.replace(role.upper(), files[role])
    (folder / "floor_worker.js").write_text(worker, "utf-8")
    (folder / "tiny.onnx").write_bytes(model)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{base}/_floor/index.html")
        page.wait_for_timeout(300)
        before = _renderer_rss()
        result = page.evaluate("window.floor()")
        page.wait_for_timeout(300)
        after = _renderer_rss()
    finally:
        context.close()
    return {
        "output": result["y"],
        "renderer_rss_growth_mib": (
            round(after - before, 1)
            if after is not None and before is not None
            else None
        ),
    }


def measure(
    site: Path, questions: list[str], pages: int, dwell: float, typing: float
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="ragcite-engine-start-"))
    try:
        served = work / "html"
        shutil.copytree(site, served)
        results: dict[str, Any] = {}
        with _serve(served) as (base, sent), sync_playwright() as p:
            persistent = p.chromium.launch_persistent_context(
                str(work / "profile"), executable_path=str(CHROMIUM), args=LAUNCH_ARGS
            )
            try:
                results["persistent"] = _visit_pages(
                    persistent, base, sent, questions, pages, dwell
                )
            finally:
                persistent.close()
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
            try:
                private = browser.new_context()
                results["private"] = _visit_pages(
                    private, base, sent, questions, pages, dwell
                )
                private.close()
                # a reader who opens the panel, then types for *typing* s
                reader = browser.new_context()
                results["private_reader"] = _visit_pages(
                    reader, base, sent, questions, pages, dwell, typing
                )
                reader.close()
                results["floor"] = _floor(browser, base, served)
            finally:
                browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


#: The ways a visit is measured, and what each is.
MODES = {
    "persistent": "HTTP cache on disk; each later page asked at once",
    "private": "off the record; each later page asked at once",
    "private_reader": "off the record; the panel opened, the question asked "
    "after the typing time",
}


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """The figures of the issue's note, from the pages' rows."""
    out: dict[str, Any] = {}
    for mode in MODES:
        if mode not in results:
            continue
        rows = results[mode]
        later = rows[1:]
        out[mode] = {
            "first_page_answer_ms": rows[0]["answer_ms"],
            "later_answer_ms_median": statistics.median(r["answer_ms"] for r in later),
            "later_answer_ms_max": max(r["answer_ms"] for r in later),
            "first_page_engine_bytes": rows[0]["engine_bytes"],
            "later_engine_bytes_median": statistics.median(
                r["engine_bytes"] for r in later
            ),
            "later_engine_bytes_max": max(r["engine_bytes"] for r in later),
            "renderer_growth_mib_median": _median(
                r["renderer_rss_growth_mib"] for r in later
            ),
            "renderer_growth_mib_first": rows[0]["renderer_rss_growth_mib"],
            "longest_script_ms": max(r["longest_script_ms"] for r in rows),
            "longest_task_ms": max(r["longest_task_ms"] for r in rows),
            "pages_with_script_over_50ms": sum(
                r["longest_script_ms"] > 50 for r in rows
            ),
            "pages_with_task_over_50ms": sum(r["longest_task_ms"] > 50 for r in rows),
            "pages": len(rows),
            "answered_in_browser": sum(r["engine"] == "browser" for r in rows),
        }
    floor = results.get("floor")
    out["runtime_floor_mib"] = floor and floor["renderer_rss_growth_mib"]
    return out


def _median(values: Any) -> float | None:
    found = [v for v in values if v is not None]
    return round(statistics.median(found), 1) if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site", type=Path, help="a built site (default: the example book)"
    )
    parser.add_argument("--label", default="", help="names the run in the result")
    parser.add_argument("--pages", type=int, default=3, help="later pages per mode")
    parser.add_argument(
        "--dwell", type=float, default=3.0, help="seconds on a page after its answer"
    )
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    parser.add_argument(
        "--typing",
        type=float,
        default=2.0,
        help="seconds from opening the panel to the question (private_reader)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "engine_start.json")
    args = parser.parse_args(argv)
    site = args.site or example_build()[0]
    if "model" not in read_manifest(site)["files"]:
        raise SystemExit(
            f"{site} ships no browser engine: is onnxruntime-web installed?"
        )
    questions = [q["question"] for q in read_jsonl(EXAMPLE_QA)][: args.pages + 1]
    with _load(args.load):
        results = measure(
            site, questions, min(args.pages, len(LATER_PAGES)), args.dwell, args.typing
        )
    figures = summary(results)
    for mode in MODES:
        kind = MODES[mode]
        print(f"\n{mode} ({kind})")
        body = [
            [
                r["page"],
                f"{r['answer_ms']:.0f}",
                f"{r['engine_bytes'] / 1e6:.2f}",
                "?"
                if r["renderer_rss_growth_mib"] is None
                else f"{r['renderer_rss_growth_mib']:.0f}",
                f"{r['longest_script_ms']:.0f} / {r['longest_task_ms']:.0f}",
                json.dumps(r["worker_timings"]) if r["worker_timings"] else "",
            ]
            for r in results[mode]
        ]
        head = [
            "page",
            "answer ms",
            "engine MB",
            "renderer +MiB",
            "script / task ms",
            "worker",
        ]
        print(table(head, body))
    floor = figures["runtime_floor_mib"]
    print(f"\nruntime floor (a session over a one-node model): +{floor} MiB")
    write_result(
        args.out,
        {
            **envelope(
                "engine_start",
                label=args.label,
                load=args.load,
                dwell_s=args.dwell,
                typing_s=args.typing,
                site=str(site),
            ),
            "summary": figures,
            "pages": results,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
