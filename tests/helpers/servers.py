"""Servers for the HTTP and browser tests: a free port, any ASGI app (the
answer server) under uvicorn in a thread, ``ragcite serve`` in a child
process, the plain file server (``python -m http.server``'s handler) in a
thread, and what reading from them takes (SSE, waiting)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

# the one ``free_port`` of the tests, the benchmarks and the tools
from benchmarks._harness import free_port as free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterator

    import httpx

T = TypeVar("T")


# -- the answer server in a thread -----------------------------------------------


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


# -- the plain file server ----------------------------------------------------------


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


class RecordingHandler(http.server.SimpleHTTPRequestHandler):
    """``python -m http.server``'s handler; a test may add a header (``csp``),
    slow the model down (``slow_model``), and read what was served."""

    csp = ""
    slow_model = False
    served: list[tuple[str, str, int]]

    def end_headers(self) -> None:
        if self.csp:
            self.send_header("Content-Security-Policy", self.csp)
        super().end_headers()

    def copyfile(self, source: Any, outputfile: Any) -> None:
        if not (self.slow_model and "/model." in self.path):
            super().copyfile(source, outputfile)
            return
        with contextlib.suppress(OSError):  # the reader cancelled
            while block := source.read(256 << 10):
                outputfile.write(block)
                time.sleep(0.05)

    def send_response(self, code: int, message: str | None = None) -> None:
        self.served.append((self.command, self.path, code))
        super().send_response(code, message)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serve(
    root: Path, **settings: Any
) -> Iterator[tuple[str, list[tuple[str, str, int]]]]:
    """The files of *root* from a ``RecordingHandler`` with *settings*
    (``csp``, ``slow_model``): its URL and the requests it served (method,
    path, status)."""
    served: list[tuple[str, str, int]] = []
    handler = type("H", (RecordingHandler,), {**settings, "served": served})
    with serving_handler(handler, root) as url:
        yield url, served


# -- ``ragcite serve`` in a child process ----------------------------------------


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
    *args: str,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    port: int | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``ragcite serve ARGS --port P`` in a child process: its URL and its
    first ``/api/health``. Its output goes to *log*. A given *port* keeps a
    page on one origin across restarts; else a free one is picked."""
    port = port or free_port()
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


# -- reading and waiting --------------------------------------------------------


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


# -- coroutines beside Chromium ------------------------------------------------


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a thread of its own. In a worker that
    has started Chromium, playwright's sync API keeps an event loop marked
    running on the main thread, where ``asyncio.run`` refuses to start; on
    its own thread a test's coroutine runs in any order of the tests."""
    with ThreadPoolExecutor(1, thread_name_prefix="run-async") as pool:
        return pool.submit(asyncio.run, coroutine).result()
