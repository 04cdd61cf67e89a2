"""``python -m build``: what the sdist and the wheel hold, and that the wheel works.

The wheel is installed (``--no-deps``) into a fresh venv whose only other
entry on ``sys.path`` is this venv's site-packages (for the dependencies),
so ``sphinx_ragcite`` and its widget, tokenizer and data come from the wheel,
never from the checkout. About 20 s; deselect with ``-m "not packaging"``.
The build is isolated, as a release build is, so pip fetches hatchling.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

import sphinx_ragcite
from sphinx_ragcite.extension.assets import (
    BROWSER_SCRIPTS,
    ENGINE_SCRIPTS,
    WIDGET_FILES,
)
from sphinx_ragcite.extension.browser_assets import (
    NPM_DIST,
    ORT_MISSING,
    WHEEL_FOLDER,
    ort_runtime_files,
)

from helpers.builds import Builds, read_manifest
from helpers.repo import REPO, ROOTS

pytestmark = pytest.mark.packaging

#: Every file a wheel must carry besides the Python modules.
WHEEL_DATA = [
    *(
        f"sphinx_ragcite/static/{name}"
        for name in (*WIDGET_FILES, *BROWSER_SCRIPTS, *ENGINE_SCRIPTS)
    ),
    "sphinx_ragcite/static/types.d.ts",
    # the browser's Snowball stemmers besides English, with their licence
    "sphinx_ragcite/static/snowball/german.js",
    "sphinx_ragcite/static/snowball/COPYING",
    "sphinx_ragcite/models/minilm/tokenizer.json",
    "sphinx_ragcite/py.typed",
]
#: A sample of what the sdist must carry: enough to run the tests and build
#: the example book and the docs from it.
SDIST_FILES = [
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    "RELEASING.md",
    "LICENSE",
    "NOTICE",
    "sphinx_ragcite/__init__.py",
    "sphinx_ragcite/py.typed",
    "sphinx_ragcite/models/minilm/tokenizer.json",
    *(f"js/{name}" for name in WIDGET_FILES),
    "js/types.d.ts",
    "tests/conftest.py",
    "tests/test_packaging.py",
    "tests/roots/test-basic/conf.py",
    "example_book/conf.py",
    "example_book/qa.jsonl",
]
SDIST_FOLDERS = ["js", "tests", "tests/roots", "example_book", "docs"]
SDIST_FOLDERS += ["benchmarks", "tools"]


def run(*args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, check=False, **kwargs
    )
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(builds: Builds) -> dict[str, Path]:
    """``python -m build``, once per session (any worker): the sdist, then
    the wheel built from that sdist."""
    pytest.importorskip("build", reason="`pip install build` (in the test extra)")
    outdir = builds.once(
        "dist",
        "checkout",
        lambda out: run(sys.executable, "-m", "build", "--outdir", out, REPO),
    )
    version = sphinx_ragcite.__version__
    wheel = outdir / f"sphinx_ragcite-{version}-py3-none-any.whl"
    sdist = outdir / f"sphinx_ragcite-{version}.tar.gz"
    assert {p.name for p in outdir.iterdir()} == {sdist.name, wheel.name, ".done"}
    return {"wheel": wheel, "sdist": sdist}


def test_the_wheel_carries_the_widget_tokenizer_and_licences(
    dist: dict[str, Path],
) -> None:
    version = sphinx_ragcite.__version__
    info = f"sphinx_ragcite-{version}.dist-info"
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        for name in WIDGET_FILES:  # the very bytes of js/
            data = wheel.read(f"sphinx_ragcite/static/{name}")
            assert data == (REPO / "js" / name).read_bytes(), name
        metadata = wheel.read(f"{info}/METADATA").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    missing = [n for n in WHEEL_DATA if n not in names]
    assert missing == []
    assert {f"{info}/licenses/LICENSE", f"{info}/licenses/NOTICE"} <= names
    # only the package and its metadata; no tests, caches or source folders
    assert {n.split("/")[0] for n in names} == {"sphinx_ragcite", info}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert f"Version: {version}" in metadata
    assert "License-Expression: MIT" in metadata
    assert "Provides-Extra: llm" in metadata
    assert "ragcite = sphinx_ragcite.cli:main" in entry_points


def test_the_sdist_carries_sources_tests_book_and_docs(dist: dict[str, Path]) -> None:
    top = f"sphinx_ragcite-{sphinx_ragcite.__version__}"
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    assert [n for n in SDIST_FILES if n not in names] == []
    for folder in SDIST_FOLDERS:
        assert any(n.startswith(f"{folder}/") for n in names), folder
    assert not [
        n
        for n in names
        if "__pycache__" in n or "/_build/" in n or n.startswith((".venv", "dist/"))
    ]


def test_the_wheel_works_in_a_fresh_venv(dist: dict[str, Path], tmp_path: Path) -> None:
    """Install the wheel alone, then build a project and search it."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
        "--no-index", dist["wheel"])  # fmt: skip
    # Dependencies from this venv, *after* the new venv's own site-packages (a
    # plain path line: .pth files there, such as the editable install's, stay
    # unread, so the checkout never reaches sys.path).
    fresh_site = Path(
        run(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"
        ).stdout.strip()
    )
    (fresh_site / "zz_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}

    where = run(
        python, "-I", "-c",
        "import json, sphinx_ragcite as p, sphinx_ragcite.extension.assets as a, "
        "sphinx_ragcite.encoder as e, "
        "sphinx_ragcite.extension.browser_assets as b; "
        "print(json.dumps([p.__file__, str(a.widget_dir()), "
        "str(e.default_model_files().tokenizer), "
        "*map(str, (b.ort_runtime_files() or {}).values())]))",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    found = json.loads(where.stdout)
    # the wheel's own copy of the WASM runtime, when npm fetched it for the build
    assert len(found) == (6 if ort_runtime_files() else 3)
    for path in found:
        assert Path(path).resolve().is_relative_to(fresh_site.resolve()), path

    srcdir, outdir = tmp_path / "src", tmp_path / "html"
    shutil.copytree(ROOTS / "test-basic", srcdir)
    result = run(python, "-I", "-m", "sphinx", "-q", "-b", "html", srcdir, outdir,
                 "-d", tmp_path / "doctrees", cwd=tmp_path, env=env)  # fmt: skip
    assert result.stderr == ""
    manifest = read_manifest(outdir)
    assert manifest["embedding"] is not None  # the wheel's tokenizer was used
    assert manifest["counts"]["passages"] > 0
    for name in WIDGET_FILES:
        copied = outdir / "_static" / "ragcite" / name
        assert copied.read_bytes() == (REPO / "js" / name).read_bytes(), name
    assert "_static/ragcite/widget.js" in (outdir / "index.html").read_text("utf-8")

    # the console script, as installed from the wheel
    hits = run(venv / "bin" / "ragcite", "search", "alpha paragraph", "--site",
               outdir, "--json", cwd=tmp_path, env=env)  # fmt: skip
    assert json.loads(hits.stdout)["hits"]


def need_npm() -> dict[str, Path]:
    """The runtime ``npm ci`` fetched; else skip (fail under ``CI=true``)."""
    runtime = ort_runtime_files()
    if runtime is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{ORT_MISSING} (CI=true)")
        pytest.skip(ORT_MISSING)
    return runtime


def test_the_wheel_and_sdist_carry_the_wasm_runtime(dist: dict[str, Path]) -> None:
    """onnxruntime-web's three files, byte for byte; nothing else of node_modules."""
    runtime = need_npm()
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        ort = [n for n in wheel.namelist() if f"/{WHEEL_FOLDER}/" in n]
        for path in runtime.values():
            data = wheel.read(f"sphinx_ragcite/{WHEEL_FOLDER}/{path.name}")
            assert data == path.read_bytes(), path.name
    assert len(ort) == 3
    top = f"sphinx_ragcite-{sphinx_ragcite.__version__}"
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    npm = sorted(n for n in names if n.startswith("node_modules/"))
    assert npm == sorted(
        [
            "node_modules/onnxruntime-web/package.json",
            *(f"{NPM_DIST}/{path.name}" for path in runtime.values()),
        ]
    )
    assert {"package.json", "package-lock.json", "hatch_build.py"} <= names


def test_a_wheel_built_without_npm_says_so_in_one_line(tmp_path: Path) -> None:
    """No node_modules: the wheel builds, without the runtime, and says why."""
    pytest.importorskip("build", reason="`pip install build` (in the test extra)")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "hatch_build.py", "package.json", "README.md",
                 "LICENSE", "NOTICE"):  # fmt: skip
        shutil.copy(REPO / name, tree / name)
    for folder in ("sphinx_ragcite", "js"):
        shutil.copytree(
            REPO / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    outdir = tmp_path / "dist"
    result = run(sys.executable, "-m", "build", "--wheel", "--outdir", outdir, tree)
    said = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if "no browser answers" in line
    ]
    assert said == [
        "sphinx-ragcite: no browser answers in this wheel "
        "(onnxruntime-web: not in node_modules/; run `npm ci` first)"
    ]
    (wheel,) = outdir.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert "sphinx_ragcite/static/widget.js" in names
    assert not [n for n in names if f"/{WHEEL_FOLDER}/" in n]
