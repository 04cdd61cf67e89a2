"""The extension never breaks an author's build.

Real projects brought two breakages (a ``:ref:`` to a lazily translated
label title crashed ``build-finished``; MyST warned about the passage
store's domain). Beyond those fixes: a failure in one document costs that
document its passages and one ``ragcite.document`` warning; a failure in
writing the index costs one ``ragcite.index`` warning and leaves the previous
``_ragcite/`` as it was, even when the build is killed half-way.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sphinx.locale import _

import sphinx_ragcite.extension as extension
import sphinx_ragcite.extension.index as index_build
import sphinx_ragcite.extension.passages.collector as collector
import sphinx_ragcite.extension.passages.records as records_module
import sphinx_ragcite.extension.writer as writer
from sphinx_ragcite.extension.index import config_text
from sphinx_ragcite.retrieval.site import Site

from helpers.anchors import check_anchors
from helpers.builds import build, read_manifest, read_passages, sphinx_build

REPO = Path(__file__).resolve().parents[1]


def copy_root(rootdir: Path, tmp_path: Path, name: str, dest: str = "src") -> Path:
    path = tmp_path / dest
    shutil.copytree(rootdir / f"test-{name}", path)
    return path


def snapshot(outdir: Path) -> dict[str, bytes]:
    """Every file of ``_ragcite/``, by name."""
    directory = outdir / "_ragcite"
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def named_files(outdir: Path) -> set[str]:
    """What a reader may open: the manifest, the files it names, and the
    shards the browser's shard listing and search root name."""
    manifest = read_manifest(outdir)
    named = {"manifest.json", *manifest["files"].values()}
    folder = outdir / "_ragcite"
    if "shards" in manifest["files"]:
        listing = folder / manifest["files"]["shards"]
        named |= {name for _, name in json.loads(listing.read_bytes())["shards"]}
    if "search_root" in manifest["files"]:
        # the sharded search index's shards, which its root names
        root = json.loads((folder / manifest["files"]["search_root"]).read_bytes())
        named |= {name for _, name in root["terms"] + root["passages"]}
    return named


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- the two breakages found on real projects -----------------------------------


@pytest.mark.slow
def test_quickstart_index_with_translated_standard_labels(make_app, rootdir, tmp_path):
    """``* :ref:`genindex``` and friends in a German project build cleanly."""
    app = build(make_app, "html", copy_root(rootdir, tmp_path, "quickstart"))
    assert app.warning.getvalue() == ""
    texts = {r["passage_id"]: r["text"] for r in check_anchors(app.outdir)}
    # the titles Sphinx prints for the standard labels, in the book's language
    assert texts["ch0-sec1-p1"] == "Stichwortverzeichnis\nModulindex\nSuche"
    # a :ref: to a label in another document, and a :doc:
    assert texts["ch0-sec0-p1"].startswith(
        "Add your content using reStructuredText syntax. See Installing the "
        "package for how to install the package, and Usage for how to use it."
    )
    assert "The general index lists every term, and Suche finds" in texts["ch1-sec2-p1"]
    manifest = read_manifest(app.outdir)
    assert manifest["language"] == "de"
    assert (manifest["project"], manifest["author"]) == ("Demo", "Me")


@pytest.mark.slow
def test_myst_links_resolved_through_every_domain(rootdir, tmp_path):
    """MyST asks each domain to resolve ``[text](target)``; ours answers none.

    Built with ``-W`` in its own process: myst-parser alone, without the
    myst-nb registrations of other tests.
    """
    out = tmp_path / "html"
    assert sphinx_build(copy_root(rootdir, tmp_path, "myst-xref"), out, "-W") == ""
    html = (out / "index.html").read_text("utf-8")
    assert 'href="guide.html#setting-up"' in html
    assert 'href="guide.html#tuning-notes"' in html
    texts = [r["text"] for r in check_anchors(out)]
    assert texts[0].startswith("Read the setup page first, or jump to the tuning")


def test_config_values_reach_the_manifest_as_text(make_app, rootdir, tmp_path):
    overrides = {"copyright": ["2019, Ann", "2024, Bo"], "release": "2.0rc1"}
    srcdir = copy_root(rootdir, tmp_path, "basic")
    app = build(make_app, "html", srcdir, confoverrides=overrides)
    manifest = read_manifest(app.outdir)
    assert manifest["copyright"] == "2019, Ann, 2024, Bo"
    assert manifest["release"] == "2.0rc1"
    assert config_text(None) == ""
    assert config_text(1.0) == "1.0"
    assert config_text(_("Index")) == "Index"
    assert type(config_text(_("Index"))) is str


# -- one document fails ---------------------------------------------------------


@pytest.fixture
def clean_basic(make_app, rootdir, tmp_path):
    """The passages of test-basic built without any failure, by ID."""
    app = build(make_app, "html", copy_root(rootdir, tmp_path, "basic", "clean"))
    return {r["passage_id"]: r for r in read_passages(app.outdir)}


def assert_left_out(outdir: Path, clean: dict, docname: str) -> None:
    """*docname* has no passage; every other passage is as in a clean build."""
    now = {r["passage_id"]: r for r in read_passages(outdir)}
    assert now == {pid: r for pid, r in clean.items() if r["docname"] != docname}
    assert any(r["docname"] == docname for r in clean.values())
    check_anchors(outdir)


def fail_for(monkeypatch, module, name: str, docname: str, error: Exception) -> None:
    """``module.name(doc, docname, ...)`` raises *error* for *docname* only."""
    real = getattr(module, name)

    def failing(doc, this, **kwargs):
        if this == docname:
            raise error
        return real(doc, this, **kwargs)

    monkeypatch.setattr(module, name, failing)


@pytest.mark.slow
@pytest.mark.parametrize("parallel", [0, 2])
def test_a_document_failing_to_chunk_gets_no_passages(
    make_app, rootdir, tmp_path, monkeypatch, clean_basic, parallel
):
    error = RuntimeError("a node no one expected")
    fail_for(monkeypatch, collector, "chunk_doctree", "first", error)
    app = build(
        make_app, "html", copy_root(rootdir, tmp_path, "basic"), parallel=parallel
    )
    (warning,) = lines(app.warning.getvalue())
    assert "first.rst" in warning
    assert "RuntimeError: a node no one expected" in warning
    assert_left_out(app.outdir, clean_basic, "first")
    # the page is written, without passage anchors (it keeps chapter 1)
    assert 'id="ch1-' not in (app.outdir / "first.html").read_text("utf-8")
    assert 'id="ch2-sec0-p1"' in (app.outdir / "part" / "index.html").read_text()


@pytest.mark.slow
def test_a_document_failing_to_index_gets_no_passages(
    make_app, rootdir, tmp_path, monkeypatch, clean_basic
):
    error = TypeError("expected str instance, _TranslationProxy found")
    fail_for(monkeypatch, records_module, "doc_records", "part/inner", error)
    app = build(make_app, "html", copy_root(rootdir, tmp_path, "basic"))
    (warning,) = lines(app.warning.getvalue())
    assert "inner.rst" in warning
    assert "_TranslationProxy" in warning
    now = {r["passage_id"]: r for r in read_passages(app.outdir)}
    assert now == {
        pid: r for pid, r in clean_basic.items() if r["docname"] != "part/inner"
    }
    assert Site.load(app.outdir).search("alpha paragraph", 1)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an empty index warns of nothing
def test_document_warnings_can_be_suppressed(make_app, rootdir, tmp_path, monkeypatch):
    def chunk(doctree, docname, **kwargs):
        raise RuntimeError("every document fails")

    monkeypatch.setattr(collector, "chunk_doctree", chunk)
    srcdir = copy_root(rootdir, tmp_path, "basic")
    overrides = {"suppress_warnings": ["ragcite.document"]}
    app = build(make_app, "html", srcdir, confoverrides=overrides)
    assert app.warning.getvalue() == ""
    # an index of no passages is still an index
    assert read_manifest(app.outdir)["counts"]["passages"] == 0
    assert Site.load(app.outdir).search("root", 3) == []


def test_a_failure_while_anchoring_a_page_is_one_warning(
    make_app, rootdir, tmp_path, monkeypatch
):
    real = extension.add_anchors

    def anchors(env, doctree):
        if env.docname == "nosections":
            raise KeyError("ids")
        real(env, doctree)

    monkeypatch.setattr(extension, "add_anchors", anchors)
    app = build(make_app, "html", copy_root(rootdir, tmp_path, "basic"))
    (warning,) = lines(app.warning.getvalue())
    assert "nosections.rst" in warning
    assert "anchoring" in warning
    assert "KeyError" in warning
    assert read_manifest(app.outdir)["counts"]["passages"] > 0


# -- the index as a whole fails ---------------------------------------------------


def built_then_edited(make_app, rootdir, tmp_path):
    """test-basic built once, then first.rst edited: (srcdir, the index then)."""
    srcdir = copy_root(rootdir, tmp_path, "basic")
    app = build(make_app, "html", srcdir)
    before = snapshot(app.outdir)
    first = srcdir / "first.rst"
    first.write_text(first.read_text().replace("Alpha paragraph", "Edited para"))
    return srcdir, before


@pytest.mark.slow
def test_a_failing_index_step_keeps_the_previous_index(
    make_app, rootdir, tmp_path, monkeypatch
):
    srcdir, before = built_then_edited(make_app, rootdir, tmp_path)

    def bm25(*args):
        raise MemoryError("no room for the postings")

    monkeypatch.setattr(index_build, "build_bm25", bm25)
    app = build(make_app, "html", srcdir)
    (warning,) = lines(app.warning.getvalue())
    assert "index could not be written (MemoryError: no room" in warning
    assert "_ragcite/ is left as it was" in warning
    assert snapshot(app.outdir) == before
    site = Site.load(app.outdir)
    assert "Alpha paragraph one" in site.search("alpha paragraph", 1)[0].passage["text"]


@pytest.mark.slow
def test_a_full_disk_half_way_keeps_the_previous_index(
    make_app, rootdir, tmp_path, monkeypatch
):
    """New files written before the failure sit beside the old ones, unnamed."""
    srcdir, before = built_then_edited(make_app, rootdir, tmp_path)
    real = writer.atomic_write

    def write(path, data):
        if path.name.startswith("search."):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(writer, "atomic_write", write)
    app = build(make_app, "html", srcdir)
    (warning,) = lines(app.warning.getvalue())
    assert "No space left on device" in warning
    after = snapshot(app.outdir)
    assert {name: after[name] for name in before} == before
    assert set(after) - set(before)  # the new passages file was written ...
    assert named_files(app.outdir) <= set(before)  # ... but not named
    Site.load(app.outdir)

    monkeypatch.setattr(writer, "atomic_write", real)
    app = build(make_app, "html", srcdir)
    assert app.warning.getvalue() == ""
    texts = [r["text"] for r in read_passages(app.outdir)]
    assert any(t.startswith("Edited para one") for t in texts)
    # leftovers pruned: the manifest's files and the browser's two copies
    assert set(snapshot(app.outdir)) == named_files(app.outdir) | {
        "search.js",
        "moved.js",
    }


@pytest.mark.slow
def test_an_unwritable_index_folder_is_one_warning(rootdir, tmp_path):
    srcdir = copy_root(rootdir, tmp_path, "basic")
    out = tmp_path / "html"
    out.mkdir()
    (out / "_ragcite").write_text("a file where the folder should be")
    # show_warning_types: the default from Sphinx 8 on
    stderr = sphinx_build(srcdir, out, "-D", "show_warning_types=1")
    assert "Extension error" not in stderr
    (warning,) = lines(stderr)
    assert "passage index could not be written" in warning
    assert "[ragcite.index]" in warning
    assert (out / "index.html").is_file()


#: ``sphinx-build`` that dies (SIGKILL-like: no cleanup, no finally) at the
#: moment it would replace the manifest, after every data file is written.
KILLED_BUILD = """
import os, sys
from sphinx_ragcite.extension import writer
real = writer.atomic_write
def write(path, data):
    if path.name == "manifest.json":
        os._exit(9)
    real(path, data)
writer.atomic_write = write
from sphinx.cmd.build import main
sys.exit(main(sys.argv[1:]))
"""


def search(out: Path, query: str) -> list[dict]:
    options = ("--json", "--k", "3", "--mode", "bm25")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx_ragcite",
            "search",
            query,
            "--site",
            out,
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hits"]


@pytest.mark.slow
def test_a_killed_rebuild_leaves_the_old_index_answering(rootdir, tmp_path):
    srcdir = copy_root(rootdir, tmp_path, "basic")
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"
    options = ("-d", str(doctrees))
    sphinx_build(srcdir, out, *options)
    before = snapshot(out)
    assert search(out, "alpha paragraph")[0]["text"].startswith("Alpha paragraph one")

    first = srcdir / "first.rst"
    first.write_text(first.read_text().replace("Alpha paragraph", "Edited para"))
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BUILD, "-q", "-b", "html", *options, srcdir, out],
        capture_output=True,
        text=True,
        check=False,
    )
    assert killed.returncode == 9, killed.stderr
    after = snapshot(out)
    assert {name: after[name] for name in before} == before
    new = set(after) - set(before)
    assert any(name.startswith("passages.") for name in new), after.keys()
    # the old manifest, its checksums and its files: the old index answers
    Site.load(out)
    hit = search(out, "alpha paragraph")[0]
    assert hit["text"].startswith("Alpha paragraph one")

    sphinx_build(srcdir, out, *options)
    assert search(out, "edited para")[0]["text"].startswith("Edited para one")
    assert set(snapshot(out)) == named_files(out) | {"search.js", "moved.js"}


# -- anchors that themes and extensions move ----------------------------------------


@pytest.mark.slow
def test_anchors_survive_furo_inline_tabs_collapse_and_glossary(rootdir, tmp_path):
    """Seen on the Python Packaging User Guide: anchors doubled or lost.

    furo copies a table's ids to the ``<div>`` it wraps it in;
    sphinx-inline-tabs replaces a set of tabs by new elements;
    sphinx-toolbox's ``<details>`` and Sphinx's glossary render no id.
    """
    for module in ("furo", "sphinx_inline_tabs", "sphinx_toolbox"):
        pytest.importorskip(module)
    out = tmp_path / "html"
    assert sphinx_build(copy_root(rootdir, tmp_path, "widgets"), out, "-W") == ""
    records = {r["passage_id"]: r["text"] for r in check_anchors(out)}
    html = (out / "index.html").read_text("utf-8")
    assert '<div class="table-wrapper docutils container" id="ch0-sec0-p2">' in html
    assert '<dl class="simple glossary" id="ch0-sec0-p3">' in html
    # the set of tabs is one passage, anchored on the set
    assert '<div class="tab-set docutils container" id="ch0-sec0-p5">' in html
    assert records["ch0-sec0-p5"].startswith("Unix\nRun the installer")
    assert "Windows\nRun the installer from PowerShell" in records["ch0-sec0-p5"]
    assert records["ch0-sec0-p6"].startswith("Click to show the whole configuration")
    assert 'container" id="ch0-sec0-p6">\n<details' in html
