"""Shared fixtures and helpers: Sphinx's testing plugin, readers for the built
index, the example book's builds, and what the HTTP tests share (a free port,
uvicorn in a thread, a ``ragcite serve`` child, an SSE reader, a scripted
model). Test modules import the helpers: ``from conftest import free_port``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import importlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sphinx_ragcite.answer.llm import GenerationError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import ModuleType

    import httpx

    from sphinx_ragcite.answer.llm import Cancel

pytest_plugins = ("sphinx.testing.fixtures",)

ROOTS = Path(__file__).parent / "roots"
REPO = Path(__file__).resolve().parents[1]
EXAMPLE_BOOK = REPO / "example_book"


@pytest.fixture(scope="session")
def rootdir() -> Path:
    return ROOTS


@pytest.fixture(scope="session", autouse=True)
def no_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No build of the suite reads or writes the user's embedding cache:
    builds keep their vectors with their doctrees (``ragcite_cache_dir =
    "none"``), as each test's fresh doctrees make every build a clean one, and
    anything that still asks for the user cache folder gets a temporary one.
    Tests of the shared cache set ``ragcite_cache_dir`` themselves."""
    import os

    saved = {
        k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "SPHINX_RAGCITE_CACHE_DIR")
    }
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    os.environ["SPHINX_RAGCITE_CACHE_DIR"] = "none"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported as the benchmarks import each other."""
    folder = str(REPO / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


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


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serving_files(root: Path) -> Iterator[str]:
    """A plain file server for *root* (``python -m http.server``: it decodes
    a path once and serves that file), in a thread, on a free loopback port."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
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

    return httpx.get(f"{url}/api/health").json()  # type: ignore[no-any-return]


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
