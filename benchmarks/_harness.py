"""What every benchmark shares: its sites, its server, its result file, its figures.

A benchmark runs as ``python benchmarks/NAME.py`` (or ``python -m
benchmarks.NAME``) and imports what it needs from here; tests and tools import
it the same way (the package ``benchmarks``: the checkout's root is on
``sys.path`` in an editable install and under pytest)::

    from benchmarks._harness import RESULTS, envelope, example_site, table

Sites (built with the extension, reused while nothing they depend on changed):

- ``example_site(site=None)``: the example book's HTML build, in
  ``results/.sites/example_book/html``; *site*, when given, is returned
  instead, once ``checked_site(site)`` found it a build (``--site`` options).
  ``example_build()`` also says how long the build took (None: reused).
- ``corpus_site(name)``: a third-party corpus of ``_corpora.py`` the same way
  (with the build's seconds too).
- ``RAGCITE_BENCH_CONF="name=value ..."`` in the environment builds every
  site of the run with those options too, in a folder of their own.
- ``cached_build(name, key, prepare)``: any other source: ``prepare(workdir)``
  makes a buildable copy and returns its source folder; the build in
  ``results/.sites/<name>/html`` is reused while *key* is unchanged. Keys
  start with ``build_code_key()`` (the package's build side) and hash the
  inputs with ``tree_key(folder)`` or ``digest(parts)``.
- ``sphinx_build(srcdir, outdir, *options)``: one ``python -m sphinx -b html``
  in a child process: seconds, exit code, output and the child's peak RSS.
- ``read_manifest(site)``, ``read_passages(site)``: a build's index files;
  ``read_jsonl(path)`` any JSON Lines file.

The server: ``Server(settings, log_dir)`` runs ``uvicorn --factory
sphinx_ragcite.server.app:app_from_env`` with *settings* on 127.0.0.1 and a
``free_port()`` in a child process (a context manager; ``.url``, ``.health``,
``.memory_mib()``, ``.log_tail()``).

Results: ``envelope(name, **more)`` is the head of every result file (what
ran, on which machine, the load average when the benchmark started and now);
``write_result(path, payload)`` writes it as JSON and prints the load and the
path; ``git_commit()`` and ``git_dirty()`` say what code was measured.

Figures: ``percentile(values, q)`` (q from 0 to 100, interpolated like
numpy's default), ``latency_ms(seconds)`` (p50/p99 in ms, as benchmarks
report latencies), ``table(head, body)`` (the plain-text tables printed),
``share(part, whole)`` and ``fmt(value, key)`` (a figure in such a table).

Plots: ``svg_plot(path, title, xlabel, ylabel, series)`` writes a line and
point plot of ``Series`` (points, colour, dashes, markers, a note beside each
point) as a standalone SVG: axes, ticks, grid, labels, title and legend, no
plotting library, the same bytes for the same data.

Nothing here imports ``sphinx_ragcite`` at import time: ``scale.py`` runs
children against an older checkout of the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import _corpora

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
RESULTS = BENCHMARKS / "results"
#: ``RAGCITE_BENCH_CONF="name=value ..."``: every cached build of the run
#: also gets ``-D name=value`` (a build option measured against the default),
#: and the run's sites live apart, in ``results/.sites+name=value...``, so a
#: variant never replaces the default builds.
VARIANT = sorted(os.environ.get("RAGCITE_BENCH_CONF", "").split())
SITES = RESULTS / ".sites" if not VARIANT else RESULTS / (".sites+" + "+".join(VARIANT))
#: ``RAGCITE_CORPUS_CONF="name=value ..."``: the same for the third-party
#: corpora and dev sets only, never the example book; their sites are kept
#: as ``<name>+name=value...``. The test suite sets it (tests/plugins/environment.py).
CORPUS_CONF_VAR = "RAGCITE_CORPUS_CONF"
EXAMPLE_BOOK = _corpora.EXAMPLE_BOOK
EXAMPLE_QA = EXAMPLE_BOOK / "qa.jsonl"
#: Parts of the package that only run at query time: editing them needs no
#: rebuild (the build embeds with ``encoder.py``, which stays in).
QUERY_ONLY = (
    "retrieval", "answer", "server", "cite", "cli", "questions", "evaluate.py",
    "__main__.py",
)  # fmt: skip
_MANIFEST = Path("_ragcite", "manifest.json")
#: The answer ranker a build ships into ``_ragcite/`` (unless $RAGCITE_RANKER).
RANKER_JSON = REPO / "sphinx_ragcite" / "answer" / "ranker.json"


def _loadavg() -> list[float] | None:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


#: The load average when the benchmark started (when it imported this module):
#: other processes on the machine skew every timing.
LOADAVG_AT_START = _loadavg()


# -- sites -----------------------------------------------------------------------


class BuildFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Build:
    """One ``python -m sphinx`` run."""

    command: list[str]
    returncode: int
    seconds: float
    stdout: str
    stderr: str
    #: the Sphinx process's own peak RSS (None where there is no ``wait4``)
    peak_rss_mib: float | None


def sphinx_build(
    srcdir: Path,
    outdir: Path,
    *options: str,
    doctrees: Path | None = None,
    quiet: bool = True,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> Build:
    """``python -m sphinx -b html [-q] OPTIONS [-d DOCTREES] SRCDIR OUTDIR``.

    Runs in the source's parent folder, which is on ``PYTHONPATH`` too (a
    project's local extensions import from there); raises
    :class:`BuildFailed` on a non-zero exit unless *check* is false. *env*
    adds to the environment (``SPHINX_RAGCITE_CACHE_DIR``, for one).
    """
    cmd = [sys.executable, "-m", "sphinx", "-b", "html"]
    if quiet:
        cmd.append("-q")
    cmd += options
    if doctrees is not None:
        cmd += ["-d", str(doctrees)]
    cmd += [str(srcdir), str(outdir)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=srcdir.parent,
            env={**_corpora.build_env(srcdir), **(env or {})},
            stdout=out,
            stderr=err,
        )
        code, rss = _wait(proc)
        seconds = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    if check and code != 0:
        raise BuildFailed(f"{' '.join(cmd)} exited {code}:\n{stderr[-3000:]}")
    return Build(cmd, code, seconds, stdout, stderr, rss)


def _wait(proc: subprocess.Popen[bytes]) -> tuple[int, float | None]:
    """Wait for *proc*; its exit code and its own peak RSS in MiB."""
    if not hasattr(os, "wait4"):  # Windows: no per-child rusage
        return proc.wait(), None
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    # ru_maxrss is KiB on Linux, bytes on macOS.
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return code, round(usage.ru_maxrss / scale, 1)


def digest(parts: Iterable[bytes]) -> str:
    """A short hash of *parts*, in order."""
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


def tree_key(root: Path) -> str:
    """Hash of a source tree's file names and contents."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return digest(str(p.relative_to(root)).encode() + p.read_bytes() for p in files)


def build_code_key() -> str:
    """Hash of what a build runs or copies into the site: a change there
    means rebuild. Besides the build-side modules, that is the answer ranker
    and the engine's scripts, which a build ships for the browser engine: a
    site kept across a retrain would answer with the old ranker in the
    browser and the new one on the server."""
    package = REPO / "sphinx_ragcite"
    files = sorted(
        p
        for p in package.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.relative_to(package).parts[0] not in QUERY_ONLY
    )
    files.append(Path(os.environ.get("RAGCITE_RANKER") or RANKER_JSON))
    files += sorted(RANKER_JSON.parent.glob("ranker_*.json"))  # other encoders
    files += sorted((REPO / "js").glob("*.js"))
    return digest(
        str(p.relative_to(REPO) if p.is_relative_to(REPO) else p).encode()
        + b"\0"
        + p.read_bytes()
        for p in files
    )


#: Sites (comma-separated names) reused as built even when the build code
#: changed since: for a 20-minute build and a change the caller knows does
#: not touch what it builds. Never set in tests.
REUSE_VAR = "RAGCITE_REUSE_SITES"


def cached_build(
    name: str,
    key: str,
    prepare: Callable[[Path], Path],
    *,
    options: Sequence[str] = (),
    rebuild: bool = False,
    corpus: bool = True,
) -> tuple[Path, float | None]:
    """``results/.sites/<name>/html``, built anew when *key* changed.

    *prepare(workdir)* makes a buildable copy in *workdir* (``src``) and
    returns its source folder, which is built with *options*. Returns the
    output folder and the build's seconds (None when reused); the key and the
    seconds are kept in ``stamp.json`` beside it, the build's warnings in
    ``stderr.txt``. Processes that want the same site (the test suite's xdist
    workers, two benchmarks) take turns on a file lock: one builds, the
    others reuse. A *corpus* (anything but the example book) is built with
    ``$RAGCITE_CORPUS_CONF`` too (see ``site_root``).
    """
    from filelock import FileLock

    conf = corpus_conf() if corpus else []
    root = SITES / "+".join([name, *conf])
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock"):
        outdir = root / "html"
        stamp = root / "stamp.json"
        options = [*options, *(o for v in [*VARIANT, *conf] for o in ("-D", v))]
        key += " ".join(conf)
        fresh = not rebuild and stamp.is_file() and (outdir / _MANIFEST).is_file()
        if fresh and json.loads(stamp.read_text("utf-8")).get("key") == key:
            return outdir, None
        if fresh and name in os.environ.get(REUSE_VAR, "").split(","):
            # a build too long to redo for a change that does not touch it
            # (the widget's JS, which browser_answers.py copies in anyway)
            print(f"{name}: reused as built ({REUSE_VAR})", file=sys.stderr)
            return outdir, None
        if root.exists():
            shutil.rmtree(root)
        work = root / "src"
        work.mkdir(parents=True)
        srcdir = prepare(work)
        print(f"building {name} ...", file=sys.stderr, flush=True)
        doctrees = root / "doctrees"
        build = sphinx_build(srcdir, outdir, "-N", *options, doctrees=doctrees)
        if not (outdir / _MANIFEST).is_file():
            raise BuildFailed(f"{' '.join(build.command)} wrote no {_MANIFEST}")
        (root / "stderr.txt").write_text(build.stderr, "utf-8")
        stamp.write_text(json.dumps({"key": key, "seconds": build.seconds}) + "\n")
        return outdir, build.seconds


def corpus_conf() -> list[str]:
    """The ``-D`` values of ``$RAGCITE_CORPUS_CONF``, read at each build."""
    return sorted(os.environ.get(CORPUS_CONF_VAR, "").split())


def site_root(name: str) -> Path:
    """The folder a corpus or dev set *name* is kept in (``html``, ``src``,
    ``stamp.json``): its own for each ``$RAGCITE_CORPUS_CONF``, so the test
    suite's builds never replace the benchmarks' own."""
    return SITES / "+".join([name, *corpus_conf()])


def checked_site(site: Path) -> Path:
    """*site*, when it is a build with the extension (else exit saying so)."""
    if not (site / _MANIFEST).is_file():
        raise SystemExit(f"{site} has no {_MANIFEST}: not a build")
    return site


def example_site(site: Path | None = None, *, rebuild: bool = False) -> Path:
    """*site* if given (checked), else the example book's build."""
    if site is not None:
        return checked_site(site)
    return example_build(rebuild=rebuild)[0]


def example_build(*, rebuild: bool = False) -> tuple[Path, float | None]:
    """The example book built with the extension: (html, seconds or None)."""
    return cached_build(
        "example_book",
        build_code_key() + tree_key(EXAMPLE_BOOK),
        lambda work: _corpora.prepare_example_book(work, with_ragcite=True),
        rebuild=rebuild,
        corpus=False,
    )


def corpus_site(name: str, *, rebuild: bool = False) -> tuple[Path, float | None]:
    """Corpus *name* of ``_corpora.py`` built with the extension: (html, seconds).

    Raises FileNotFoundError when the corpus or a module its build needs is
    missing.
    """
    path = _corpora.corpus_path(name)
    missing = _corpora.missing_deps(name)
    if path is None:
        raise FileNotFoundError(f"{name} not found: set {_corpora.ENV_VAR}")
    if missing:
        raise FileNotFoundError(f'{name} needs {missing}: pip install -e ".[corpora]"')
    options = _corpora.BUILD_OPTIONS.get(name, ())
    key = build_code_key() + tree_key(path) + _corpora.autodoc_versions(name)
    key += " ".join(options)
    return cached_build(
        name,
        key,
        lambda work: _corpora.prepare_corpus(name, work, with_ragcite=True),
        options=options,
        rebuild=rebuild,
    )


def read_manifest(site: Path) -> dict[str, Any]:
    return json.loads((site / _MANIFEST).read_text("utf-8"))


def read_passages(site: Path) -> list[dict[str, Any]]:
    """The built passages, found through the manifest as the server finds them."""
    return read_jsonl(site / "_ragcite" / read_manifest(site)["files"]["passages"])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# -- the server ------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``uvicorn --factory ...app_from_env`` on 127.0.0.1 in a child process."""

    HOST = "127.0.0.1"  # loopback only, always

    def __init__(self, settings: dict[str, Any], log_dir: Path) -> None:
        self.settings = settings
        self.port = free_port()
        self.url = f"http://{self.HOST}:{self.port}"
        self.log_path = log_dir / f"server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.health: dict[str, Any] = {}
        self.startup_s = 0.0

    def start(self, timeout: float = 180.0) -> None:
        import httpx

        env = {**os.environ, "RAGCITE_SERVER_SETTINGS": json.dumps(self.settings)}
        cmd = [sys.executable, "-m", "uvicorn", "--factory"]
        cmd += ["sphinx_ragcite.server.app:app_from_env", "--host", self.HOST]
        cmd += ["--port", str(self.port), "--log-level", "warning"]
        started = time.perf_counter()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = started + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server exited {self.proc.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(httpx.HTTPError):
                response = httpx.get(f"{self.url}/api/health", timeout=2.0)
                if response.status_code == 200:
                    self.health = response.json()
                    self.startup_s = time.perf_counter() - started
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"no /api/health after {timeout:.0f} s:\n{self.log_tail()}")

    def memory_mib(self) -> dict[str, float]:
        """``VmRSS`` and ``VmHWM`` (peak RSS) of the server process, in MiB."""
        assert self.proc is not None
        values = {}
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        for line in status.splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = round(int(rest.split()[0]) / 1024, 1)
        return values

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def tracebacks(self) -> int:
        """Tracebacks in the server's log, plain or drawn by rich (the MCP
        SDK's ``basicConfig`` installs a RichHandler when ``rich`` is there:
        ``╭─ Traceback (most recent call last ─╮``, cut to the width)."""
        return self.log_text().count("Traceback (most recent call")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- results ---------------------------------------------------------------------


def envelope(benchmark: str, **more: Any) -> dict[str, Any]:
    """The head of a result file: what ran, on what, under how much load.

    *more* (versions such as ``sphinx=...``, options) follows the machine.
    """
    return {
        "benchmark": benchmark,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_at_start": LOADAVG_AT_START,
        "loadavg_at_end": _loadavg(),
        **more,
    }


def write_result(path: Path, payload: Mapping[str, Any]) -> None:
    """*payload* as JSON (UTF-8, indented) at *path*; print the load and where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=2, ensure_ascii=False, default=_plain)
    path.write_text(text + "\n", "utf-8")
    start, end = payload.get("loadavg_at_start"), payload.get("loadavg_at_end")
    if start and end:
        print(
            f"\nload average (1 min) at start {start[0]:.2f}, at end {end[0]:.2f}, "
            f"on {os.cpu_count()} cores (other processes running at the same "
            "time skew the timings)"
        )
    shown = path.resolve()
    print(f"\nwrote {shown.relative_to(REPO) if shown.is_relative_to(REPO) else path}")


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as plain numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def git_commit() -> str | None:
    """The checkout's commit, for a result file (None outside git)."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
    except OSError:
        return None
    return proc.stdout.strip() or None


def git_dirty() -> list[str] | None:
    """Package files that differ from the commit: the figures measured them too."""
    try:
        proc = subprocess.run(
            ["git", "status", "--short", "--", "sphinx_ragcite"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
    except OSError:
        return None
    return proc.stdout.split("\n")[:-1] if proc.returncode == 0 else None


# -- figures ---------------------------------------------------------------------


def percentile(values: Iterable[float], q: float) -> float | None:
    """The *q*-th percentile (0-100), interpolated between the nearest ranks
    as numpy's default does; None when there are no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_ms(
    seconds: Sequence[float],
    quantiles: Sequence[int] = (50, 99),
    *,
    mean: bool = False,
    digits: int = 3,
) -> dict[str, float | None]:
    """``{"p50_ms": ..., "p99_ms": ...}`` (and ``mean_ms``) of timings in seconds."""
    ms = [1000 * s for s in seconds]
    out: dict[str, float | None] = {}
    for q in quantiles:
        value = percentile(ms, q)
        out[f"p{q}_ms"] = None if value is None else round(value, digits)
    if mean:
        out["mean_ms"] = round(statistics.fmean(ms), digits) if ms else None
    return out


def table(head: list[str], body: list[list[str]]) -> str:
    """Columns padded to fit; the first left-aligned, the rest right-aligned."""
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def fmt(row: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )

    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


def share(part: float, whole: int) -> float | None:
    """*part* of *whole*, to four places (None of nothing)."""
    return round(part / whole, 4) if whole else None


def fmt(value: float | None, key: str) -> str:
    """A figure in a table: milliseconds (``*_ms``) whole, others to 3 places."""
    if value is None:
        return "-"
    return f"{value:.0f}" if key.endswith("_ms") else f"{value:.3f}"


# -- plots -----------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One thing a plot draws: its points joined by a line and/or marked."""

    label: str
    points: Sequence[tuple[float, float]]
    color: str = "#1f77b4"
    line: bool = True
    dashed: bool = False
    #: marker radius in pixels (0: none)
    marker: float = 0.0
    #: text written beside each point (same length as *points*, or empty)
    notes: Sequence[str] = field(default_factory=tuple)
    #: where the notes go, in pixels from the point
    note_offset: tuple[float, float] = (6.0, -6.0)
    #: "start": notes begin at the offset; "end": they end there
    note_anchor: str = "start"


def _num(value: float) -> str:
    """A coordinate: one decimal, no negative zero (deterministic output)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _tick(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
    return f"{value:.{decimals}f}"


def svg_plot(
    path: Path,
    title: str,
    xlabel: str,
    ylabel: str,
    series: Sequence[Series],
    *,
    xlim: tuple[float, float] = (0.0, 1.0),
    ylim: tuple[float, float] = (0.0, 1.0),
    xstep: float = 0.2,
    ystep: float = 0.2,
    size: tuple[int, int] = (560, 440),
    legend: str = "upper left",
    subtitle: str = "",
) -> None:
    """A line/point plot of *series* written to *path* as a standalone SVG.

    Axes span *xlim* x *ylim* with ticks every *xstep*/*ystep* and a light
    grid; points outside are clipped. *legend* is ``"upper left"``,
    ``"upper right"``, ``"lower right"`` or ``"none"``. Coordinates are
    rounded to 0.1 px, so equal data give equal files.
    """
    width, height = size
    left, right, top, bottom = 62.0, 18.0, 48.0 if subtitle else 36.0, 50.0
    pw, ph = width - left - right, height - top - bottom
    (x0, x1), (y0, y1) = xlim, ylim
    inset = 8.0  # the data range lies this far inside the frame: edge points show

    def sx(x: float) -> float:
        return left + inset + (x - x0) / (x1 - x0) * (pw - 2 * inset)

    def sy(y: float) -> float:
        return top + ph - inset - (y - y0) / (y1 - y0) * (ph - 2 * inset)

    esc = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, '
        f'sans-serif" font-size="11">',
        f"<title>{esc(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<defs><clipPath id="plot"><rect x="{_num(left)}" y="{_num(top)}" '
        f'width="{_num(pw)}" height="{_num(ph)}"/></clipPath></defs>',
        f'<text x="{_num(width / 2)}" y="20" text-anchor="middle" '
        f'font-size="14" font-weight="bold">{esc(title)}</text>',
    ]
    if subtitle:
        out.append(
            f'<text x="{_num(width / 2)}" y="36" text-anchor="middle" '
            f'fill="#555">{esc(subtitle)}</text>'
        )
    # grid, ticks and tick labels
    for axis, (lo, hi), step in (("x", xlim, xstep), ("y", ylim, ystep)):
        count = round((hi - lo) / step)
        for i in range(count + 1):
            value = lo + i * step
            label = esc(_tick(value, step))
            if axis == "x":
                x = _num(sx(value))
                out.append(
                    f'<line x1="{x}" y1="{_num(top)}" x2="{x}" y2="{_num(top + ph)}" '
                    'stroke="#e5e5e5"/>'
                )
                out.append(
                    f'<line x1="{x}" y1="{_num(top + ph)}" x2="{x}" '
                    f'y2="{_num(top + ph + 5)}" stroke="#333"/>'
                )
                out.append(
                    f'<text x="{x}" y="{_num(top + ph + 18)}" '
                    f'text-anchor="middle">{label}</text>'
                )
            else:
                y = _num(sy(value))
                out.append(
                    f'<line x1="{_num(left)}" y1="{y}" x2="{_num(left + pw)}" y2="{y}" '
                    'stroke="#e5e5e5"/>'
                )
                out.append(
                    f'<line x1="{_num(left - 5)}" y1="{y}" x2="{_num(left)}" y2="{y}" '
                    'stroke="#333"/>'
                )
                out.append(
                    f'<text x="{_num(left - 8)}" y="{_num(sy(value) + 4)}" '
                    f'text-anchor="end">{label}</text>'
                )
    out.append(
        f'<rect x="{_num(left)}" y="{_num(top)}" width="{_num(pw)}" '
        f'height="{_num(ph)}" fill="none" stroke="#333"/>'
    )
    out.append(
        f'<text x="{_num(left + pw / 2)}" y="{_num(height - 12)}" '
        f'text-anchor="middle" font-size="12">{esc(xlabel)}</text>'
    )
    cy = top + ph / 2
    out.append(
        f'<text x="16" y="{_num(cy)}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 16 {_num(cy)})">{esc(ylabel)}</text>'
    )
    # the series, clipped to the plot area
    out.append('<g clip-path="url(#plot)">')
    for s in series:
        coords = [(sx(x), sy(y)) for x, y in s.points]
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        if s.line and len(coords) > 1:
            d = " ".join(
                f"{'M' if i == 0 else 'L'}{_num(x)},{_num(y)}"
                for i, (x, y) in enumerate(coords)
            )
            out.append(
                f'<path d="{d}" fill="none" stroke="{s.color}" '
                f'stroke-width="1.8" stroke-linejoin="round"{dash}/>'
            )
        if s.marker:
            for x, y in coords:
                out.append(
                    f'<circle cx="{_num(x)}" cy="{_num(y)}" r="{_num(s.marker)}" '
                    f'fill="{s.color}" stroke="white" stroke-width="1"/>'
                )
    out.append("</g>")
    for s in series:
        dx, dy = s.note_offset
        for (x, y), note in zip(s.points, s.notes, strict=False):
            if not note or not (x0 <= x <= x1 and y0 <= y <= y1):
                continue
            # kept inside the frame: to the other side of the point near
            # the left or right edge, above it near the bottom, below it
            # near the top
            nx, ny, anchor = sx(x) + dx, sy(y) + dy, s.note_anchor
            if anchor == "start" and nx + 6.0 * len(note) > left + pw:
                nx, anchor = sx(x) - dx, "end"
            elif anchor == "end" and nx - 6.0 * len(note) < left:
                nx, anchor = sx(x) - dx, "start"
            if ny > top + ph - 3:
                ny = sy(y) - abs(dy)
            elif ny - 10 < top:
                ny = sy(y) + abs(dy) + 4
            out.append(
                f'<text x="{_num(nx)}" y="{_num(ny)}" text-anchor="{anchor}" '
                f'font-size="10" fill="{s.color}">{esc(note)}</text>'
            )
    # the legend
    shown = [s for s in series if s.label]
    if legend != "none" and shown:
        line_h = 16.0
        box_w = 24 + 6.2 * max(len(s.label) for s in shown) + 12
        box_h = line_h * len(shown) + 8
        lx = left + 8 if legend.endswith("left") else left + pw - box_w - 8
        ly = top + 8 if legend.startswith("upper") else top + ph - box_h - 8
        out.append(
            f'<rect x="{_num(lx)}" y="{_num(ly)}" width="{_num(box_w)}" '
            f'height="{_num(box_h)}" fill="white" fill-opacity="0.9" '
            'stroke="#bbb"/>'
        )
        for i, s in enumerate(shown):
            y = ly + 4 + line_h * i + line_h / 2
            dash = ' stroke-dasharray="6 4"' if s.dashed else ""
            if s.line:
                out.append(
                    f'<line x1="{_num(lx + 6)}" y1="{_num(y)}" x2="{_num(lx + 26)}" '
                    f'y2="{_num(y)}" stroke="{s.color}" stroke-width="1.8"{dash}/>'
                )
            if s.marker:
                out.append(
                    f'<circle cx="{_num(lx + 16)}" cy="{_num(y)}" '
                    f'r="{_num(min(s.marker, 5.0))}" fill="{s.color}"/>'
                )
            out.append(
                f'<text x="{_num(lx + 32)}" y="{_num(y + 4)}">{esc(s.label)}</text>'
            )
    out.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", "utf-8")
