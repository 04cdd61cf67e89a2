"""Builds: a book built in process or as an author builds it, the session's
shared builds (``Builds``), and readers of the index a build wrote."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helpers.repo import ROOTS, benchmark

if TYPE_CHECKING:
    from collections.abc import Callable

#: What a copy of a source tree leaves out.
IGNORE = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints")

#: What the edited copy of the example book says instead (``example_site_v2``).
BLOOM_V1 = "wait 30 to 45 seconds"
BLOOM_V2 = "wait 50 to 70 seconds"


# -- readers of a built index ----------------------------------------------------


def read_manifest(outdir: Path) -> dict:
    return json.loads((outdir / "_ragcite" / "manifest.json").read_text("utf-8"))


def read_passages(outdir: Path) -> list[dict]:
    manifest = read_manifest(outdir)
    path = outdir / "_ragcite" / manifest["files"]["passages"]
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def index_files(outdir: Path) -> dict[str, bytes]:
    """Every index file but the manifest (which records the build time)."""
    directory = outdir / "_ragcite"
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def passages_bytes(outdir: Path) -> bytes:
    manifest = read_manifest(outdir)
    return (outdir / "_ragcite" / manifest["files"]["passages"]).read_bytes()


# -- building a book ------------------------------------------------------------


def build(make_app, builder: str, srcdir: Path, **kwargs):
    """Build a project; clean up docutils registrations so the next app starts fresh."""
    app = make_app(builder, srcdir=srcdir, **kwargs)
    try:
        app.build()
    finally:
        app.cleanup()
    return app


def sphinx_build(srcdir: Path, outdir: Path, *options: str) -> str:
    """A real ``python -m sphinx`` run; returns its warnings (stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", *options, srcdir, outdir],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


# -- builds shared by the session ----------------------------------------------


def digest(*parts: str | bytes) -> str:
    """A short hash of *parts*, in order."""
    h = hashlib.sha256()
    for part in parts:
        h.update(
            hashlib.sha256(part.encode() if isinstance(part, str) else part).digest()
        )
    return h.hexdigest()[:12]


def tree_key(root: Path) -> str:
    """Hash of a source tree's file names and contents (caches left out)."""
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not {"__pycache__", "_build"} & set(p.parts)
    )
    return digest(
        *(p.relative_to(root).as_posix().encode() + p.read_bytes() for p in files)
    )


@dataclass(frozen=True)
class Built:
    """A finished build: its output folder and what Sphinx printed."""

    outdir: Path
    warnings: str
    status: str = ""
    #: the folder the built copy of the source is in (paths in warnings)
    origin: Path | None = None

    @property
    def srcdir(self) -> Path:
        return self.outdir.parent / "src"

    @property
    def doctrees(self) -> Path:
        return self.outdir.parent / "doctrees"


class Builds:
    """Builds made once per session and shared, read-only, by every test (and
    every xdist worker) that asks for the same source and settings, as
    ``benchmarks/_harness.py`` keys its sites: one folder per key below the
    session's shared folder, made under a file lock, so a second worker waits
    for the first one's build instead of making its own. A test that changes
    a build (edits the source and builds again, writes into the output)
    works on a ``copy`` of it.

    Each folder holds ``src`` (a copy of the source), ``html`` (or the
    builder's output), ``doctrees`` and ``warnings.txt``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    def once(self, name: str, key: str, make: Callable[[Path], None]) -> Path:
        """``root/NAME-KEY``, made by *make(folder)* unless a test of this
        session (in any worker) made it already."""
        from filelock import FileLock

        folder = self.root / f"{name}-{key}"
        done = folder / ".done"
        with FileLock(str(folder) + ".lock"):
            if not done.exists():
                if folder.exists():  # a build that failed half way
                    shutil.rmtree(folder)
                folder.mkdir()
                make(folder)
                done.touch()
        return folder

    def sphinx(self, src: Path, *options: str, name: str | None = None) -> Built:
        """``python -m sphinx -b html OPTIONS`` of a copy of *src*, once: the
        build in a child process, as an author runs it."""

        def make(folder: Path) -> None:
            srcdir = folder / "src"
            shutil.copytree(src, srcdir, ignore=IGNORE)
            out = folder / "html"
            warnings = sphinx_build(
                srcdir, out, "-d", str(folder / "doctrees"), *options
            )
            (folder / "warnings.txt").write_text(warnings, "utf-8")

        key = digest("sphinx", tree_key(src), *options)
        folder = self.once(name or src.name, key, make)
        return self._built(folder)

    def app(
        self,
        testroot: str | Path,
        builder: str = "html",
        confoverrides: dict[str, Any] | None = None,
    ) -> Built:
        """``tests/roots/test-TESTROOT`` (or the folder *testroot*) built once
        in this process by Sphinx's own test application (as the ``app``
        fixture builds it, fresh), so the extension's code runs where
        coverage sees it."""
        src = ROOTS / f"test-{testroot}" if isinstance(testroot, str) else testroot
        from io import StringIO

        from sphinx.testing.util import SphinxTestApp

        overrides = dict(confoverrides or {})

        def make(folder: Path) -> None:
            srcdir = folder / "src"
            shutil.copytree(src, srcdir, ignore=IGNORE)
            status, warning = StringIO(), StringIO()
            syspath = sys.path.copy()
            app = SphinxTestApp(
                builder,
                srcdir=srcdir,
                builddir=folder / "_build",
                confoverrides=overrides,
                status=status,
                warning=warning,
                freshenv=True,
            )
            try:
                app.build()
            finally:
                app.cleanup()
                sys.path[:] = syspath
            (folder / "_build" / builder).rename(folder / "html")
            (folder / "_build" / "doctrees").rename(folder / "doctrees")
            (folder / "warnings.txt").write_text(warning.getvalue(), "utf-8")
            (folder / "status.txt").write_text(status.getvalue(), "utf-8")

        key = digest(
            "app",
            tree_key(src),
            builder,
            json.dumps(overrides, sort_keys=True, default=str),
        )
        return self._built(self.once(f"{src.name}-{builder}", key, make))

    def corpus(self, name: str, with_ragcite: bool = True) -> Built:
        """Third-party corpus *name* (``../shared/corpora``) built once, as an
        author builds it: ``python -m sphinx -b html -q -N`` in a child process
        on a copy, with or without ``sphinx_ragcite`` added to its
        extensions. ``warnings`` is the build's stderr and ``origin`` the
        folder the copy is in (paths in warnings start with it).

        With the extension it is the benchmarks' build of the corpus
        (``_harness.corpus_site``, in ``benchmarks/results/.sites/``, kept
        while the build code and the corpus are unchanged, with the options of
        ``$RAGCITE_CORPUS_CONF``), the one the dev sets of
        ``answer_quality.py`` load too: built once for every test."""
        corpora = benchmark("_corpora")
        if with_ragcite:
            harness = benchmark("_harness")
            outdir, _ = harness.corpus_site(name)
            stderr = outdir.parent / "stderr.txt"
            if not stderr.is_file():  # built before the harness kept it
                outdir, _ = harness.corpus_site(name, rebuild=True)
            return Built(
                outdir, stderr.read_text("utf-8"), origin=outdir.parent / "src"
            )

        def make(folder: Path) -> None:
            srcdir = corpora.prepare_corpus(name, folder, with_ragcite)
            cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-N"]
            proc = subprocess.run(
                [*cmd, str(srcdir), str(folder / "html")],
                cwd=srcdir.parent,
                env=corpora.build_env(srcdir),
                capture_output=True,
                text=True,
                check=False,
            )
            assert proc.returncode == 0, f"build failed:\n{proc.stderr[-3000:]}"
            (folder / "warnings.txt").write_text(proc.stderr, "utf-8")

        folder = self.once(f"{name}-without", "corpus", make)
        return Built(
            folder / "html", (folder / "warnings.txt").read_text("utf-8"), origin=folder
        )

    @staticmethod
    def _built(folder: Path) -> Built:
        status = folder / "status.txt"
        return Built(
            folder / "html",
            (folder / "warnings.txt").read_text("utf-8"),
            status.read_text("utf-8") if status.exists() else "",
        )

    @staticmethod
    def copy(built: Built, dest: Path) -> Built:
        """A private copy of *built* (source, output, doctrees) in *dest*, to
        edit and build again; the doctrees keep it incremental."""
        for part in ("src", "html", "doctrees"):
            if (built.outdir.parent / part).exists():
                shutil.copytree(built.outdir.parent / part, dest / part, symlinks=True)
        return Built(dest / "html", built.warnings, built.status)
