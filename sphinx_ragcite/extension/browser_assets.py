"""PLACEHOLDER of the encoder helper's module (issue 35, branch issue-enc).

Only so the browser build side can be tested on this branch: the lead keeps
the encoder helper's version of this file at merge. It finds the three
onnxruntime-web files the browser engine needs in a wheel's
``sphinx_ragcite/static/ort/`` or a checkout's ``node_modules``.
"""

from __future__ import annotations

from pathlib import Path

#: The CPU-only WASM build of onnxruntime-web, one thread.
ORT_FILES = (
    "ort.wasm.min.js",
    "ort-wasm-simd-threaded.wasm",
    "ort-wasm-simd-threaded.mjs",
)


def ort_runtime_files() -> dict[str, Path] | None:
    """File name -> path of each runtime file, or None when any is missing."""
    package = Path(__file__).resolve().parent.parent
    for folder in (
        package / "static" / "ort",
        package.parent / "node_modules" / "onnxruntime-web" / "dist",
    ):
        found = {name: folder / name for name in ORT_FILES}
        if all(path.is_file() for path in found.values()):
            return found
    return None
