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
