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
