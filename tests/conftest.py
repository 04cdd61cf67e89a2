"""Shared fixtures and helpers: Sphinx's testing plugin, readers for the built
index, the example book's builds, and what the HTTP tests share (a free port,
uvicorn in a thread, a ``ragcite serve`` child, an SSE reader, a scripted
model). Test modules import the helpers: ``from conftest import free_port``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import hashlib
import http.server
import importlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from sphinx_ragcite.answer.llm import GenerationError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator
    from types import ModuleType

    import httpx

    from sphinx_ragcite.answer.llm import Cancel

pytest_plugins = ("sphinx.testing.fixtures",)

T = TypeVar("T")

ROOTS = Path(__file__).parent / "roots"
REPO = Path(__file__).resolve().parents[1]
EXAMPLE_BOOK = REPO / "example_book"

#: The third-party corpora and dev sets (never the example book) are built
#: with ``ragcite_sentence_pooling = "passage"``: their sentence vectors come
#: from the passage pass instead of a pass of their own, which takes about a
#: third off each build (flask: 74 instead of 106 CPU seconds) and took the
#: suite's corpus work from 747 to 569 CPU seconds, the most any one change
#: saves. What these tests check does not depend on it: the browser engine
#: reads the sentence vectors a build wrote however they were made, and the
#: corpus tests check
#: warnings, passages and anchors. The shipped default, one pass per sentence,
#: is built and checked on the example book and the test roots (the
#: Chinese and Japanese ones too). ``RAGCITE_CORPUS_CONF= pytest`` builds
#: the corpora as shipped.
os.environ.setdefault("RAGCITE_CORPUS_CONF", "ragcite_sentence_pooling=passage")


@pytest.fixture(scope="session")
def rootdir() -> Path:
    return ROOTS


def _shared_root(factory: pytest.TempPathFactory) -> Path:
    """The session's folder that every xdist worker sees: the parent of a
    worker's own base folder (``pytest-N/popen-gwK``), else the base folder."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this session shared by its xdist workers (builds, caches)."""
    path = _shared_root(tmp_path_factory) / "shared"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session", autouse=True)
def no_user_cache(shared_dir: Path) -> Iterator[None]:
    """No build of the suite reads or writes the user's embedding cache: every
    build of the session, in process or not, in any worker, shares one cache
    in a temporary folder (``$SPHINX_RAGCITE_CACHE_DIR``), so a text is
    encoded once per run; anything that still asks for the user cache folder
    gets a temporary one. Tests that count what a build encodes use
    ``own_embedding_cache``; tests of the cache set ``ragcite_cache_dir``."""
    saved = {
        k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "SPHINX_RAGCITE_CACHE_DIR")
    }
    xdg = shared_dir / "xdg_cache"
    xdg.mkdir(exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = str(xdg)
    os.environ["SPHINX_RAGCITE_CACHE_DIR"] = str(shared_dir / "embeddings")
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _import_sphinx_modules_untranslated() -> None:
    """Sphinx's domains call ``_()`` when their module is imported, and get a
    plain string in the language of the build that happens to be running:
    a worker whose first in-process build was German (the ``quickstart``
    root) kept "Parameter" and "Rückgabe" for every later English build (the
    reference manual's golden failed). Imported here, before any build, they
    keep lazy labels that follow each build's language."""
    from sphinx.application import builtin_extensions

    for name in (*builtin_extensions, "sphinx.ext.autodoc", "sphinx.ext.napoleon"):
        importlib.import_module(name)


_import_sphinx_modules_untranslated()


@pytest.fixture(autouse=True)
def config_defaults_restored() -> Iterator[None]:
    """Sphinx keeps each config value's default in a class-level table, and
    ``add_source_suffix`` (myst-nb's, for one) updates the default dict in
    place: without this, a book built after a MyST-NB build in the same
    process reads its ``.md`` files (our Markdown twins in ``_build``, say)
    with a parser it never registered."""
    from sphinx.config import Config

    saved = {
        name: copy.deepcopy(opt.default)
        for name, opt in Config.config_values.items()
        if isinstance(opt.default, (dict, list, set))
    }
    try:
        yield
    finally:
        for name, default in saved.items():
            now = Config.config_values[name].default
            if now != default:  # put back in place: the dict is the one shared
                now.clear()
                (now.update if isinstance(now, (dict, set)) else now.extend)(default)


@pytest.fixture
def own_embedding_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds of this test keep their vectors with their doctrees
    (``ragcite_cache_dir = "none"``), for tests that count what a clean or
    incremental build encodes: the session's cache would have them already."""
    monkeypatch.setenv("SPHINX_RAGCITE_CACHE_DIR", "none")


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


# -- tiers and workers -----------------------------------------------------------

#: What makes a test slow besides these markers: driving Chromium.
SLOW_MARKERS = ("corpora", "llm", "packaging")


def xdist_group(item: pytest.Item) -> str:
    """The worker group of *item* under ``--dist loadgroup``: its module, so a
    module's fixtures are made once; a module's Chromium tests apart from its
    others (they run last, see ``pytest_collection_modifyitems``); the tests
    on a third-party corpus by corpus
    (``corpus:NAME``, from the ``corpus`` or dev-set ``name`` they are
    parametrized with), so each corpus is built once, by the worker that then
    runs every test on it, while the other worker builds another one."""
    if uses_browser(item):
        return "browser:" + item.nodeid.split("::")[0]
    callspec = getattr(item, "callspec", None)
    if item.get_closest_marker("corpora") is not None and callspec is not None:
        params = callspec.params
        if "corpus" in params:
            return f"corpus:{params['corpus']}"
        if "name" in params:
            sets = benchmark("devsets").CORPUS_SETS
            return f"corpus:{sets.get(params['name'], (params['name'],))[0]}"
    return item.nodeid.split("::")[0]


def pytest_itemcollected(item: pytest.Item) -> None:
    """Tiers and workers. A test marked ``corpora``, ``llm`` or ``packaging``,
    or driving Chromium, is ``slow`` too: ``-m "not slow"`` is the quick tier.
    Each test gets its ``xdist_group`` (see ``xdist_group``) unless it names
    one itself."""
    if uses_browser(item) or any(item.get_closest_marker(m) for m in SLOW_MARKERS):
        item.add_marker(pytest.mark.slow)
    if item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


# -- coroutines beside Chromium ------------------------------------------------


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own. In a worker that
    has started Chromium, playwright's sync API keeps an event loop marked
    running on the main thread, where ``asyncio.run`` refuses to start; on
    its own thread a test's coroutine runs in any order of the tests."""
    with ThreadPoolExecutor(1, thread_name_prefix="run-async") as pool:
        return pool.submit(asyncio.run, coroutine).result()


# -- tests that must not skip on CI --------------------------------------------

#: CI installs Node and Chromium (``.ci/run``): there a test that would skip
#: for want of one fails instead, so a green run means they ran.
ON_CI = os.environ.get("CI", "").lower() == "true"


def needs_ci_tool(item: pytest.Item) -> bool:
    """Whether *item* runs Node (``node`` marker) or Chromium."""
    return item.get_closest_marker("node") is not None or uses_browser(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if ON_CI and report.skipped and needs_ci_tool(item):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where it must run: {reason}"


# -- builds shared by the session -------------------------------------------


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
            shutil.copytree(src, srcdir, ignore=_IGNORE)
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
            shutil.copytree(src, srcdir, ignore=_IGNORE)
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


_IGNORE = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints")


@pytest.fixture(scope="session")
def builds(shared_dir: Path) -> Builds:
    """The session's shared builds (see ``Builds``)."""
    return Builds(shared_dir / "builds")


@pytest.fixture
def app_built(request: pytest.FixtureRequest, builds: Builds) -> Built:
    """What Sphinx's ``app`` fixture has after ``app.build()``, for a test that
    only reads the output: the build its ``@pytest.mark.sphinx`` marker
    describes (builder, ``testroot``, ``confoverrides``), made once per
    session, fresh, and shared with every test that asks for the same."""
    args: dict[int, Any] = {}
    kwargs: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("sphinx"))):
        args |= dict(enumerate(marker.args))
        kwargs.update(marker.kwargs)
    builder = args.get(0, kwargs.get("buildername", "html"))
    return builds.app(
        kwargs.get("testroot", "root"), builder, kwargs.get("confoverrides")
    )


@pytest.fixture(scope="session")
def example_site(builds: Builds) -> Path:
    """The example book built once per session (embeddings included)."""
    built = builds.sphinx(EXAMPLE_BOOK, name="example_book")
    assert built.warnings == ""
    return built.outdir


#: What the edited copy of the example book says instead (test_sites.py).
BLOOM_V1 = "wait 30 to 45 seconds"
BLOOM_V2 = "wait 50 to 70 seconds"


@pytest.fixture(scope="session")
def example_site_v2(builds: Builds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second version of the example book: version 2.0, one paragraph edited."""
    srcdir = tmp_path_factory.mktemp("example_site_v2") / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=_IGNORE)
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
    built = builds.sphinx(srcdir, name="example_book_v2")
    assert built.warnings == ""
    return built.outdir


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``: the package ``benchmarks`` (the code tests,
    benchmarks and tools share), imported by its name there."""
    return importlib.import_module(f"benchmarks.{name}")


# -- one Chromium for the session ---------------------------------------------

#: The Debian ``chromium`` package, driven by Python playwright (never a
#: downloaded browser).
CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
#: Screenshots of the browser tests, for people to look at.
SHOTS = Path("/tmp/ragcite-shots")


def uses_browser(item: pytest.Item) -> bool:
    return not {"browser", "chromium"}.isdisjoint(getattr(item, "fixturenames", ()))


#: Seconds each group kept its worker busy in a run of the whole suite
#: (2026-11-28, fresh clone, 3 workers on 2 cores): each phase starts its
#: dearest groups first (a longest-first schedule), so the worker that
#: finishes last finishes soon after the others. The corpus groups are
#: mostly the encoder; the Chromium groups run last (see
#: ``pytest_collection_modifyitems``), where a 58 s group handed out last
#: kept one worker busy 35 s after another had nothing left.
GROUP_SECONDS = {
    "corpus:packaging-guide": 149,
    "corpus:xuance-docs-zh": 139,
    "corpus:flask": 110,
    "corpus:click-docs": 95,
    "corpus:attrs": 54,
    "corpus:squad": 53,
    "corpus:rqalpha_zh": 52,
    "corpus:requests-docs": 50,
    "corpus:jinja": 44,
    "corpus:emcee": 43,
    "browser:tests/test_widget.py": 58,
    "browser:tests/test_browser_answers.py": 51,
    "browser:tests/test_widget_versions.py": 19,
    "browser:tests/test_browser_encoder.py": 19,
    "browser:tests/test_widget_cjk.py": 12,
    "browser:tests/test_widget_feedback.py": 8,
    "browser:tests/test_deeplinks_sphinx.py": 6,
}


def _phase(item: pytest.Item) -> tuple[int, int]:
    """Corpus tests first, dearest first; then the rest; Chromium last,
    dearest first."""
    marker = item.get_closest_marker("xdist_group")
    group = str(marker.args[0]) if marker and marker.args else ""
    if uses_browser(item):
        return (2, -GROUP_SECONDS.get(group, 0))
    if group.startswith("corpus:"):
        return (0, -GROUP_SECONDS.get(group, 60))
    return (1, 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order tests start in (xdist hands out groups in this order:
    ``--no-loadscope-reorder`` in ``addopts``). Corpus tests run first,
    dearest first, and tests that drive Chromium last. Started beside the
    corpus builds instead, the Chromium groups took a worker the builds
    needed: a fresh clone's run took 712 s against 600-650 s (2026-11-28),
    so the order is a measured choice, no longer a constraint (``run_async``).
    The order is otherwise kept."""
    items[:] = sorted(items, key=_phase)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores (at most 4 cores' worth).
    Outside the corpus builds a worker waits for about a quarter of its time (on
    Chromium, a server it started, llama.cpp, a build another worker makes),
    and the extra worker runs tests in those gaps."""
    return min(os.cpu_count() or 1, 4) + 1


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under ``--dist loadgroup`` a worker tells the scheduler each test's
    group by the ``@group`` pytest-xdist appends to its node ID. Where that
    append has no effect (pytest 9.2 with pytest-xdist 3.8: pytest-xdist#1386)
    every test is scheduled alone, and a module's shared builds are made on
    both workers, silently: stop and say so instead."""
    if (
        ids
        and node.config.getoption("dist") == "loadgroup"
        and not any("@" in i for i in ids)
    ):
        pytest.exit(
            "pytest-xdist's --dist loadgroup has no effect with pytest "
            f"{pytest.__version__} (no node ID carries its @group): install the "
            'test extra\'s pytest (pip install -e ".[test]"), or run with -n 0',
            returncode=4,
        )


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One Chromium for the whole session (each test gets a fresh context
    through ``page``), closed when the session ends."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"the browser tests need Chromium at {CHROMIUM} "
            "(apt-get install -y chromium)"
        )
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="pip install playwright (no browser download)"
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def browser(chromium: Any) -> Any:
    """The session's Chromium (a name test modules import and alias: each
    alias is a thin fixture over the one ``chromium``)."""
    return chromium


class Problems(list):
    """Uncaught page errors and CSP violations seen by a page."""


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page in a fresh browser context (no cookies, storage or cache from
    another test) that fails the test on any page error or CSP violation."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems = Problems()
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on(
        "console",
        lambda m: (
            problems.append(f"console: {m.text}")
            if m.type == "error" and "Content Security Policy" in m.text
            else None
        ),
    )
    page.problems = problems
    yield page
    context.close()
    assert not problems, problems


# -- servers, streams and a scripted model, for the HTTP tests ---------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """Any ASGI app under uvicorn in a thread, on a free loopback port."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        assert time.monotonic() < deadline, "the server took over 60 s to start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def answer_server(
    build_dir: Path | None, **kwargs: Any
) -> contextlib.AbstractContextManager[str]:
    """``ragcite serve`` in a thread: the site at ``/`` (or ``sites=`` each at
    ``/NAME/``) and the API, no rate limit; ``llm=`` a generator."""
    from sphinx_ragcite.server.app import create_app
    from sphinx_ragcite.server.settings import ServerSettings

    llm = kwargs.pop("llm", None)
    settings = ServerSettings(build_dir=build_dir, rate_limit=0, **kwargs)
    return serving(create_app(settings, llm=llm))


@pytest.fixture(scope="session")
def example_server(example_site: Path) -> Iterator[str]:
    """The example book and its answer API (extractive), one server for every
    test that only reads from it."""
    with answer_server(example_site, generator="extractive") as url:
        yield url


@pytest.fixture(scope="session")
def example_files(example_site: Path) -> Iterator[str]:
    """The example book from a plain file server (no answer API)."""
    with serving_files(example_site) as url:
        yield url


@pytest.fixture(scope="session")
def example_versions_server(example_site: Path, example_site_v2: Path) -> Iterator[str]:
    """The example book 1.0 as ``v1`` beside its edited 2.0 as ``v2``."""
    sites = (("v1", example_site), ("v2", example_site_v2))
    with answer_server(None, sites=sites, generator="extractive") as url:
        yield url


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serving_files(root: Path) -> Iterator[str]:
    """A plain file server for *root* (``python -m http.server``: it decodes
    a path once and serves that file), in a thread, on a free loopback port."""
    with serving_handler(_QuietHandler, root) as url:
        yield url


@contextlib.contextmanager
def serving_handler(handler: type, root: Path) -> Iterator[str]:
    """*handler* (an ``http.server`` handler class) serving the files of
    *root*, in a thread, on a free loopback port."""
    bound = functools.partial(handler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), bound)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def wait_until_up(
    process: subprocess.Popen[bytes], url: str, log: Path, seconds: float = 90
) -> httpx.Response:
    """The first 200 from *url*; fails when *process* exits (showing *log*)
    or after *seconds*."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, log.read_text("utf-8", "replace")
        with contextlib.suppress(httpx.HTTPError):
            response = httpx.get(url, timeout=2)
            if response.status_code == 200:
                return response
        assert time.monotonic() < deadline, f"{url} did not answer"
        time.sleep(0.1)


@contextlib.contextmanager
def ragcite_serve(
    *args: str, log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ragcite serve ARGS --port P`` in a child process: its URL and its
    first ``/api/health``. Its output goes to *log*."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "sphinx_ragcite", "serve", *args,
             "--port", str(port)],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        health = wait_until_up(process, f"{url}/api/health", log).json()
        yield url, health
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(condition: Callable[[], object], seconds: float) -> float:
    """Seconds it took *condition* to hold; fails after *seconds*."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < seconds, "not within time"
        time.sleep(0.02)
    return time.monotonic() - started


def health(url: str) -> dict[str, Any]:
    import httpx

    return httpx.get(f"{url}/api/health").json()


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """A whole ``text/event-stream`` body: (event name, data) in order."""
    events = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def leave_after_first_token(client: httpx.Client, url: str, question: str) -> None:
    """Ask ``{url}/api/ask/stream``, read to the first ``event: token`` and go
    away mid-answer (*url* is "" for a ``TestClient``)."""
    with client.stream(
        "POST", f"{url}/api/ask/stream", json={"question": question}
    ) as response:
        for line in response.iter_lines():
            if line.startswith("event: token"):
                return


class ScriptedLLM:
    """A generator (``answer.llm.Generator``) that streams what the test tells
    it to, hostile or not: *pieces*, one each *delay* seconds, or *fail*.

    Like the real ones it serves one stream at a time and stops between
    pieces when a ``Cancel`` fires; ``messages`` holds the last prompt and
    ``closed`` is set when a stream ends, however it ends.
    """

    name = "scripted"
    cancellable = True

    def __init__(self, *pieces: str, delay: float = 0.0, fail: bool = False) -> None:
        self.pieces = pieces
        self.delay = delay
        self.fail = fail
        self.messages: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        cancel: Cancel | None = None,
    ) -> Iterator[str]:
        with self.lock:
            self.messages = messages
            try:
                if self.fail:
                    raise GenerationError("endpoint down")
                for piece in self.pieces:
                    time.sleep(self.delay)
                    if cancel is not None:
                        cancel.check()
                    yield piece
            finally:
                self.closed.set()
