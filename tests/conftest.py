"""The suite's shared fixtures, and the plugins it runs with.

Fixtures only: each name means one thing in every module. What tests share
besides fixtures is in ``helpers/`` (``from helpers.builds import
read_passages``); how tests are tiered, put on workers and ordered is the
plugin ``plugins/scheduling.py``, the environment they run in
``plugins/environment.py``, and why a skip fails on CI ``plugins/ci.py``.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from helpers.browser import CHROMIUM, LAUNCH_ARGS, SHOTS, Problems, watched
from helpers.builds import BLOOM_V1, BLOOM_V2, IGNORE, Builds, Built, read_manifest
from helpers.node import need_node
from helpers.repo import EXAMPLE_BOOK, ROOTS
from helpers.servers import answer_server, serving_files

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sphinx_ragcite.retrieval.site import Site

pytest_plugins = (
    "sphinx.testing.fixtures",
    "plugins.environment",
    "plugins.scheduling",
    "plugins.ci",
)


# -- the session's folders and caches ---------------------------------------------


@pytest.fixture(scope="session")
def rootdir() -> Path:
    """``tests/roots``, where Sphinx's ``app`` fixture finds ``testroot``."""
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


# -- builds --------------------------------------------------------------------


@pytest.fixture(scope="session")
def builds(shared_dir: Path) -> Builds:
    """The session's shared builds (see ``helpers.builds.Builds``)."""
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


@pytest.fixture
def srcdir(rootdir: Path, tmp_path: Path) -> Path:
    """A private copy of ``tests/roots/test-basic``, to edit and build."""
    path = tmp_path / "src"
    shutil.copytree(rootdir / "test-basic", path)
    return path


@pytest.fixture(scope="session")
def example_site(builds: Builds) -> Path:
    """The example book built once per session (embeddings included): its
    output folder, read-only."""
    built = builds.sphinx(EXAMPLE_BOOK, name="example_book")
    assert built.warnings == ""
    return built.outdir


@pytest.fixture(scope="session")
def example_site_v2(builds: Builds, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second version of the example book: version 2.0, one paragraph edited
    (``BLOOM_V1`` now says ``BLOOM_V2``)."""
    srcdir = tmp_path_factory.mktemp("example_site_v2") / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=IGNORE)
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


@pytest.fixture(scope="module")
def engine_site(example_site: Path) -> Path:
    """The example book's build, which must ship the browser engine (its
    model): the site of the tests that answer in the browser."""
    assert "model" in read_manifest(example_site)["files"], "no engine shipped"
    return example_site


@pytest.fixture(scope="module")
def site(example_site: Path) -> Site:
    """The example book's index loaded for retrieval and answers (``Site``)."""
    from sphinx_ragcite.retrieval.site import Site

    return Site.load(example_site)


@pytest.fixture
def index_copy(example_site: Path, tmp_path: Path) -> Path:
    """A private copy of the example book's ``_ragcite/`` (in ``site/``), for a
    test to damage."""
    target = tmp_path / "site"
    shutil.copytree(example_site / "_ragcite", target / "_ragcite")
    return target


# -- servers -------------------------------------------------------------------


@pytest.fixture(scope="session")
def qdrant_dir(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example book pushed to a Qdrant local-mode folder (then closed).
    Local mode locks its folder for one client: each user opens a copy."""
    from sphinx_ragcite.cli.commands import main

    folder = tmp_path_factory.mktemp("qdrant") / "store"
    assert main(["push", str(example_site), "--qdrant", str(folder)]) == 0
    return folder


@pytest.fixture(scope="module")
def client(
    request: pytest.FixtureRequest,
    example_site: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """The example book's answer server (extractive) in Starlette's
    ``TestClient``. Its passages come from memory; parametrized indirectly
    with ``"qdrant"`` (``test_server.py``'s ``memory_and_qdrant``), from a
    Qdrant local-mode folder, so the same tests hold for both stores."""
    from fastapi.testclient import TestClient

    from sphinx_ragcite.server.app import create_app
    from sphinx_ragcite.server.settings import ServerSettings

    store = getattr(request, "param", "memory")
    qdrant = None
    if store == "qdrant":
        pushed = request.getfixturevalue("qdrant_dir")
        qdrant = tmp_path_factory.mktemp("served") / "store"
        shutil.copytree(pushed, qdrant)
    settings = ServerSettings(
        build_dir=example_site,
        generator="extractive",
        **({"qdrant": str(qdrant)} if qdrant else {}),
    )
    with TestClient(create_app(settings)) as test_client:
        if qdrant:
            from sphinx_ragcite.retrieval.qdrant import QdrantSite

            assert isinstance(test_client.app.state.ragcite.site, QdrantSite)
        yield test_client


@pytest.fixture(scope="session")
def example_server(example_site: Path) -> Iterator[str]:
    """The example book and its answer API (extractive), one server for every
    test that only reads from it: its URL."""
    with answer_server(example_site, generator="extractive") as url:
        yield url


@pytest.fixture(scope="session")
def example_files(example_site: Path) -> Iterator[str]:
    """The example book from a plain file server (no answer API): its URL."""
    with serving_files(example_site) as url:
        yield url


@pytest.fixture(scope="session")
def example_versions_server(example_site: Path, example_site_v2: Path) -> Iterator[str]:
    """The example book 1.0 as ``v1`` beside its edited 2.0 as ``v2``: its URL."""
    sites = (("v1", example_site), ("v2", example_site_v2))
    with answer_server(None, sites=sites, generator="extractive") as url:
        yield url


# -- Node and Chromium -----------------------------------------------------------


@pytest.fixture(scope="session")
def node() -> str:
    """Node's path; a skip without it, a failure under ``CI=true``."""
    return need_node()


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
    """The session's Chromium, by the name the tests ask for (a test that
    asks for either drives Chromium: ``plugins/scheduling.py``)."""
    return chromium


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


@pytest.fixture
def watched_page(browser: Any) -> Iterator[Any]:
    """A page for the browser engine's tests, in a fresh context (a private
    window: its HTTP cache lives in memory and keeps nothing as large as the
    model), ``watched``: its requests (its workers' too), errors, console
    errors and warnings are recorded; fails the test on a page error."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = watched(context.new_page())
    yield page
    context.close()
    assert not page.errors, page.errors
