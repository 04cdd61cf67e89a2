"""The embedding cache shared by clean builds (``ragcite_cache_dir``).

Every build here is a clean one (fresh output and doctree folders); only the
cache folder, always below ``tmp_path``, is shared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from sphinx.testing.util import SphinxTestApp

from sphinx_ragcite.extension.cache import (
    DOCTREE_FOLDER,
    ENV_VAR,
    SUFFIX,
    EmbeddingCache,
    default_dir,
    evict,
    resolve_dir,
)
from sphinx_ragcite.formats.sentence_vectors import CODES, SCALES

from helpers.builds import index_files, read_manifest, sphinx_build
from helpers.repo import ROOTS

BASIC = ROOTS / "test-basic"


def clean_build(
    tmp: Path, name: str, cache: Path | str, *options: str
) -> tuple[Path, str]:
    """A build into fresh ``tmp/name/{html,doctrees}`` with *cache*."""
    out = tmp / name / "html"
    warnings = sphinx_build(
        BASIC, out, "-d", str(tmp / name / "doctrees"),
        "-D", f"ragcite_cache_dir={cache}", *options,
    )  # fmt: skip
    return out, warnings


def embedded(out: Path) -> tuple[int, int]:
    info = read_manifest(out)["embedding"]
    return info["embedded"], info["sentences_embedded"]


def stages(out: Path) -> dict[str, float]:
    """The build's seconds by stage, kept beside its doctrees."""
    return json.loads((out.parent / "doctrees" / "ragcite-stages.json").read_text())


def named(out: Path, key: str) -> Path:
    """The index file the manifest lists under *key*."""
    return out / "_ragcite" / read_manifest(out)["files"][key]


def sentence_vectors(out: Path) -> np.ndarray:
    codes = np.load(named(out, CODES)).astype(np.float32)
    vectors = codes * np.load(named(out, SCALES))[:, None]
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def shards(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"v*-*/*{SUFFIX}"))


def aged(path: Path, seconds: float = 7200) -> Path:
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


@pytest.fixture(scope="module")
def cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A first build with an empty cache: its output and the cache it filled."""
    tmp = tmp_path_factory.mktemp("cold")
    cache = tmp / "cache"
    out, warnings = clean_build(tmp, "a", cache)
    assert warnings == ""
    return out, cache


@pytest.mark.slow
def test_second_clean_build_embeds_nothing(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    out, cache = cold
    manifest = read_manifest(out)
    assert manifest["embedding"]["embedded"] == manifest["counts"]["passages"] > 0
    assert embedded(out)[1] > 0
    assert shards(cache)
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    again, warnings = clean_build(tmp_path, "b", copy)
    assert warnings == ""
    assert embedded(again) == (0, 0)
    assert index_files(again) == index_files(out)
    # Nothing to embed: the model is never loaded (ragcite-stages.json).
    assert "load model" in stages(out)
    assert "load model" not in stages(again)


@pytest.mark.slow
def test_damaged_entries_are_recomputed(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    out, cache = cold
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    files = shards(copy)
    files[0].write_bytes(files[0].read_bytes()[:50])  # truncated
    files[1].write_bytes(b"not a zip file at all")
    again, warnings = clean_build(tmp_path, "b", copy)
    assert warnings.count("ragcite.cache") == 1, warnings
    assert "2 damaged file(s)" in warnings
    assert sum(embedded(again)) > 0
    assert index_files(again) == index_files(out)
    # rewritten whole: the next build trusts them again
    third, warnings = clean_build(tmp_path, "c", copy)
    assert warnings == ""
    assert embedded(third) == (0, 0)


@pytest.mark.slow
def test_none_keeps_vectors_with_the_doctrees(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _ = cold
    first, _ = clean_build(tmp_path, "a", "none")
    second, _ = clean_build(tmp_path, "b", "none")
    for build in (first, second):
        assert embedded(build)[0] == read_manifest(build)["counts"]["passages"]
        assert shards(build.parent / "doctrees" / DOCTREE_FOLDER)
        assert index_files(build) == index_files(out)
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "sphinx-ragcite").exists()


@pytest.mark.slow
def test_unwritable_cache_warns_once_and_builds(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _ = cold
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    built, warnings = clean_build(tmp_path, "a", blocker / "cache")
    assert warnings.count("WARNING") == 1, warnings
    assert "ragcite.cache" in warnings
    assert index_files(built) == index_files(out)


@pytest.mark.slow
def test_concurrent_builds_share_one_cache(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    out, _ = cold
    cache = tmp_path / "cache"

    def start(name: str, *options: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-m", "sphinx", "-q", "-b", "html",
                   "-d", str(tmp_path / name / "doctrees"),
                   "-D", f"ragcite_cache_dir={cache}",
                   *options, str(BASIC), str(tmp_path / name / "html")]  # fmt: skip
        return subprocess.Popen(command, stderr=subprocess.PIPE, text=True)

    runs = [start("a"), start("b", "-j", "2")]  # parallel read too
    for run in runs:
        _, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr
        assert stderr == ""
    for name in ("a", "b"):
        assert index_files(tmp_path / name / "html") == index_files(out)
    third, warnings = clean_build(tmp_path, "c", cache)
    assert warnings == ""
    assert embedded(third) == (0, 0)
    assert not list(cache.rglob("*.tmp"))


def own_shards(root: Path, model: str, count: int, rows: int, dim: int = 8) -> Path:
    """*count* shards of *rows* vectors each, written by the cache itself for
    *model* (one per first hex digit of the key); their folder."""
    cache = EmbeddingCache(root, model, None, 1 << 40)
    rng = np.random.default_rng(count)
    for digit in range(count):
        keys = [bytes([digit << 4]) + i.to_bytes(15, "big") for i in range(rows)]
        cache.put_many(keys, rng.standard_normal((rows, dim)).astype(np.float32))
    cache.save()
    assert len(list(cache.folder.iterdir())) == count
    return cache.folder


@pytest.mark.slow
def test_eviction_keeps_the_cache_under_its_bound(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    # 2 MiB of another model's shards, a day old
    old = own_shards(cache, "another model", 8, rows=650, dim=384)
    for path in old.iterdir():
        aged(path, 86400)
    _, warnings = clean_build(tmp_path, "a", cache, "-D", "ragcite_cache_max_mb=1")
    assert warnings == ""
    assert sum(p.stat().st_size for p in shards(cache)) <= 0.9 * (1 << 20)
    # the oldest went first: some of the old model's files, none of this build's
    assert len(list(old.iterdir())) < 8
    assert len(shards(cache)) - len(list(old.iterdir())) == len(shards(cold[1]))
    again, _ = clean_build(tmp_path, "b", cache, "-D", "ragcite_cache_max_mb=1")
    assert embedded(again) == (0, 0)


def test_evict_deletes_least_recently_used_first(tmp_path: Path) -> None:
    folder = own_shards(tmp_path, "a model", 10, rows=2)
    files = sorted(folder.iterdir())
    size = files[0].stat().st_size
    assert all(p.stat().st_size == size for p in files)
    now = time.time()
    for i, path in enumerate(files):
        os.utime(path, (now - 100 + i, now - 100 + i))
    assert evict(tmp_path, 10 * size) == []  # at the bound: nothing to do
    deleted = evict(tmp_path, 5 * size)
    # down to 90% of the bound: the five oldest and one more
    assert deleted == files[:6]


def test_shards_take_the_umask(tmp_path: Path) -> None:
    """Shard files are as private as the user's umask makes any file (they
    were forced to 0644): vectors are a lossy summary of the pages' text."""
    old = os.umask(0o077)
    try:
        folder = own_shards(tmp_path, "a model", 1, rows=2)
    finally:
        os.umask(old)
    [shard] = folder.iterdir()
    assert shard.stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700


def test_evict_touches_only_the_files_of_the_cache(tmp_path: Path) -> None:
    """Issue 33, defect 2, unit by unit: what eviction counts and deletes is
    a shard by folder, name and header, or a stale temporary file of its
    own naming; everything else stays, however old, and counts for nothing."""
    root = tmp_path / "cache"
    folder = own_shards(root, "a model", 3, rows=2)
    shard = folder / f"0{SUFFIX}"
    data = shard.read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"0{SUFFIX}").write_bytes(data)
    foreign_npz = tmp_path / "foreign.npz"
    np.savez(foreign_npz, scores=np.arange(1000, dtype=np.float32))
    theirs: dict[Path, bytes] = {
        root / "results.npz": foreign_npz.read_bytes(),
        root / "v1-experiment" / f"0{SUFFIX}": data,  # a shard, not in our folder
        root / "v2-notours" / f"0{SUFFIX}": data,
        folder / f"notes{SUFFIX}": data,  # not a shard's name
        folder / f"a{SUFFIX}": foreign_npz.read_bytes(),  # not a shard's header
        folder / f"b{SUFFIX}": b"\0" * 5000,
        root / ".notes.tmp": b"notes",
        folder / ".notes.tmp": b"notes",
        folder / ".3.abcd1234.tmp": b"notes in our naming",
        folder / ".4.abcd1234.tmp": foreign_npz.read_bytes(),
    }
    for path, content in theirs.items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
    links = [folder / f"c{SUFFIX}", root / f"v2-{'1' * 16}"]
    links[0].symlink_to(outside / f"0{SUFFIX}")
    links[1].symlink_to(outside, target_is_directory=True)
    # what a killed build leaves: an empty temporary file, or part of a shard
    stale = [folder / ".5.0000aaaa.tmp", folder / ".6.0000aaaa.tmp"]
    stale[0].write_bytes(b"")
    stale[1].write_bytes(data[:40])
    fresh = folder / ".7.0000aaaa.tmp"
    fresh.write_bytes(data[:40])
    # a format-1 folder (256 shards named by two hex digits) ages out too
    format1 = root / f"v1-{'0' * 16}"
    format1.mkdir()
    (format1 / f"ab{SUFFIX}").write_bytes(data)
    for path in [*theirs, *stale, shard, format1 / f"ab{SUFFIX}"]:
        aged(path, 86400)
    mine = [folder / f"{d}{SUFFIX}" for d in "012"]
    bound = sum(p.stat().st_size for p in mine) + len(data)  # ours only
    assert evict(root, bound) == []
    assert not any(p.exists() for p in stale)
    assert fresh.exists()
    # over the bound: the two old shards go, oldest first, then it is under 90%
    assert evict(root, bound * 5 // 8) == [shard, format1 / f"ab{SUFFIX}"]
    assert not format1.exists()  # emptied, so removed
    for path, content in theirs.items():
        assert path.read_bytes() == content, path
    assert all(p.is_symlink() for p in links)
    assert (outside / f"0{SUFFIX}").read_bytes() == data


def test_cache_folder_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf, doctrees = tmp_path / "docs", tmp_path / "doctrees"
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_dir() == tmp_path / "xdg" / "sphinx-ragcite"
    assert resolve_dir("", conf, doctrees) == tmp_path / "xdg" / "sphinx-ragcite"
    assert resolve_dir("_cache", conf, doctrees) == conf / "_cache"
    assert resolve_dir(str(tmp_path / "abs"), conf, doctrees) == tmp_path / "abs"
    assert resolve_dir("None", conf, doctrees) == doctrees / DOCTREE_FOLDER
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert resolve_dir("", conf, doctrees) == tmp_path / "env"
    assert resolve_dir("_cache", conf, doctrees) == conf / "_cache"


@pytest.mark.slow
def test_pooled_sentences_come_from_the_passage_pass(
    cold: tuple[Path, Path], tmp_path: Path
) -> None:
    """``ragcite_sentence_pooling = "passage"``: no sentence of a passage the
    encoder saw whole runs on its own; passages are the same bytes; a warm
    clean build is byte-identical and runs nothing."""
    separate, _ = cold
    cache = tmp_path / "cache"
    out, warnings = clean_build(
        tmp_path, "a", cache, "-D", "ragcite_sentence_pooling=passage"
    )
    assert warnings == ""
    info = read_manifest(out)["embedding"]
    assert info["sentence_pooling"] == "passage"
    assert info["embedded"] == read_manifest(out)["counts"]["passages"]
    assert info["sentences_embedded"] == 0  # the test book's passages fit 256 tokens
    assert info["sentences"] == read_manifest(separate)["embedding"]["sentences"]
    assert (
        named(out, "embeddings").read_bytes()
        == named(separate, "embeddings").read_bytes()
    )
    assert named(out, CODES).read_bytes() != named(separate, CODES).read_bytes()
    files = index_files(out)
    pooled, alone = sentence_vectors(out), sentence_vectors(separate)
    # The same sentences, seen in context: close, not equal.
    agreement = (pooled * alone).sum(axis=1)
    assert 0.4 < float(agreement.mean()) < 0.99
    again, warnings = clean_build(
        tmp_path, "b", cache, "-D", "ragcite_sentence_pooling=passage"
    )
    assert warnings == ""
    assert embedded(again) == (0, 0)
    assert index_files(again) == files


@pytest.mark.slow
def test_a_sentence_cut_off_by_truncation_is_embedded_on_its_own(
    tmp_path: Path,
) -> None:
    out, warnings = clean_build(
        tmp_path, "a", tmp_path / "cache",
        "-D", "ragcite_sentence_pooling=passage",
        "-D", "ragcite_embedding_max_tokens=16",
    )  # fmt: skip
    assert warnings == ""
    info = read_manifest(out)["embedding"]
    assert 0 < info["sentences_embedded"] < info["sentences"]


def twin_book(tmp_path: Path, text: str, *options: str) -> Path:
    """Two pages, the same paragraph under each page's own title; built."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text('extensions = ["sphinx_ragcite"]\n', "utf-8")
    (src / "index.rst").write_text(
        "Book\n====\n\n.. toctree::\n\n   a\n   b\n", "utf-8"
    )
    for page, title in (("a", "Writing an algorithm"), ("b", "Policy gradients")):
        (src / f"{page}.rst").write_text(f"{title}\n{'=' * len(title)}\n\n{text}\n")
    out = tmp_path / "html"
    sphinx_build(
        src, out, "-D", "ragcite_sentence_pooling=passage",
        "-D", f"ragcite_cache_dir={tmp_path / 'cache'}", *options,
    )  # fmt: skip
    return out


def test_a_sentence_two_passages_cut_off_is_embedded_once(tmp_path: Path) -> None:
    """Pooled, a sentence the truncation cut off is encoded on its own, which
    depends on its text alone: once, however many passages cut it off
    (XuanCe, pooled: 21,903 such encodings before, 2,185 after)."""
    first = "The learner of every algorithm in this library defines " * 3
    out = twin_book(
        tmp_path,
        f"{first.strip()}. It computes the loss. It updates the network.",
        "-D", "ragcite_embedding_max_tokens=16",
    )  # fmt: skip
    info = read_manifest(out)["embedding"]
    assert info["sentences_embedded"] == 2  # the two short ones, once each


def test_the_same_text_under_two_headings_keeps_its_own_pooled_vectors(
    tmp_path: Path,
) -> None:
    """Pooled sentence vectors depend on the passage's headings as well as
    its text: the Python engine's sentence cache once keyed them by text
    alone and gave a passage the vectors of its twin under another heading,
    where the browser engine read its own (XuanCe, pooled: 92 of 93 alike)."""
    from sphinx_ragcite.answer.evidence import SentenceVectors, build_evidence
    from sphinx_ragcite.retrieval.site import Site

    text = (
        "The learner defines the optimizer in its init method. It then "
        "computes the loss and updates the policy network."
    )
    out = twin_book(tmp_path, text)
    site = Site.load(out)
    assert site.sentences is not None
    rows = [r for r in range(len(site.passages)) if site.passages[r]["text"] == text]
    assert len(rows) == 2
    own = [site.sentences.of(r) for r in rows]
    assert not np.allclose(own[0], own[1])  # the headings are in the pass
    question = site.embedder.embed(["Where is the optimizer defined?"])[0]
    evidence = build_evidence(site, SentenceVectors(site.embedder), question, rows)
    for item, vectors in zip(evidence, own, strict=True):
        assert np.array_equal(item.vectors, vectors), item.key


# --- Issue 33: a shared folder holds other people's files and can be altered.
# These tests build a tiny book in-process (sphinx.testing), each in its own
# folders, so they need none of the fixtures above.

TINY_PAGES = {
    "index.rst": """\
Tiny Book
=========

Caching keeps the vectors of every passage between builds of this book.

.. toctree::

   other

Eviction
--------

Eviction deletes the least recently used shard files of the cache.

A second paragraph about folders that hold files of other programs.
""",
    "other.rst": """\
Other Page
==========

Trust
-----

A cache folder restored from another branch may hold altered vectors.

Verification recomputes a few of them. It compares them by cosine.
""",
}


def tiny_app(tmp: Path, name: str, **overrides: object) -> SphinxTestApp:
    """A Sphinx app (config read, nothing built) for a new copy of the tiny book."""
    src = tmp / name / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text('extensions = ["sphinx_ragcite"]\nproject = "Tiny"\n')
    for page, text in TINY_PAGES.items():
        (src / page).write_text(text)
    return SphinxTestApp(
        "html",
        srcdir=src,
        confoverrides=overrides,
        status=StringIO(),
        warning=StringIO(),
    )


def tiny_build(
    tmp: Path, name: str, cache: Path | str, **overrides: object
) -> tuple[Path, str]:
    """A clean in-process build of the tiny book; its output and warnings."""
    app = tiny_app(tmp, name, ragcite_cache_dir=str(cache), **overrides)
    try:
        app.build()
    finally:
        app.cleanup()
    return app.outdir, app.warning.getvalue()


def test_a_build_deletes_no_file_the_cache_did_not_write(tmp_path: Path) -> None:
    """Issue 33, defect 2: a cache folder that also holds someone's
    ``v1-experiment/results.npz`` and ``.notes.tmp`` (2 hours old), bound
    at 2 MiB: the build keeps both and writes its own shards."""
    cache = tmp_path / "cache"
    experiment = cache / "v1-experiment"
    experiment.mkdir(parents=True)
    results = experiment / "results.npz"
    np.savez(results, scores=np.arange(3 << 18, dtype=np.float32))  # 3 MiB
    notes = [cache / ".notes.tmp", experiment / ".notes.tmp"]
    for path in notes:
        path.write_text("my notes")
    for path in [results, *notes]:
        aged(path)
    kept = {path: path.read_bytes() for path in [results, *notes]}
    _, warnings = tiny_build(tmp_path, "a", cache, ragcite_cache_max_mb=2)
    assert warnings == ""
    for path, data in kept.items():
        assert path.exists(), f"{path.relative_to(cache)} was deleted"
        assert path.read_bytes() == data
    assert shards(cache)  # its own went in as usual


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The tiny book built once with an empty cache: its output and that cache."""
    tmp = tmp_path_factory.mktemp("tiny")
    out, warnings = tiny_build(tmp, "cold", tmp / "cache")
    assert warnings == ""
    return out, tmp / "cache"


def negated(cache: Path) -> Path:
    """Every shard rewritten well-formed, keys kept, vectors negated."""
    for path in shards(cache):
        with np.load(path) as data:
            arrays = {name: data[name] for name in data.files}
        arrays["codes"] = -arrays["codes"]
        np.savez(path, **arrays)
    return cache


def cache_warnings(warnings: str) -> list[str]:
    return [line for line in warnings.splitlines() if "ragcite.cache" in line]


@pytest.mark.slow
def test_altered_vectors_are_caught_when_the_encoder_runs(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 33, defect 7: negated vectors under their own keys, and one
    shard missing, so the build loads the encoder anyway. It checks a sample,
    warns once, computes every vector again (the output is the honest one)
    and leaves honest shards behind."""
    out, pristine = tiny
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    negated(cache)
    shards(cache)[0].unlink()
    built, warnings = tiny_build(tmp_path, "a", cache)
    [warning] = cache_warnings(warnings)
    assert "differ" in warning, warning
    assert index_files(built) == index_files(out)
    again, warnings = tiny_build(tmp_path, "b", cache)  # warm: no encoder
    assert warnings == ""
    assert embedded(again) == (0, 0)
    assert index_files(again) == index_files(out)


@pytest.mark.slow
def test_cache_verify_checks_a_warm_build(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """Issue 33, defect 7: ``ragcite_cache_verify = 4`` loads the encoder on a
    build that needs no vector computed, to check 4 cached ones. An honest
    cache passes silently with the same bytes; a negated one is caught."""
    out, pristine = tiny
    honest = tmp_path / "honest"
    shutil.copytree(pristine, honest)
    built, warnings = tiny_build(tmp_path, "a", honest, ragcite_cache_verify=4)
    assert warnings == ""
    assert embedded(built) == (0, 0)
    assert index_files(built) == index_files(out)
    assert "load model" in stages(built)  # what the check costs: the encoder
    altered = tmp_path / "altered"
    shutil.copytree(pristine, altered)
    negated(altered)
    built, warnings = tiny_build(tmp_path, "b", altered, ragcite_cache_verify="4")
    assert len(cache_warnings(warnings)) == 1, warnings
    assert index_files(built) == index_files(out)


@pytest.mark.slow
def test_the_doctree_cache_is_checked_too(tmp_path: Path) -> None:
    """``ragcite_cache_dir = "none"`` keeps the vectors beside the doctrees,
    in the same shards: an incremental build that embeds an edited passage
    checks them as a clean build with a shared cache does."""
    first, warnings = tiny_build(tmp_path, "a", "none")
    assert warnings == ""
    src = first.parents[1]
    doctree_cache = first.parent / "doctrees" / DOCTREE_FOLDER
    negated(doctree_cache)
    (src / "other.rst").write_text(
        TINY_PAGES["other.rst"] + "\nAn added paragraph the encoder must embed.\n"
    )
    warnings_io = StringIO()
    app = SphinxTestApp(
        "html",
        srcdir=src,
        confoverrides={"ragcite_cache_dir": "none"},
        status=StringIO(),
        warning=warnings_io,
    )
    try:
        app.build()
    finally:
        app.cleanup()
    assert len(cache_warnings(warnings_io.getvalue())) == 1, warnings_io.getvalue()
    assert (
        0 < embedded(app.outdir)[0] == read_manifest(app.outdir)["counts"]["passages"]
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [(" 16 ", 16), (0, 0), ("many", None), (-1, None), (True, None)],
)  # fmt: skip
def test_cache_verify_values(tmp_path: Path, value: object, expected: object) -> None:
    """A number as conf.py or ``-D`` gives it; anything else warns and is "auto"."""
    app = tiny_app(tmp_path, "a", ragcite_cache_verify=value)
    try:
        warnings = app.warning.getvalue()
        if expected is None:
            assert "ragcite_cache_verify must be" in warnings
            assert "[ragcite.config]" in warnings
            expected = "auto"
        else:
            assert warnings == ""
        assert app.config.ragcite_cache_verify == expected
    finally:
        app.cleanup()
