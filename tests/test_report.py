"""``ragcite report``: question logs -> one HTML page and its JSON (issue 27).

Logs are written by ``benchmarks/_question_log.py`` (``open_log`` and plain
INSERTs, as the server's writer does) against the example book's build. The
grouping runs the shipped encoder, so no test fakes the meaning of a question.
The page is opened in Chromium from ``file://`` with hostile log text.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import pytest

from sphinx_ragcite.cli.commands import main
from sphinx_ragcite.questions.report import build_report
from sphinx_ragcite.questions.schema import open_log

from helpers.builds import read_manifest, sphinx_build
from helpers.repo import benchmark

if TYPE_CHECKING:
    from collections.abc import Iterator

qlog = benchmark("_question_log")

REFUNDS = [
    "How do I get a refund for my order?",
    "Can I return a damaged package and get my money back?",
    "what is your refund policy",
    "I want my money back for the grinder I bought",
    "return an item I ordered online",
]
WIFI = [
    "How do I connect the kettle app to Wi-Fi?",
    "wifi setup for the smart kettle",
    "the kettle will not join my wireless network",
    "Wi-Fi password for the smart kettle",
]
HOSTILE = (
    '<img src=x onerror="window.pwned=1;alert(1)"></script><script>alert(2)</script>'
)


def _day(n: int, hour: int = 9) -> str:
    return f"2026-10-{n:02d}T{hour:02d}:00:00.000000Z"


def _rows(site: str = "") -> list[dict]:
    """Answered questions citing the book, and the two missing topics."""
    rows = [
        qlog.row(
            "How long is the bloom?",
            "answer",
            asked_at=_day(1 + i % 3),
            site=site,
            answer="About 30 to 45 seconds [1].",
            cited=[{"id": "ch6-sec4-p1", "url": None}],
            answer_id=f"{site}a{i}",
        )
        for i in range(6)
    ]
    for i, question in enumerate(REFUNDS + WIFI):
        rows.append(
            qlog.row(
                question,
                "not_found",
                asked_at=_day(2),
                site=site,
                answer_id=f"{site}n{i}",
            )
        )
    rows.append(  # asked twice, spelled differently: one question
        qlog.row(
            REFUNDS[0].upper(),
            "not_found",
            asked_at=_day(3),
            site=site,
            answer_id=f"{site}n-again",
        )
    )
    return rows


@pytest.fixture(scope="module")
def log(example_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("log") / "q.db"
    rows = _rows()
    return qlog.write_log(
        path,
        rows,
        sites={"": (str(example_site), "https://book.example.org/")},
        feedback=[("a0", False, "wrong pour time"), ("a1", True, None)],
    )


@pytest.fixture(scope="module")
def report(log: Path) -> dict:
    return build_report([log])


def _group_of(report: dict, question: str) -> int:
    for n, group in enumerate(report["unanswered"]["groups"]):
        if any(q["question"] == question for q in group["questions"]):
            return n
    raise AssertionError(f"{question!r} is in no group")


def test_groups_put_paraphrases_of_a_missing_topic_together(report: dict) -> None:
    refunds = {_group_of(report, q) for q in REFUNDS}
    wifi = {_group_of(report, q) for q in WIFI}
    assert len(refunds) == 1, report["unanswered"]["groups"]
    assert len(wifi) == 1, report["unanswered"]["groups"]
    assert refunds != wifi
    group = report["unanswered"]["groups"][refunds.pop()]
    # the most asked first: the refund question asked twice (case aside)
    assert group["questions"][0] == {
        "question": REFUNDS[0],
        "count": 2,
        "not_found": 2,
        "passages": 0,
    }
    assert group["count"] == len(REFUNDS) + 1
    assert group["distinct"] == len(REFUNDS)
    # the closest passages come from the built book, as deep links
    assert group["closest"]
    assert all(
        c["link"].startswith("https://book.example.org/") for c in group["closest"]
    )
    gaps = report["unanswered"]
    assert (gaps["asked"], gaps["distinct"], gaps["grouped"]) == (10, 9, 9)


def test_summary_feedback_and_citations(report: dict, example_site: Path) -> None:
    assert report["questions"] == 16
    assert report["outcomes"]["answer"] == {"count": 6, "share": 0.375}
    assert report["outcomes"]["not_found"]["count"] == 10
    assert [d["day"] for d in report["per_day"]] == [_day(n)[:10] for n in (1, 2, 3)]
    assert report["latency_ms"]["all"] == {"p50": 120.0, "p90": 120.0}
    votes = report["feedback"]
    assert (votes["helpful"], votes["unhelpful"]) == (1, 1)
    (bad,) = votes["unhelpful_answers"]
    assert bad["reason"] == "wrong pour time"
    # the log had no URL: the index fills it in, under the base URL
    (cite,) = bad["citations"]
    assert cite["url"].endswith("#ch6-sec4-p1")
    assert cite["link"] == "https://book.example.org/" + cite["url"]
    cited = report["citations"]
    assert cited["top_passages"][0]["passage_id"] == "ch6-sec4-p1"
    assert cited["top_passages"][0]["count"] == 6
    page = cited["top_pages"][0]["page"]
    never = [p["page"] for p in cited["never_cited"][""]]
    assert page not in never
    assert "index.html" in never


def test_json_shape(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out_html, out_json = tmp_path / "r.html", tmp_path / "r.json"
    assert (
        main(["report", str(log), "--html", str(out_html), "--json", str(out_json)])
        == 0
    )
    assert "16 questions" in capsys.readouterr().out
    data = json.loads(out_json.read_text("utf-8"))
    assert data["report_version"] == 1
    assert set(data) >= {
        "report_version",
        "generator",
        "generated_at",
        "logs",
        "filters",
        "rows_read",
        "duplicates",
        "sites",
        "questions",
        "first_asked",
        "last_asked",
        "outcomes",
        "latency_ms",
        "doors",
        "per_day",
        "unanswered",
        "feedback",
        "citations",
        "seconds",
    }
    assert set(data["unanswered"]) == {
        "low_confidence",
        "asked",
        "distinct",
        "grouped",
        "grouped_asked",
        "method",
        "threshold",
        "groups",
    }
    group = data["unanswered"]["groups"][0]
    assert set(group) == {"count", "distinct", "sites", "questions", "closest"}
    assert set(group["closest"][0]) == {
        "passage_id",
        "title",
        "url",
        "link",
        "snippet",
        "score",
    }
    assert set(data["citations"]) == {
        "cited_passages",
        "top_passages",
        "top_pages",
        "never_cited",
    }
    (site,) = data["sites"]
    assert site["index"] == "loaded"
    assert site["pages"] > 5
    html = out_html.read_text("utf-8")
    assert html.startswith("<!doctype html>")
    assert "<script" not in html
    assert 'http-equiv="Content-Security-Policy"' in html


def test_two_replicas_merge_without_double_counting(
    log: Path, tmp_path: Path, example_site: Path
) -> None:
    other = qlog.write_log(
        tmp_path / "b.db",
        [
            *(r for r in _rows() if r["answer_id"] in ("a0", "a1", "n0")),  # copies
            qlog.row("What water temperature?", asked_at=_day(4), answer_id="b1"),
        ],
        sites={"": (str(example_site), "https://book.example.org/")},
        feedback=[("a0", False, "wrong pour time"), ("b1", False, "too vague")],
    )
    merged = build_report([log, other])
    assert merged["rows_read"] == 16 + 4
    assert merged["duplicates"] == 3
    assert merged["questions"] == 17
    assert merged["unanswered"]["asked"] == 10
    assert merged["feedback"]["unhelpful"] == 2
    assert merged["citations"]["top_passages"][0]["count"] == 6


@pytest.mark.slow
def test_since_and_site_filters(example_site: Path, tmp_path: Path) -> None:
    path = qlog.write_log(
        tmp_path / "sites.db",
        [*_rows("book"), *_rows("other")],
        sites={"book": (str(example_site), ""), "other": (str(tmp_path / "gone"), "")},
    )
    since = build_report([path], since="2026-10-03")
    assert since["questions"] == 2 * 3  # day 3: two answers and one refund, per site
    assert since["first_asked"].startswith("2026-10-03")
    one = build_report([path], site="book")
    assert one["questions"] == 16
    assert [s["name"] for s in one["sites"]] == ["book", "other"]
    both = build_report([path])
    gone = next(s for s in both["sites"] if s["name"] == "other")
    assert "is gone" in gone["index"]
    # links without a base URL go into the build folder
    top = both["citations"]["top_pages"]
    assert any(p["link"].startswith(example_site.as_uri()) for p in top)
    # the gone site's questions are still grouped, with the book's passages
    assert both["unanswered"]["asked"] == 20


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no question log at"),
        (b"just some text, not a database at all" * 40, "is not a question log"),
        ("empty-db", "is not a question log (no questions table)"),
        ("version-99", "schema version 99; this sphinx-ragcite reads version 1"),
    ],
)
def test_bad_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: object, message: str
) -> None:
    path = tmp_path / "bad.db"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content == "empty-db":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE other (x)")
        db.close()
    elif content == "version-99":
        open_log(path).close()
        db = sqlite3.connect(path)
        db.execute("PRAGMA user_version = 99")
        db.close()
    code = main(["report", str(path), "--html", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("ragcite: error: ")
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_bad_since(log: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(log), "--html", "x.html", "--since", "last week"]) == 2
    assert "not a date" in capsys.readouterr().err


def test_hostile_text_never_runs_in_chromium(
    example_site: Path, tmp_path: Path, browser
) -> None:
    """In the session's Chromium (conftest), in a context of its own."""
    rows = [
        qlog.row(
            HOSTILE,
            "answer",
            site=HOSTILE,
            answer=f"{HOSTILE} [1]",
            cited=[
                {"id": "ch6-sec4-p1", "url": "javascript:alert(3)"},
                {"id": HOSTILE, "url": f"x.html#{HOSTILE}"},
            ],
            answer_id="evil",
        ),
        qlog.row(f"{HOSTILE} refund", "not_found", site=HOSTILE, answer_id="evil2"),
        qlog.row("</style><svg onload=alert(4)>", "not_found", answer_id="evil3"),
    ]
    path = qlog.write_log(
        tmp_path / "evil.db",
        rows,
        sites={
            HOSTILE: (str(example_site), "javascript:alert(5)//"),
            "": (str(example_site), ""),
        },
        feedback=[("evil", False, HOSTILE)],
    )
    out = tmp_path / "evil.html"
    assert main(["report", str(path), "--html", str(out)]) == 0
    html = out.read_text("utf-8")
    assert "<img" not in html
    assert "<script" not in html
    assert "<svg onload" not in html
    assert not re.search(r"<[^>]*\son\w+\s*=", html)  # no event handler attribute
    assert 'href="javascript:' not in html
    console, dialogs, requests = [], [], []
    context = browser.new_context()
    try:
        page = context.new_page()
        page.on("console", lambda m: console.append((m.type, m.text)))
        page.on("pageerror", lambda e: console.append(("pageerror", str(e))))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(out.as_uri())
        page.wait_for_timeout(300)
        pwned = page.evaluate("() => window.pwned")
        headings = page.locator("h2").all_inner_texts()
        shown = page.locator("body").inner_text()
        # the style was allowed by its hash (a refused one logs an error)
        color = page.evaluate(
            "() => getComputedStyle(document.querySelector('main')).maxWidth"
        )
    finally:
        context.close()
    assert dialogs == []
    assert pwned is None
    assert console == []
    assert requests == [out.as_uri()]
    assert color == "1060px"
    assert "What the book could not answer" in headings
    assert HOSTILE in shown  # shown as text


# -- issue 33: the report's inputs and outputs -----------------------------------


def _small_log(path: Path, **sites: tuple[str, str]) -> Path:
    """Three answered questions: a report of it needs no encoder."""
    return qlog.write_log(
        path,
        [qlog.row(f"question {n}?", "answer", answer_id=f"s{n}") for n in range(3)],
        sites=sites or None,
    )


def _listing(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b"/"
        for p in sorted(folder.rglob("*"))
    }


def _refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str]
) -> tuple[int, str]:
    """Run ``ragcite report`` and return its status and stderr, checking that
    nothing in *tmp_path* was written, truncated or left behind."""
    before = _listing(tmp_path)
    code = main(["report", *argv])
    err = capsys.readouterr().err
    assert _listing(tmp_path) == before
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize(
    "outputs",
    [
        ["--html", "r.html", "--json", "q.db"],
        ["--html", "q.db"],
        ["--html", "./sub/../q.db"],
        ["--html", "link.html"],  # a symlink to the log
        ["--html", "hard.html"],  # a hard link to the log
        ["--html", "r.html", "--json", "q.db-wal"],  # where the WAL goes
        ["--html", "q.db-shm"],
        ["--html", "r.out", "--json", "r.out"],  # the two outputs in one file
        ["--html", "r.out", "--json", "link.out"],  # the same through a symlink
    ],
)
def test_no_output_is_written_over_an_input(
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    outputs: list[str],
) -> None:
    """Issue 33, defect 1: the report would have replaced the log it read."""
    log = _small_log(tmp_path / "q.db")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.html").symlink_to(log)
    (tmp_path / "hard.html").hardlink_to(log)
    (tmp_path / "r.out").write_text("an earlier report", "utf-8")
    (tmp_path / "link.out").symlink_to(tmp_path / "r.out")
    monkeypatch.chdir(tmp_path)
    code, err = _refusal(tmp_path, capsys, ["q.db", *outputs])
    assert code == 2, err
    assert err.startswith("ragcite: error: ")
    assert "refusing to write over it" in err or "two different files" in err


def test_the_wal_of_a_log_in_use_is_not_an_output(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A server holds the log: its last rows are only in the -wal, which the
    report must not replace (nor read the log through a symlink to it)."""
    log = _small_log(tmp_path / "q.db")
    server = sqlite3.connect(log)
    try:
        server.execute("PRAGMA wal_autocheckpoint = 0")
        with server:
            server.execute(
                "INSERT INTO questions (answer_id, asked_at, question, outcome, "
                "latency_ms, door) VALUES ('w1', '2026-10-02T00:00:00Z', 'in the "
                "WAL?', 'answer', 5, 'api')"
            )
        wal = tmp_path / "q.db-wal"
        assert wal.stat().st_size > 0
        (tmp_path / "alias.db").symlink_to(log)
        code, err = _refusal(
            tmp_path, capsys, [str(tmp_path / "alias.db"), "--html", str(wal)]
        )
        assert code == 2, err
        assert "q.db-wal" in err
        assert server.execute("SELECT count(*) FROM questions").fetchone()[0] == 4
    finally:
        server.close()


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_an_output_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture, option: str
) -> None:
    """Issue 33, defect 16: ``--html DIR`` failed late and left ``DIR.tmp``."""
    log = _small_log(tmp_path / "q.db")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kept.txt").write_text("mine", "utf-8")
    argv = [str(log), "--html", str(tmp_path / "r.html"), option, str(tmp_path / "out")]
    if option == "--html":
        argv = [str(log), "--html", str(tmp_path / "out")]
    code, err = _refusal(tmp_path, capsys, argv)
    assert code == 2, err
    assert "is a folder" in err


def test_a_failed_write_writes_nothing_and_leaves_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The page and the JSON are written whole or not at all: when the JSON
    cannot be written (its folder is a file), the page is not either."""
    log = _small_log(tmp_path / "q.db")
    (tmp_path / "plain").write_text("a file, not a folder", "utf-8")
    code, err = _refusal(
        tmp_path,
        capsys,
        [
            str(log),
            "--html",
            str(tmp_path / "r.html"),
            "--json",
            str(tmp_path / "plain" / "r.json"),
        ],
    )
    assert code == 2, err
    assert "cannot write" in err


def test_a_link_or_pipe_output_is_written_through_not_replaced(
    tmp_path: Path,
) -> None:
    """A symlinked output is written where it points and a pipe is written
    into, as the shell's ``>`` would; neither is replaced by a file. (Run as
    root, the old replace turned ``--json /dev/stdout`` into a regular file
    named /dev/stdout; a pipe of our own stands for it here, so this test
    harms nothing on the code it checks.)"""
    log = _small_log(tmp_path / "q.db")
    (tmp_path / "published").mkdir()
    (tmp_path / "r.html").symlink_to(tmp_path / "published" / "r.html")
    pipe = tmp_path / "r.pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(  # a daemon: if the pipe is replaced, it waits on
        target=lambda: got.append(pipe.read_bytes()), daemon=True
    )
    reader.start()
    argv = [str(log), "--html", str(tmp_path / "r.html"), "--json", str(pipe)]
    assert main(["report", *argv]) == 0
    reader.join(10)
    assert (tmp_path / "r.html").is_symlink()
    assert "<!doctype html>" in (tmp_path / "published" / "r.html").read_text()
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    assert json.loads(got[0])["questions"] == 3


@pytest.fixture(scope="module")
def odd_site(tmp_path_factory: pytest.TempPathFactory, rootdir: Path) -> Path:
    """tests/roots/test-odd-names (spaces, é 名前, a literal %41, parentheses)
    and a page with ``'`` in its name, built by ``python -m sphinx``."""
    root = tmp_path_factory.mktemp("odd site")
    srcdir = root / "src"
    shutil.copytree(rootdir / "test-odd-names", srcdir)
    (srcdir / "q'uote.rst").write_text(
        "Quote page\n==========\n\nA page whose name has an apostrophe in it.\n",
        "utf-8",
    )
    index = srcdir / "index.rst"
    index.write_text(index.read_text("utf-8") + "   q'uote\n", "utf-8")
    outdir = root / "html"
    assert sphinx_build(srcdir, outdir, "-d", str(root / "doctrees")) == ""
    return outdir


@pytest.mark.slow
def test_links_into_the_build_folder_open_the_page(
    odd_site: Path, tmp_path: Path, page: Any
) -> None:
    """Issue 33, defect 9: links went out quoted twice (``weird%2520name``).
    Each ``file://`` link of the page, unquoted once, is a file of the build,
    and Chromium opens it."""
    manifest = read_manifest(odd_site)
    data = (odd_site / "_ragcite" / manifest["files"]["passages"]).read_bytes()
    passages = [json.loads(line) for line in data.splitlines()]  # bytes: U+0085
    odd = [p for p in passages if p["url"].partition("#")[0] != "index.html"]
    assert {unquote(p["url"].partition("#")[0]) for p in odd} >= {
        "uni page é 名前.html",
        "weird%41name.html",
        "q'uote.html",
        "paren (1).html",
        "sub dir/deep page.html",
    }
    rows = [  # the URL as the server logs it, and none (the index fills it in)
        qlog.row(
            f"about {p['passage_id']}",
            "answer",
            cited=[{"id": p["passage_id"], "url": p["url"] if n % 2 else None}],
            answer_id=f"odd{n}",
        )
        for n, p in enumerate(odd)
    ]
    log = qlog.write_log(
        tmp_path / "q.db",
        rows,
        sites={"": (str(odd_site), "")},
        feedback=[(r["answer_id"], False, "which page?") for r in rows],
    )
    out = tmp_path / "r.html"
    assert main(["report", str(log), "--html", str(out)]) == 0
    links = set(re.findall(r'href="(file://[^"]*)"', out.read_text("utf-8")))
    links = {html.unescape(link) for link in links}
    pages = {link.partition("#")[0] for link in links}
    assert len(pages) == len({p["url"].partition("#")[0] for p in passages})
    for link in links:
        path = Path(url2pathname(urlsplit(link).path))
        assert path.is_file(), link
        assert path.parent == odd_site or odd_site in path.parents
    titles = {}
    for link in sorted(pages):
        page.goto(out.as_uri())
        page.locator(f'a[href^="{link}"]').first.click()
        page.wait_for_load_state()
        titles[unquote(urlsplit(link).path).rsplit("/", 1)[-1]] = page.title()
    assert titles["q'uote.html"].startswith("Quote page")
    assert titles["weird%41name.html"].startswith("Percent page")
    assert titles["uni page é 名前.html"].startswith("Unicode page")


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """*folder* read-only for this process, really: ``chattr +i`` as root (who
    ignores permissions), ``chmod 555`` otherwise; skipped if neither holds."""
    if os.geteuid() == 0:
        lock = subprocess.run(["chattr", "+i", str(folder)], check=False)
        if lock.returncode:
            pytest.skip("chattr +i is not available here")

        def undo() -> None:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)

        def undo() -> None:
            folder.chmod(0o755)

    try:
        probe = folder / "probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip(f"cannot make {folder} read-only here")
        yield
    finally:
        undo()


def _wal_log(folder: Path, state: str) -> tuple[Path, sqlite3.Connection | None]:
    """A log of 3 + 2 questions in *folder*, as a server leaves it: ``closed``
    (no -wal), ``open`` (a server holds it: its last 2 rows only in the -wal),
    ``copied`` (the log and its -wal without the -shm, as a backup keeps it)."""
    log = _small_log(folder / "q.db")
    server = sqlite3.connect(log)
    server.execute("PRAGMA wal_autocheckpoint = 0")
    with server:
        server.executemany(
            "INSERT INTO questions (answer_id, asked_at, question, outcome, "
            "latency_ms, door) VALUES (?, '2026-10-02T00:00:00Z', ?, 'answer', 5, "
            "'api')",
            [("w1", "in the WAL?"), ("w2", "also in the WAL?")],
        )
    if state == "closed":
        server.close()
        assert not (folder / "q.db-wal").exists()
        return log, None
    if state == "open":
        return log, server
    copy = folder / "backup"
    copy.mkdir()
    shutil.copyfile(log, copy / "q.db")
    shutil.copyfile(folder / "q.db-wal", copy / "q.db-wal")
    server.close()
    return copy / "q.db", None


@pytest.mark.parametrize("state", ["closed", "open", "copied"])
def test_a_log_in_a_read_only_folder_is_read_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture, state: str
) -> None:
    """Issue 33, defect 10: a WAL log in a folder the report may not write
    gave "attempt to write a readonly database". All its rows are read (the
    ones only in the -wal too) and not a byte of the folder changes. (The
    base code read an ``open`` log too; that case checks that the rows only
    in its -wal are read, which ``immutable=1`` alone would miss.)"""
    folder = tmp_path / "logs"
    folder.mkdir()
    log, server = _wal_log(folder, state)
    out = tmp_path / "r.json"
    try:
        before = _listing(folder)
        with _read_only(log.parent):
            code = main(
                [
                    "report",
                    str(log),
                    "--html",
                    str(tmp_path / "r.html"),
                    "--json",
                    str(out),
                ]
            )
        err = capsys.readouterr().err
        after = _listing(folder)
        if server is not None:  # the -shm is shared memory: each reader marks it
            before["q.db-shm"] = after["q.db-shm"] = b"shm"
        assert after == before
    finally:
        if server is not None:
            server.close()
    assert (code, err) == (0, "")
    assert json.loads(out.read_text("utf-8"))["questions"] == 5


def test_a_log_is_read_without_writing_beside_it(tmp_path: Path) -> None:
    """In a folder it may write, reading a closed log leaves no -wal or -shm
    (files made by another user than the server's would lock it out)."""
    log = _small_log(tmp_path / "q.db")
    before = _listing(tmp_path)
    assert build_report([log])["questions"] == 3
    assert _listing(tmp_path) == before


#: Hand edits, each breaking one column of one row (rowid, table, column).
EDITS = [
    ("questions", "latency_ms", "'slow'"),
    ("questions", "question", "x'686f773f'"),  # a BLOB
    ("questions", "asked_at", "'yesterday'"),
    ("questions", "asked_at", "'2026-02-31T10:00:00Z'"),  # no such day
    ("questions", "latency_ms", "9e999"),  # infinity: JSON has none
    ("questions", "site", "x'3432'"),
    ("questions", "cited", "x'5b5d'"),
    ("questions", "confidence", "'high'"),
    ("questions", "outcome", "x'00'"),
    ("feedback", "helpful", "'yes'"),
    ("feedback", "given_at", "x'00'"),
    ("sites", "build_dir", "x'2f'"),
]


def test_hand_edited_rows_are_skipped_and_counted(
    example_site: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 33, defect 11: text in ``latency_ms`` or a BLOB question ended
    the report with a traceback. Each such row is left out, counted and
    named; every other row is reported (text that is not UTF-8 is shown
    with U+FFFD, not left out). Skipping loses the author nothing: the
    report is still made, and says which rows to look at."""
    n = len(EDITS)
    rows = [
        qlog.row(
            f"question {i}?", "not_found" if i == 1 else "answer", answer_id=f"e{i}"
        )
        for i in range(n + 3)
    ]
    sites = {f"site{i}": (str(example_site), "") for i in range(n)}
    log = qlog.write_log(
        tmp_path / "q.db",
        rows,
        sites=sites,
        feedback=[*((f"e{i}", True, None) for i in range(n)), (f"e{n}", False, "?")],
    )
    db = sqlite3.connect(log)
    with db:
        for rowid, (table, column, value) in enumerate(EDITS, start=1):
            db.execute(
                f"UPDATE {table} SET {column} = {value} WHERE rowid = ?", (rowid,)
            )
        # not UTF-8, yet a text: kept, shown with U+FFFD
        db.execute(
            "UPDATE questions SET answer = CAST(x'66ff6f' AS TEXT) WHERE rowid = ?",
            (n + 1,),
        )
    db.close()
    out, data_out = tmp_path / "r.html", tmp_path / "r.json"
    code = main(["report", str(log), "--html", str(out), "--json", str(data_out)])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    data = json.loads(data_out.read_text("utf-8"))
    assert data["skipped"] == n
    assert [(r["table"], r["row"], r["column"]) for r in data["skipped_rows"]] == [
        (table, rowid, column) for rowid, (table, column, _) in enumerate(EDITS, 1)
    ]
    edited_questions = sum(table == "questions" for table, _, _ in EDITS)
    assert data["questions"] == n + 3 - edited_questions
    assert data["feedback"]["helpful"] == n - edited_questions - 2
    (garbled,) = data["feedback"]["unhelpful_answers"]
    assert garbled["answer"] == "f\ufffdo"
    assert "skipped 12 rows" in captured.out
    html_text = out.read_text("utf-8")
    assert "Left out 12 rows" in html_text
    assert "row 1: latency_ms" in html_text


@pytest.mark.slow
@pytest.mark.fuzz
def test_fuzzed_logs_paths_and_arguments_never_crash(example_site: Path) -> None:
    """``benchmarks/fuzz_report.py`` on 120 cases (seed 0): garbled rows,
    broken files, odd paths and arguments give a report or one error line,
    never a traceback, a changed log or a ``*.tmp`` left (``-m fuzz``)."""
    fuzz_report = benchmark("fuzz_report")
    tally = fuzz_report.fuzz(120, 0, str(example_site))
    assert tally.cases == 120
    assert tally.failures == {}
    assert tally.statuses["0"] > 40  # the rows reached the report's code
