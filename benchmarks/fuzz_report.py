"""Does any garbled question log, odd path or odd argument crash ``ragcite report``?

Why: the report reads files an operator keeps, copies, edits by hand and
restores (issue 33 found text in ``latency_ms`` and a BLOB question ending it
with a traceback, and ``--json base.db`` writing over the log it read).
Whatever it is given, ``ragcite report`` must either write its page (and
JSON) or exit with status 2 and one line saying what is wrong; it must never
change a byte of a log it reads, nor leave a ``*.tmp`` file behind.

What it does: hypothesis draws cases, each run in a fresh folder through
the CLI's own ``main()`` in this process (so the shipped sentence encoder
groups whatever unanswered questions a case has). A case is one to three
logs, each

- the server's schema (``open_log``) or a hand-made table of the same
  columns without types or constraints (so any value of any type gets in),
  sometimes lacking ``feedback``, ``sites`` or a column;
- rows whose every column is drawn from valid values and from hostile ones:
  NULL, integers to 2**63, floats with NaN and infinities, BLOBs, text that
  is not UTF-8 (``CAST(x'..' AS TEXT)``), NUL, markup, RTL overrides, 5,000
  characters, dates that are none (02-31, 0000, 9999, "yesterday"),
  outcomes and doors the server never writes, ``cited`` as any JSON (ids and
  URLs of every type, 5,000-deep nesting) or none, votes of 2 or "yes",
  sites whose build folder is the example book's, gone, relative, ``/`` or
  a BLOB, and base URLs such as ``javascript:``;
- a file: kept in WAL mode and closed, left with its ``-wal`` (a copy taken
  while a connection held it), reached through a symlink, or no log at
  all (missing, a folder, empty, text, a truncated database, a symlink to
  itself);
- named with spaces, ``?``, ``#``, ``%20``, ``'``, non-ASCII or a leading
  ``-``;

and outputs (``--html``, ``--json``) in a fresh folder, a folder not yet
made, an existing folder, under a file, 300 characters long, a symlink to
itself, or on a log, its ``-wal``, a symlink to it, or each other; and
``--since`` / ``--site`` from valid, empty and garbage values.

A failure is: an exception out of ``main()`` (a traceback), an exit status
other than 0 or 2, "Traceback" on stderr, an exit 2 without its
``ragcite: error:`` line, or any exit 2 when the logs are readable and the
outputs and arguments usable (three cases in four: only their rows are
garbled, and a garbled row must not cost the whole report); on exit 0, a
page that is not ``<!doctype html>`` or holds ``<script``, an event-handler
attribute or a ``javascript:`` link, a JSON that is not strict JSON
(``NaN``, ``Infinity``) or is not ``report_version`` 1; and always, a log or
its ``-wal`` changed, a file appearing beside a log, or a ``*.tmp`` file
left anywhere in the case's folder. Each distinct failure (exception type
and place, or problem) is kept with the first case that showed it.

Run from the repository root (about four minutes for 1,000 cases on two
busy cores; the encoder grouping unanswered questions is most of it)::

    .venv/bin/python benchmarks/fuzz_report.py [--examples 1000] [--seed 0]

Results go to ``benchmarks/results/fuzz_report.json`` unless ``--out``; it
exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from benchmarks._harness import RESULTS, envelope, example_site, write_result
from sphinx_ragcite.cli.commands import main as ragcite
from sphinx_ragcite.questions.schema import SCHEMA, SCHEMA_VERSION

OUT = RESULTS / "fuzz_report.json"
HOSTILE = '<img src=x onerror="alert(1)"></script><script>alert(2)</script>'


@dataclass(frozen=True)
class Garbled:
    """Bytes stored as TEXT (``CAST(? AS TEXT)``): text that is not UTF-8."""

    data: bytes


@dataclass
class Log:
    name: str
    #: "schema" (open_log's), "loose" (no types), "no-feedback", "no-sites",
    #: "no-column"
    schema: str
    questions: list[dict[str, Any]]
    feedback: list[tuple[Any, ...]]
    sites: list[tuple[Any, ...]]
    #: "closed", "wal" (its -wal left), "symlink", "missing", "folder",
    #: "empty", "text", "truncated", "loop" (a symlink to itself)
    file: str


@dataclass
class Case:
    logs: list[Log]
    html: str
    json: str | None
    since: str | None
    site: str | None
    #: readable logs, usable outputs and arguments: anything but exit 0 fails
    good: bool = False


# -- strategies -------------------------------------------------------------------

ODD_TEXT = st.sampled_from(
    [
        HOSTILE,
        "",
        " ",
        "\x00",
        "a\x00b",
        "\u202eevil\u202c",
        "über ß 名前",
        "%2520",
        "../../etc/passwd",
        "javascript:alert(1)",
        "x" * 5000,
        "\n\r\t",
        "'\"<>&",
    ]
)
TEXT = st.one_of(st.text(max_size=30), ODD_TEXT)
ANY = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.binary(max_size=12),
    st.builds(Garbled, st.sampled_from([b"\xff", b"f\xffo", b"\xc3", b"\xed\xa0\x80"])),
    TEXT,
)
STAMPS = st.one_of(
    st.builds(
        lambda d, h: f"2026-10-{d:02d}T{h:02d}:00:00.000000Z",
        st.integers(1, 31),
        st.integers(0, 23),
    ),
    st.sampled_from(
        [
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
            "0000-01-01T00:00:00Z",
            "2026-02-31T10:00:00Z",
            "2026-02-28",
            "2026-10-01 garbage",
            "yesterday",
            "",
        ]
    ),
)
OUTCOMES = st.sampled_from(
    ["answer", "answer", "passages", "not_found", "all", "day", "ANSWER", ""]
)
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    TEXT,
)
JSON_ANY = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["id", "url", "site", "x"]), inner, max_size=4),
    ),
    max_leaves=8,
)
PASSAGE_IDS = st.sampled_from(["ch6-sec4-p1", "ch1-sec0-p1", "ch2-sec1-p2", "nope"])
URLS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "brewing/pour_over.html#ch6-sec4-p1",
            "weird%20name.html",
            "q%27uote.html",
            "/abs.html",
            "%",
            "javascript:alert(1)",
        ]
    ),
    JSON_LEAF,
)
CITATION = st.fixed_dictionaries(
    {"id": st.one_of(PASSAGE_IDS, JSON_LEAF), "url": URLS},
    optional={"site": st.one_of(st.sampled_from(["", "a", HOSTILE]), JSON_LEAF)},
)
CITED = st.integers(0, 7).flatmap(
    lambda k: (
        ANY
        if k == 0
        else st.one_of(
            st.builds(lambda c: json.dumps(c), st.lists(CITATION, max_size=3)),
            st.builds(lambda c: json.dumps(c), st.lists(CITATION, max_size=3)),
            st.builds(lambda v: json.dumps(v), JSON_ANY),
            st.sampled_from(["not json", "[" * 5000 + "]" * 5000, "[1,", '{"id":1}']),
        )
    )
)


def _mostly(valid: st.SearchStrategy[Any], one_in: int = 8) -> st.SearchStrategy[Any]:
    """*valid*, but anything (:data:`ANY`) one time in *one_in*: a row breaks
    a column or two, so each break reaches the code that reads it."""
    return st.integers(0, one_in - 1).flatmap(lambda k: ANY if k == 0 else valid)


SITE_NAMES = st.sampled_from(["", "", "a", "b", HOSTILE])
QUESTION = st.fixed_dictionaries(
    {
        "answer_id": _mostly(
            st.one_of(
                st.sampled_from([f"id{n}" for n in range(6)]), st.uuids().map(str)
            )
        ),
        "asked_at": _mostly(STAMPS),
        "site": _mostly(SITE_NAMES),
        "version": _mostly(st.just("")),
        "question": _mostly(
            st.one_of(
                st.sampled_from(
                    ["How do I get a refund?", "wifi setup", "How long to bloom?"]
                ),
                TEXT,
            )
        ),
        "selection_chars": _mostly(st.just(0)),
        "selection": _mostly(st.none()),
        "outcome": _mostly(OUTCOMES),
        "confidence": _mostly(st.floats(0, 1)),
        "answer": _mostly(st.one_of(st.just("The book says so [1]."), TEXT)),
        "cited": CITED,
        "latency_ms": _mostly(st.floats(0, 5000)),
        "generator": _mostly(st.just("extractive")),
        "door": _mostly(st.sampled_from(["api", "stream", "mcp", "door"])),
    }
)
FEEDBACK = st.tuples(
    _mostly(st.sampled_from([f"id{n}" for n in range(6)])),
    _mostly(st.sampled_from([0, 1, 1.0, 2, -1, "yes"])),
    _mostly(st.one_of(st.none(), TEXT)),
    _mostly(STAMPS),
)


def _site_row(example: str) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.tuples(
        _mostly(SITE_NAMES),
        _mostly(
            st.sampled_from(
                [example, example, "/nonexistent/build", "", "relative/dir", "/"]
            )
        ),
        _mostly(
            st.sampled_from(["", "", "https://book.example.org/", "javascript:x//"])
        ),
    )


FILE_NAMES = st.sampled_from(
    [
        "q.db",
        "q.db",
        "log with space.db",
        "what?.db",
        "a#b.db",
        "p%20c.db",
        "q'uote.db",
        "über.db",
        "-dash.db",
        "x.db",
    ]
)


#: Readable logs, so the rows reach the report's code.
GOOD_SCHEMAS = ["schema", "schema", "loose"]
GOOD_FILES = ["closed", "closed", "closed", "wal", "symlink"]
BAD_SCHEMAS = ["no-feedback", "no-sites", "no-column"]
BAD_FILES = ["missing", "folder", "empty", "text", "truncated", "loop"]


def _log(example: str, schemas: list[str], files: list[str]) -> st.SearchStrategy[Log]:
    return st.builds(
        Log,
        name=FILE_NAMES,
        schema=st.sampled_from(schemas),
        questions=st.lists(QUESTION, max_size=8),
        feedback=st.lists(FEEDBACK, max_size=3),
        sites=st.lists(_site_row(example), max_size=3),
        file=st.sampled_from(files),
    )


GOOD_OUTPUTS = ["out/r.html", "out/new/deeper/r.html", "out/odd name ü'#?.html"]
BAD_OUTPUTS = [
    "out",
    "out/plain/r.html",
    "out/" + "n" * 300 + ".html",
    "LOG",
    "LOG-wal",
    "LOGLINK",
    "LOOP",
    "out/same",
]
GOOD_SINCE = st.one_of(st.none(), st.sampled_from(["2026-10-05", "9999-12-31"]))
BAD_SINCE = st.one_of(st.sampled_from(["2026-13-01", "yesterday", ""]), TEXT)


def cases(example: str) -> st.SearchStrategy[Case]:
    """Three in four cases garble rows only (readable logs, usable outputs
    and arguments), so the rows reach the report; the rest garble files,
    paths and arguments as well."""
    rows = st.builds(
        Case,
        logs=st.lists(_log(example, GOOD_SCHEMAS, GOOD_FILES), min_size=1, max_size=3),
        html=st.sampled_from(GOOD_OUTPUTS),
        json=st.sampled_from([None, "out/r.json"]),
        since=GOOD_SINCE,
        site=st.one_of(st.none(), st.none(), SITE_NAMES, TEXT),
        good=st.just(True),
    )
    everything = st.builds(
        Case,
        logs=st.lists(
            _log(example, GOOD_SCHEMAS + BAD_SCHEMAS, GOOD_FILES + BAD_FILES),
            min_size=1,
            max_size=3,
        ),
        html=st.sampled_from(GOOD_OUTPUTS + BAD_OUTPUTS),
        json=st.sampled_from(
            [None, "out/r.json", "out/same", "out", "LOG", "out/plain/r.json"]
        ),
        since=st.one_of(GOOD_SINCE, BAD_SINCE),
        site=st.one_of(st.none(), SITE_NAMES, TEXT),
    )
    return st.one_of(rows, rows, rows, everything)


# -- making the files ------------------------------------------------------------

COLUMNS = [
    "answer_id",
    "asked_at",
    "site",
    "version",
    "question",
    "selection_chars",
    "selection",
    "outcome",
    "confidence",
    "answer",
    "cited",
    "latency_ms",
    "generator",
    "door",
]


def _bind(value: Any) -> tuple[str, Any]:
    if isinstance(value, Garbled):
        return "CAST(? AS TEXT)", value.data
    return "?", value


def _insert(db: sqlite3.Connection, table: str, columns: list[str], row: Any) -> None:
    binds = [_bind(v) for v in row]
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join(b[0] for b in binds)})"
    )
    with contextlib.suppress(sqlite3.Error):  # a constraint said no: fine
        db.execute(sql, [b[1] for b in binds])


def write_log(folder: Path, log: Log, n: int) -> Path:
    """The log's file in *folder*; returns the path the report is given."""
    path = folder / f"{n}-{log.name}"
    if log.file == "missing":
        return path
    if log.file == "loop":
        path.symlink_to(path)
        return path
    if log.file == "folder":
        path.mkdir()
        return path
    if log.file == "empty":
        path.write_bytes(b"")
        return path
    if log.file == "text":
        path.write_text("not a database " * 100, "utf-8")
        return path
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    if log.schema in ("schema", "no-feedback", "no-sites"):
        db.executescript(SCHEMA)
        if log.schema == "no-feedback":
            db.execute("DROP TABLE feedback")
        if log.schema == "no-sites":
            db.execute("DROP TABLE sites")
    else:
        columns = [
            c for c in COLUMNS if not (log.schema == "no-column" and c == "door")
        ]
        db.executescript(
            f"CREATE TABLE questions (id INTEGER PRIMARY KEY, {', '.join(columns)});"
            "CREATE TABLE feedback (answer_id, helpful, reason, given_at);"
            "CREATE TABLE sites (name, build_dir, base_url);"
        )
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.commit()
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    columns = [c for c in COLUMNS if not (log.schema == "no-column" and c == "door")]
    with db:
        for row in log.questions:
            _insert(db, "questions", columns, [row[c] for c in columns])
        if "feedback" in tables:
            for vote in log.feedback:
                _insert(
                    db, "feedback", ["answer_id", "helpful", "reason", "given_at"], vote
                )
        if "sites" in tables:
            for site in log.sites:
                _insert(db, "sites", ["name", "build_dir", "base_url"], site)
    if log.file == "wal":  # a copy taken while the server held it
        db.execute("PRAGMA wal_autocheckpoint = 0")
        with db:
            _insert(db, "questions", columns, [f"wal{n}", *["x"] * (len(columns) - 1)])
        copy = folder / f"{n}-copy-{log.name}"
        shutil.copyfile(path, copy)
        shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        db.close()
        return copy
    db.close()
    if log.file == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2 + 100])
    if log.file == "symlink":
        link = folder / f"{n}-link-{log.name}"
        link.symlink_to(path)
        return link
    return path


def _output(spec: str, root: Path, first_log: Path) -> str:
    if spec == "LOG":
        return str(first_log)
    if spec == "LOG-wal":
        return f"{first_log}-wal"
    if spec == "LOOP":
        loop = root / "out" / "loop.html"
        loop.symlink_to(loop)
        return str(loop)
    if spec == "LOGLINK":
        link = root / "out" / "to-log.html"
        if not link.is_symlink():
            link.symlink_to(first_log)
        return str(link)
    return str(root / spec)


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file in the logs' folder and a hash of it (the -shm aside: it is
    shared memory, not data)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink() or p.is_dir():
            out[p.name] = "link" if p.is_symlink() else "folder"
        elif not p.name.endswith("-shm"):
            out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# -- checking one case -------------------------------------------------------------


def _strict(value: str) -> Any:
    raise ValueError(f"not strict JSON: {value}")


def run_case(case: Case, root: Path) -> tuple[int | None, str, list[str]]:
    """Run *case* in the empty folder *root*: its exit status, stderr and
    problems."""
    logs_dir = root / "logs"
    logs_dir.mkdir()
    (root / "out").mkdir()
    (root / "out" / "plain").write_text("a file, not a folder", "utf-8")
    paths = [write_log(logs_dir, log, n) for n, log in enumerate(case.logs)]
    html = _output(case.html, root, paths[0])
    json_out = _output(case.json, root, paths[0]) if case.json else None
    argv = ["report", *map(str, paths), "--html", html]
    if json_out:
        argv += ["--json", json_out]
    if case.since is not None:
        argv += ["--since", case.since]
    if case.site is not None:
        argv += ["--site", case.site]
    before = _snapshot(logs_dir)
    out, err = io.StringIO(), io.StringIO()
    problems: list[str] = []
    code: int | None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = ragcite(argv)
    except SystemExit as stop:  # argparse's usage error
        code = stop.code if isinstance(stop.code, int) else 2
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the finding itself
        frame = traceback.extract_tb(error.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        problems.append(f"traceback: {type(error).__name__} at {where}")
        print(f"{where}: {error!r}"[:300], file=sys.stderr)
        code = None
    stderr = err.getvalue()
    if code not in (0, 2, None):
        problems.append(f"exit status {code}")
    if "Traceback" in stderr:
        problems.append("Traceback on stderr")
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    if code == 2 and not (last.startswith("ragcite: error: ") or "usage:" in stderr):
        problems.append(f"exit 2 without a message: {stderr[:200]!r}")
    if case.good and code == 2:
        problems.append(f"a readable log refused: {_kind(stderr, str(root))}")
    if code == 0:
        problems += _check_outputs(Path(html), Path(json_out) if json_out else None)
    after = _snapshot(logs_dir)
    changed = {
        "a -wal" if n.endswith("-wal") else "a log"
        for n in set(before) | set(after)
        if before.get(n) != after.get(n)
    }
    if changed:
        problems.append(f"the logs' folder changed: {', '.join(sorted(changed))}")
    left = [p.name for p in root.rglob("*.tmp")]
    if left:
        problems.append(f"temporary files left: {left}")
    return code, stderr, problems


def _check_outputs(html: Path, json_out: Path | None) -> list[str]:
    problems = []
    page = html.read_text("utf-8") if html.is_file() else ""
    if not page.startswith("<!doctype html>"):
        problems.append("exit 0 but no page")
    if "<script" in page or 'href="javascript:' in page:
        problems.append("script in the page")
    if re.search(r"<[^>]*\son\w+\s*=", page):
        problems.append("event handler attribute in the page")
    if json_out is not None:
        try:
            data = json.loads(json_out.read_text("utf-8"), parse_constant=_strict)
        except (OSError, ValueError) as error:
            problems.append(f"bad JSON: {error}"[:200])
        else:
            if data.get("report_version") != 1:
                problems.append("JSON without report_version 1")
    return problems


# -- the run -----------------------------------------------------------------------


@dataclass
class Tally:
    cases: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    #: the usage errors given, by kind (their text up to the first path)
    errors: Counter[str] = field(default_factory=Counter)
    #: problem -> the first case that showed it
    failures: dict[str, str] = field(default_factory=dict)
    failed_cases: int = 0
    seconds: float = 0.0


def fuzz(examples: int, seed: int, example: str) -> Tally:
    tally = Tally()
    start = time.perf_counter()

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(cases(example))
    def one(case: Case) -> None:
        with tempfile.TemporaryDirectory(prefix="fuzz-report-") as folder:
            code, stderr, problems = run_case(case, Path(folder))
        tally.cases += 1
        tally.statuses[str(code)] += 1
        if code == 2:
            tally.errors[_kind(stderr, folder)] += 1
        if problems:
            tally.failed_cases += 1
        for problem in problems:
            key = re.sub(r"/tmp/fuzz-report-\w+", "TMP", problem)
            if key not in tally.failures:
                tally.failures[key] = repr(case)[:2000]
                print(f"FAIL {key}", file=sys.stderr, flush=True)
        if tally.cases % 50 == 0:
            print(
                f"{tally.cases} cases, {len(tally.failures)} distinct failures",
                file=sys.stderr,
                flush=True,
            )

    one()
    tally.seconds = round(time.perf_counter() - start, 1)
    return tally


def _kind(stderr: str, folder: str) -> str:
    """A usage error without its paths and values, to count errors by kind."""
    line = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    line = line.replace(folder, "TMP")
    line = re.sub(r"TMP\S*|'[^']*'|\"[^\"]*\"", "X", line)
    return line[:90]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    example = str(example_site())
    tally = fuzz(args.examples, args.seed, example)
    print(
        f"{tally.cases} cases in {tally.seconds} s: exit statuses "
        f"{dict(tally.statuses)}; {tally.failed_cases} failed, "
        f"{len(tally.failures)} distinct failures"
    )
    for problem in tally.failures:
        print(f"  {problem}")
    write_result(
        args.out,
        {
            **envelope("fuzz_report", examples=args.examples, seed=args.seed),
            "cases": tally.cases,
            "exit_statuses": dict(tally.statuses),
            "usage_errors": dict(tally.errors.most_common()),
            "failed_cases": tally.failed_cases,
            "failures": tally.failures,
            "seconds": tally.seconds,
        },
    )
    return 1 if tally.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
