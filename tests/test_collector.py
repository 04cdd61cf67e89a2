"""Clean, incremental and parallel builds agree byte for byte."""

from __future__ import annotations

import os
import shutil
import time

import pytest

import sphinx_ragcite.extension.passages.collector as collector

from helpers.anchors import check_anchors
from helpers.builds import build, passages_bytes, read_passages


@pytest.fixture
def chunked(monkeypatch):
    """Docnames the chunker ran on, in order."""
    calls: list[str] = []
    real = collector.chunk_doctree

    def spy(doctree, docname, **kwargs):
        calls.append(docname)
        return real(doctree, docname, **kwargs)

    monkeypatch.setattr(collector, "chunk_doctree", spy)
    return calls


def touch(path) -> None:
    later = time.time() + 5
    os.utime(path, (later, later))


@pytest.mark.slow
def test_clean_incremental_and_parallel_builds_are_identical(
    make_app, srcdir, tmp_path, chunked
):
    app = build(make_app, "html", srcdir)
    clean = passages_bytes(app.outdir)
    assert len(chunked) == 8

    chunked.clear()
    touch(srcdir / "first.rst")
    app = build(make_app, "html", srcdir)
    assert chunked == ["first"]  # only the touched document is re-chunked
    assert passages_bytes(app.outdir) == clean

    parallel_src = tmp_path / "parallel"
    shutil.copytree(srcdir, parallel_src, ignore=shutil.ignore_patterns("_build"))
    app = build(make_app, "html", parallel_src, parallel=2)
    assert app.warning.getvalue() == ""
    assert passages_bytes(app.outdir) == clean
    check_anchors(app.outdir)


@pytest.mark.slow
def test_edits_update_only_what_changed(make_app, srcdir, chunked):
    app = build(make_app, "html", srcdir)
    before = {r["passage_id"]: r for r in read_passages(app.outdir)}

    beta = srcdir / "first.rst"
    beta.write_text(
        beta.read_text().replace("Beta text at level two.", "Beta text, edited."),
        "utf-8",
    )
    (srcdir / "zorphan.rst").unlink()
    chunked.clear()
    app = build(make_app, "html", srcdir)
    assert chunked == ["first"]
    after = {r["passage_id"]: r for r in read_passages(app.outdir)}
    assert after["ch1-sec2-p1"]["text"] == "Beta text, edited."
    assert after["ch1-sec2-p1"]["content_hash"] != before["ch1-sec2-p1"]["content_hash"]
    assert "ch7-sec0-p1" not in after  # deleted document pruned
    for pid, record in before.items():
        if record["docname"] not in ("first", "zorphan"):
            assert after[pid] == record
        elif pid != "ch1-sec2-p1" and pid in after:
            assert after[pid]["content_hash"] == record["content_hash"]
    check_anchors(app.outdir)


@pytest.mark.slow
def test_new_chapter_renumbers_and_rewrites_later_pages(make_app, srcdir):
    app = build(make_app, "html", srcdir)
    (srcdir / "new.rst").write_text("New Chapter\n===========\n\nFresh text.\n")
    index = srcdir / "index.rst"
    index.write_text(index.read_text().replace("   first\n", "   new\n   first\n"))
    app = build(make_app, "html", srcdir)
    records = {r["passage_id"]: r for r in read_passages(app.outdir)}
    assert records["ch1-sec0-p1"]["docname"] == "new"
    assert records["ch2-sec0-p1"]["docname"] == "first"
    assert records["ch4-sec0-p1"]["docname"] == "part/inner"
    # pages that were not edited carry their new anchors too
    check_anchors(app.outdir)
