"""What the JS wiring costs a reader's page (issue 43, item 1): classic
scripts through one registry (``js/lib.js``, what ships) against one bundle.

The page loads the widget's scripts (``WIDGET_SCRIPTS``) on every page.
Three variants of the same built site, each served by a plain file server
and loaded in headless Chromium:

- ``classic``: as shipped, one deferred ``<script>`` per file;
- ``classic-min``: the same files, each minified by esbuild (what a build
  step could add without bundling);
- ``bundle``: one minified IIFE of the files in their order, as an
  ES-module source bundled by esbuild would ship.

For each: requests and bytes (raw and gzip, as a static host serves them),
and the time from navigation to the widget's ``window.ragcite`` in a fresh
context (cold HTTP cache) and on a reload (warm), median of ``--runs``.
esbuild is not a dependency of the project; give the binary with
``--esbuild`` (``npm i --prefix /tmp/esb esbuild@0.25.0``)::

    .venv/bin/python benchmarks/js_wiring.py \
        --esbuild /tmp/esb/node_modules/.bin/esbuild
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._harness import RESULTS, envelope, example_build, table, write_result
from benchmarks.browser_answers import CHROMIUM, LAUNCH_ARGS, _serve
from sphinx_ragcite.extension.assets import STATIC_FOLDER, WIDGET_SCRIPTS

#: Records when the widget publishes its API (``window.ragcite``).
READY = """
(() => {
  let api;
  Object.defineProperty(window, "ragcite", {
    configurable: true,
    get: () => api,
    set: (value) => { api = value; window.__ragciteReady = performance.now(); },
  });
})();
"""


def gz(data: bytes) -> int:
    return len(gzip.compress(data, 9, mtime=0))


def variant(site: Path, work: Path, kind: str, esbuild: str) -> Path:
    """A copy of *site* whose pages load the widget as *kind* says."""
    out = work / kind
    shutil.copytree(site, out)
    folder = out / "_static" / STATIC_FOLDER
    if kind == "classic":
        return out
    if kind == "classic-min":
        for name in WIDGET_SCRIPTS:
            path = folder / name
            run = [
                esbuild,
                str(path),
                "--minify",
                f"--outfile={path}",
                "--allow-overwrite",
            ]
            subprocess.run(run, check=True, capture_output=True)
        return out
    joined = "\n;\n".join((folder / n).read_text("utf-8") for n in WIDGET_SCRIPTS)
    (folder / "all.src.js").write_text(joined, "utf-8")
    bundle = folder / "bundle.js"
    run = [esbuild, str(folder / "all.src.js"), "--minify", f"--outfile={bundle}"]
    subprocess.run(run, check=True, capture_output=True)
    for page in out.rglob("*.html"):
        html = page.read_text("utf-8")
        prefix = "../" * (len(page.relative_to(out).parts) - 1)
        where = re.escape(f"{prefix}_static/ragcite/")
        for name in WIDGET_SCRIPTS[:-1]:
            tag = rf'<script defer="defer" src="{where}{name}\?v=[0-9a-f]+"></script>'
            html = re.sub(tag, "", html)
        html = re.sub(
            rf'src="{re.escape(prefix)}_static/ragcite/widget\.js\?v=',
            f'src="{prefix}_static/ragcite/bundle.js?v=',
            html,
        )
        page.write_text(html, "utf-8")
    return out


def bytes_of(root: Path, kind: str) -> dict[str, int]:
    folder = root / "_static" / STATIC_FOLDER
    names = ["bundle.js"] if kind == "bundle" else list(WIDGET_SCRIPTS)
    data = [(folder / n).read_bytes() for n in names]
    return {
        "requests": len(names),
        "raw": sum(len(d) for d in data),
        "gzip": sum(gz(d) for d in data),
    }


def ready_times(root: Path, runs: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    cold: list[float] = []
    warm: list[float] = []
    seen: set[str] = set()
    with _serve(root) as (url, _sent), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        for _ in range(runs):
            context = browser.new_context()
            context.add_init_script(READY)
            page = context.new_page()
            page.on(
                "request", lambda r: seen.add(r.url.split("?")[0].rsplit("/", 1)[-1])
            )
            for times in (cold, warm):
                page.goto(f"{url}/index.html")
                page.wait_for_function("window.__ragciteReady !== undefined")
                times.append(page.evaluate("window.__ragciteReady"))
            context.close()
        browser.close()
    return {
        "cold_ms": round(statistics.median(cold), 1),
        "warm_ms": round(statistics.median(warm), 1),
        "cold_all": [round(t, 1) for t in cold],
        "warm_all": [round(t, 1) for t in warm],
        "scripts_requested": sorted(n for n in seen if n.endswith(".js")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--esbuild", required=True, help="the esbuild binary")
    parser.add_argument(
        "--site", type=Path, help="a built site (default: example book)"
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS / "js_wiring.json")
    args = parser.parse_args(argv)
    site = args.site or example_build()[0]
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("classic", "classic-min", "bundle"):
            root = variant(site, Path(tmp), kind, args.esbuild)
            rows[kind] = {**bytes_of(root, kind), **ready_times(root, args.runs)}
    head = [
        "variant",
        "requests",
        "raw KB",
        "gzip KB",
        "ready cold ms",
        "ready warm ms",
    ]
    body = [
        [
            kind,
            str(r["requests"]),
            f"{r['raw'] / 1024:.1f}",
            f"{r['gzip'] / 1024:.1f}",
            f"{r['cold_ms']:.0f}",
            f"{r['warm_ms']:.0f}",
        ]
        for kind, r in rows.items()
    ]
    print(table(head, body))
    write_result(args.out, {**envelope("js_wiring", runs=args.runs), "variants": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
