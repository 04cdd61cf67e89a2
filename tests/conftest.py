"""Shared fixtures: Sphinx's testing plugin and readers for the built index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ("sphinx.testing.fixtures",)

ROOTS = Path(__file__).parent / "roots"
REPO = Path(__file__).resolve().parents[1]
EXAMPLE_BOOK = REPO / "example_book"


@pytest.fixture(scope="session")
def rootdir() -> Path:
    return ROOTS


def read_manifest(outdir: Path) -> dict:
    return json.loads((outdir / "_ragcite" / "manifest.json").read_text("utf-8"))


def read_passages(outdir: Path) -> list[dict]:
    manifest = read_manifest(outdir)
    path = outdir / "_ragcite" / manifest["files"]["passages"]
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def passages_bytes(outdir: Path) -> bytes:
    manifest = read_manifest(outdir)
    return (outdir / "_ragcite" / manifest["files"]["passages"]).read_bytes()


def build(make_app, builder: str, srcdir: Path, **kwargs):  # type: ignore[no-untyped-def]
    """Build a project; clean up docutils registrations so the next app starts fresh."""
    app = make_app(builder, srcdir=srcdir, **kwargs)
    try:
        app.build()
    finally:
        app.cleanup()
    return app


def sphinx_build(srcdir: Path, outdir: Path, *options: str) -> str:
    """A real ``python -m sphinx`` run; returns its warnings (stderr)."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", *options, srcdir, outdir],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.fixture(scope="session")
def example_site(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """The example book built once per session (embeddings included)."""
    import shutil

    root = tmp_path_factory.mktemp("example_site")
    srcdir = root / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    outdir = root / "html"
    assert sphinx_build(srcdir, outdir, "-d", str(root / "doctrees")) == ""
    return outdir


#: What the edited copy of the example book says instead (test_sites.py).
BLOOM_V1 = "wait 30 to 45 seconds"
BLOOM_V2 = "wait 50 to 70 seconds"


@pytest.fixture(scope="session")
def example_site_v2(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """A second version of the example book: version 2.0, one paragraph edited."""
    import shutil

    root = tmp_path_factory.mktemp("example_site_v2")
    srcdir = root / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    page = srcdir / "brewing" / "pour_over.md"
    text = page.read_text("utf-8")
    assert BLOOM_V1 in text
    page.write_text(text.replace(BLOOM_V1, BLOOM_V2), "utf-8")
    conf = srcdir / "conf.py"
    lines = conf.read_text("utf-8").splitlines()
    lines = [
        'version = "2.0"' if line.startswith("version =") else line
        for line in lines
        if not line.startswith("release =")
    ]
    conf.write_text("\n".join([*lines, 'release = "2.0.1"', ""]), "utf-8")
    outdir = root / "html"
    assert sphinx_build(srcdir, outdir, "-d", str(root / "doctrees")) == ""
    return outdir
