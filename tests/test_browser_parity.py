"""The browser's answer engine (``js/engine.js``) answers as the Python one.

Three layers: the JS twins of the Python constants and patterns are the same
(``test_twins``); the text functions give the same results on many texts
(sentences, content words, numbers, word counts, question kinds, answer
kinds, code); and on every dev set the whole engine gives the same outcome
and cited passage IDs for >= 0.99 of the questions, confidence within 0.02
(``js/test/parity.test.js`` on case files of ``tools/write_parity_cases.py``).

The example book runs everywhere Node does; the other dev sets where
``../shared`` holds their corpora (marker ``corpora``). Under ``CI=true`` a
missing Node fails instead of skipping: CI must hold the engines together.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sphinx_ragcite.answer import (
    citations,
    confidence,
    grounding,
    ranker,
    selection,
    sentences,
    units,
)
from sphinx_ragcite.answer import engine as py_engine
from sphinx_ragcite.contracts import (
    DEFAULT_K,
    HIGH_CONFIDENCE,
    MAX_K,
    MAX_QUESTION,
    MAX_SELECTION,
    MEDIUM_CONFIDENCE,
    USER_SELECTION,
    make_snippet,
)
from sphinx_ragcite.retrieval import fusion
from sphinx_ragcite.retrieval.searchable import SearchRequest
from sphinx_ragcite.text import MIXED, STOPWORDS, split_sentences
from tools import write_parity_cases as cases_tool

from conftest import EXAMPLE_BOOK, REPO, benchmark

JS = REPO / "js"
GOLDEN = REPO / "tests" / "golden" / "parity_example_book.json"


@pytest.fixture(scope="session")
def node() -> str:
    """Node's path; a failure under CI=true when it is missing, else a skip."""
    found = shutil.which("node")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is not on PATH: CI must check the browser engine")
        pytest.skip("node is not on PATH: the browser engine cannot run")
    return found


@pytest.fixture(scope="session")
def example_site() -> Path:
    """The example book built with the extension, once (the benchmarks' cached
    build, keyed by the build code and the book's sources)."""
    return benchmark("_harness").example_build()[0]


# Reads the task's input JSON, runs the engine's modules on it, writes JSON.
RUNNER = r"""
const fs = require("fs");
const path = require("path");
const [task, jsdir, input, output] = process.argv.slice(1);
const S = require(path.join(jsdir, "sentences.js"));
const U = require(path.join(jsdir, "units.js"));
const R = require(path.join(jsdir, "ranker.js"));
const V = require(path.join(jsdir, "verify.js"));
const A = require(path.join(jsdir, "answer.js"));
const F = require(path.join(jsdir, "fusion.js"));
const RT = require(path.join(jsdir, "retrieve.js"));
const E = require(path.join(jsdir, "engine.js"));
const SA = require(path.join(jsdir, "selection_answer.js"));
const T = require(path.join(jsdir, "tokenize.js"));
const data = JSON.parse(fs.readFileSync(input, "utf8"));
const sorted = (set) => [...set].sort();
const at = (text, offset) => S.pythonOffset(text, offset);
const cp = (text, s) => [at(text, s.start), at(text, s.end), s.text];
let result;
if (task === "twins") {
  result = {
    units: {
      SOURCES: U.SOURCES, IGNORECASE: [...U.IGNORECASE].sort(),
      QUESTION_KINDS: U.QUESTION_KINDS,
      MAX_FOLLOW_LINES: U.MAX_FOLLOW_LINES, MAX_UNIT_WORDS: U.MAX_UNIT_WORDS,
      MIN_UNIT_WORDS: U.MIN_UNIT_WORDS, CODE_SYMBOLS: U.CODE_SYMBOLS,
      CJK_PROSE: U.CJK_PROSE, PROSE_MARKS: U.PROSE_MARKS,
      OPENERS: sorted(new Set([...S.STOPWORDS, ...U.OPENER_WORDS])),
      UNIT_FEATURES: U.UNIT_FEATURES, LISTWISE: U.LISTWISE, FEATURES: U.FEATURES,
    },
    sentences: {
      STOPWORDS: S.STOPWORDS, MIXED: S.MIXED, ABBREVIATIONS: sorted(S.ABBREVIATIONS),
      BOUNDARY: S.BOUNDARY_SOURCE, NUMBER: S.NUMBER_SOURCE,
      FILLER: sorted(new Set(T.tokenize(S.FILLER_WORDS, S.ENGLISH))),
    },
    ranker: {
      STRICT_KINDS: sorted(R.STRICT_KINDS), SECOND_CANDIDATES: R.SECOND_CANDIDATES,
      SHOWN_PASSAGES: R.SHOWN_PASSAGES,
    },
    verify: {
      SUPPORT_SIMILARITY: V.SUPPORT_SIMILARITY, SUPPORT_OVERLAP: V.SUPPORT_OVERLAP,
      BRACKETED_NUMBER: V.BRACKETED_NUMBER, SUPPORT_THRESHOLD: V.SUPPORT_THRESHOLD,
      TWIN_MARGIN: V.TWIN_MARGIN, USER_SELECTION: V.USER_SELECTION,
      BRACKET: V.BRACKET, SOURCE: V.SOURCE, CHAPTER: V.CHAPTER,
      MARKER: S.MARKER_SOURCE, LEADING_MARKERS: S.LEADING_MARKERS_SOURCE,
    },
    selection: {
      SELECTION_CONTEXT: SA.SELECTION_CONTEXT, HOLDING_SEARCH: SA.HOLDING_SEARCH,
      HOLDING_WORDS: SA.HOLDING_WORDS, PASSAGE_WEIGHT: SA.PASSAGE_WEIGHT,
      MIN_WORDS: SA.MIN_WORDS, RANK_BONUS: SA.RANK_BONUS, SECOND_FLOOR: SA.SECOND_FLOOR,
      MAX_SENTENCES: SA.MAX_SENTENCES, MAX_WORDS: SA.MAX_WORDS,
      SECOND_SHARE: SA.SECOND_SHARE, OTHER_PASSAGE_SHARE: SA.OTHER_PASSAGE_SHARE,
      REDUNDANT: SA.REDUNDANT, USER_SELECTION: SA.USER_SELECTION,
    },
    answer: {
      NOT_FOUND: A.NOT_FOUND, MAYBE_HERE: A.MAYBE_HERE, SEE_ALSO: A.SEE_ALSO,
      SHOWN_FIELDS: A.SHOWN_FIELDS, SEE_ALSO_FIELDS: A.SEE_ALSO_FIELDS,
      HIGH_CONFIDENCE: A.HIGH_CONFIDENCE, MEDIUM_CONFIDENCE: A.MEDIUM_CONFIDENCE,
      FIT: A.FIT, CURVE: A.CURVE,
    },
    retrieval: { LINEAR_ALPHA: F.LINEAR_ALPHA, DEPTH: RT.DEPTH },
    engine: {
      DEFAULT_K: E.DEFAULT_K, MAX_K: E.MAX_K, MAX_QUESTION: E.MAX_QUESTION,
      MAX_SELECTION: E.MAX_SELECTION,
    },
  };
} else if (task === "texts") {
  result = data.texts.map((text) => ({
    sentences: S.splitSentences(text).map((s) => cp(text, s)),
    words: sorted(S.contentWords(text)),
    numbers: sorted(S.numbers(text)),
    count: S.wordCount(text),
    code: U.looksLikeCode(text),
    kind: U.questionKind(text),
    defused: V.defuseMarkers(text),
    claims: S.splitClaims(text),
    stripped: S.stripMarkers(text),
    snippet: A.makeSnippet(text),
  }));
} else if (task === "kinds") {
  result = data.pairs.map(([kind, text, asked]) => U.kindMatch(kind, text, asked));
} else if (task === "units") {
  result = data.texts.map((text, e) => {
    const item = { text, sentences: S.splitSentences(text) };
    return U.unitsOf(e, item).map((u) => [
      u.first, u.last, u.text, at(text, u.start), at(text, u.end), u.extended,
    ]);
  });
} else if (task === "round") {
  result = data.values.map(([v, n]) => R.pyRound(v, n));
} else {
  throw new Error("unknown task " + task);
}
fs.writeFileSync(output, JSON.stringify(result));
"""


def run_node(node: str, task: str, payload: dict[str, Any], tmp_path: Path) -> Any:
    src, dst = tmp_path / f"{task}.in.json", tmp_path / f"{task}.out.json"
    src.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
    subprocess.run(
        [node, "-e", RUNNER, task, str(JS), str(src), str(dst)],
        check=True,
        timeout=300,
    )
    return json.loads(dst.read_text("utf-8"))


def test_twins(node: str, tmp_path: Path) -> None:
    """Every constant and pattern the JS engine copies is Python's."""
    got = run_node(node, "twins", {}, tmp_path)
    patterns = {
        "BACK_REFERENCE": units._BACK_REFERENCE,
        "YEAR": units._YEAR,
        "NUMBER": units._NUMBER,
        "NUMBER_WORD": units._NUMBER_WORD,
        "MONTH": units._MONTH,
        "CAPITALISED": units._CAPITALISED,
        "CAUSE": units._CAUSE,
        "DEFINITION": units._DEFINITION,
        "CODE_TOKEN": units._CODE_TOKEN,
        "CODE_LINE": units._CODE_LINE,
    }
    assert got["units"]["SOURCES"] == {k: p.pattern for k, p in patterns.items()}
    assert got["units"]["IGNORECASE"] == sorted(
        k for k, p in patterns.items() if p.flags & re.IGNORECASE
    )
    assert got["units"]["QUESTION_KINDS"] == [
        [kind, p.pattern] for kind, p in units.QUESTION_KINDS
    ]
    assert all(not p.flags & re.IGNORECASE for _, p in units.QUESTION_KINDS)
    for name in ("MAX_FOLLOW_LINES", "MAX_UNIT_WORDS", "MIN_UNIT_WORDS"):
        assert got["units"][name] == getattr(units, name), name
    assert got["units"]["CODE_SYMBOLS"] == units.CODE_SYMBOLS
    assert set(got["units"]["CJK_PROSE"]) == units._CJK_PROSE
    assert got["units"]["OPENERS"] == sorted(units._OPENERS)
    assert got["units"]["UNIT_FEATURES"] == list(units.UNIT_FEATURES)
    assert got["units"]["LISTWISE"] == list(units.LISTWISE)
    assert got["units"]["FEATURES"] == list(units.FEATURES)
    assert got["sentences"]["STOPWORDS"] == list(STOPWORDS)
    assert got["sentences"]["MIXED"] == MIXED.spec
    from sphinx_ragcite import text as text_module

    assert got["sentences"]["ABBREVIATIONS"] == sorted(text_module._ABBREVIATIONS)
    assert got["sentences"]["BOUNDARY"] == text_module._BOUNDARY.pattern
    assert got["sentences"]["NUMBER"] == sentences._NUMBER.pattern
    assert got["sentences"]["FILLER"] == sorted(sentences._FILLER)
    assert got["ranker"] == {
        "STRICT_KINDS": sorted(ranker.STRICT_KINDS),
        "SECOND_CANDIDATES": ranker.SECOND_CANDIDATES,
        "SHOWN_PASSAGES": ranker.SHOWN_PASSAGES,
    }
    assert got["verify"] == {
        "SUPPORT_SIMILARITY": grounding.SUPPORT_SIMILARITY,
        "SUPPORT_OVERLAP": grounding.SUPPORT_OVERLAP,
        "BRACKETED_NUMBER": py_engine._BRACKETED_NUMBER.pattern,
        "SUPPORT_THRESHOLD": grounding.SUPPORT_THRESHOLD,
        "TWIN_MARGIN": grounding.TWIN_MARGIN,
        "USER_SELECTION": USER_SELECTION,
        "BRACKET": citations._BRACKET.pattern,
        "SOURCE": citations._SOURCE.pattern,
        "CHAPTER": citations._CHAPTER.pattern,
        "MARKER": sentences._MARKER.pattern,
        "LEADING_MARKERS": sentences._LEADING_MARKERS.pattern.removeprefix("^"),
    }
    assert citations._SOURCE.flags & re.IGNORECASE
    assert citations._CHAPTER.flags & re.IGNORECASE
    assert sentences._MARKER.flags & sentences._LEADING_MARKERS.flags & re.IGNORECASE
    assert got["selection"] == {
        name: getattr(selection, name)
        for name in (
            "SELECTION_CONTEXT", "HOLDING_SEARCH", "HOLDING_WORDS", "PASSAGE_WEIGHT",
            "MIN_WORDS", "RANK_BONUS", "SECOND_FLOOR", "MAX_SENTENCES", "MAX_WORDS",
            "SECOND_SHARE", "OTHER_PASSAGE_SHARE", "REDUNDANT",
        )
    } | {"USER_SELECTION": USER_SELECTION}  # fmt: skip
    assert got["answer"] == {
        "NOT_FOUND": py_engine.NOT_FOUND,
        "MAYBE_HERE": py_engine.MAYBE_HERE,
        "SEE_ALSO": py_engine.SEE_ALSO,
        "SHOWN_FIELDS": list(py_engine.SHOWN_FIELDS),
        "SEE_ALSO_FIELDS": list(py_engine.SEE_ALSO_FIELDS),
        "HIGH_CONFIDENCE": HIGH_CONFIDENCE,
        "MEDIUM_CONFIDENCE": MEDIUM_CONFIDENCE,
        "FIT": {
            "similarity": confidence.FIT_SIMILARITY,
            "overlap": confidence.FIT_OVERLAP,
        },
        "CURVE": {
            "bias": confidence.BIAS,
            "fit": confidence.W_FIT,
            "relevance": confidence.W_RELEVANCE,
            "support": confidence.W_SUPPORT,
        },
    }
    assert got["retrieval"] == {
        "LINEAR_ALPHA": fusion.LINEAR_ALPHA,
        "DEPTH": SearchRequest("q").depth,
    }
    assert py_engine.AnswerEngine.k == DEFAULT_K
    assert py_engine.AnswerEngine.fusion == "linear"
    assert got["engine"] == {
        "DEFAULT_K": DEFAULT_K,
        "MAX_K": MAX_K,
        "MAX_QUESTION": MAX_QUESTION,
        "MAX_SELECTION": MAX_SELECTION,
    }


#: Strings picked to catch a Python/JS disagreement in the text functions.
TRICKY = [
    "",
    "   \t\n",
    "A 1:16 brew ratio at 9-bar, 20.2 % extraction, 93.5 °C and 18–20 g.",
    "See e.g. Dr. Smith and Fig. 3 of the report. Then wait. It ends here!",
    "He said “stop.” Then “go.” [1] The end. (Chapter 5, Section 5.1.2) Next?",
    "x[0] and y[1, 2] are indexes [3]; so is a[10].",
    "Use --count or -v; call os.path.join(a, b) and set DEBUG=True, then run $ make.",
    "def main():\n    return 42\n\nclass Foo:\n    pass",
    "In 1492 Columbus sailed; in 2024 twelve hundred people and several dozens came.",
    "Because of that, the kettle allows you to pour so that water reaches everything.",
    "What is a burr? How many grams? Who invented the French press? Why descale?",
    "How do I install it? Which option sets the port? When was it founded?",
    "Is it safe? What year did it open? Where is it? What is the reason for this?",
    "Café crème, naïve, résumé, façade, jalapeño: ½ ¼ ① ⑩ x² ١٢٣ ०१२",
    "Emoji ☕️ coffee 👍🏽 and math 𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨 then 𠮷野家 here. Next one.",
    "Soft\u00adhyphen, zero\u200bwidth, non\u00a0breaking\u2028line\u3000space. Done.",
    "安装XuanCe的方法：pip install xuance。强化学习算法（DQN、PPO）！什么是PPO？",
    "日本語のテキスト、コーヒー豆。Pythonで検索します。ｶﾀｶﾅ〆切々〇",
    "한국어 커피를 마셔요. 설치 방법은 pip install 입니다.",
    "The 1,000,000 users paid 3.14 or 2,5 each; v2.0.1 shipped.",
    "\u2028 A\u0085B\u001cC D\u000bE.  F. G",
]


def questions() -> list[str]:
    """Every dev set question in the repository."""
    out = []
    files = [
        EXAMPLE_BOOK / "qa.jsonl",
        REPO / "benchmarks" / "click_qa.jsonl",
        *sorted((REPO / "benchmarks" / "qa").glob("*.jsonl")),
    ]
    for path in files:
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line)["question"])
    return out


def source_paragraphs() -> list[str]:
    """The example book's sources, whole and by paragraph (multi-line texts)."""
    out = []
    for path in sorted(EXAMPLE_BOOK.rglob("*")):
        if path.suffix in {".rst", ".md"} and "_build" not in path.parts:
            text = path.read_text("utf-8")
            out.append(text)
            out += [p for p in text.split("\n\n") if p.strip()]
    return out


def passage_texts(site: Path) -> list[str]:
    return [p["text"] for p in benchmark("_harness").read_passages(site)]


@pytest.mark.slow
def test_text_functions(node: str, example_site: Path, tmp_path: Path) -> None:
    texts = [*TRICKY, *questions(), *source_paragraphs(), *passage_texts(example_site)]
    assert len(texts) > 1500
    got = run_node(node, "texts", {"texts": texts}, tmp_path)
    for text, js in zip(texts, got, strict=True):
        expected = {
            "sentences": [[s.start, s.end, s.text] for s in split_sentences(text)],
            "words": sorted(sentences.content_words(text)),
            "numbers": sorted(sentences.numbers(text)),
            "count": sentences.word_count(text),
            "code": units.looks_like_code(text),
            "kind": units.question_kind(text),
            "defused": py_engine.defuse_markers(text),
            "claims": sentences.split_claims(text),
            "stripped": sentences.strip_markers(text),
            "snippet": make_snippet(text),
        }
        assert js == expected, text


def test_kind_match(node: str, tmp_path: Path) -> None:
    kinds = ["when", "quantity", "who", "why", "howto", "definition", "other"]
    texts = [*TRICKY, *source_paragraphs()[:200]]
    asked = ["", "When did Columbus sail in 1492?", "Who invented the French press?"]
    pairs = [[k, t, q] for k in kinds for t in texts for q in asked]
    got = run_node(node, "kinds", {"pairs": pairs}, tmp_path)
    expected = [units.kind_match(k, t, q) for k, t, q in pairs]
    assert got == expected
    assert {0.0, 0.5, 1.0} <= set(expected)  # not vacuous


def test_units(node: str, example_site: Path, tmp_path: Path) -> None:
    """Answer units of multi-line texts (lists, code blocks, back references)."""
    from sphinx_ragcite.answer.evidence import Evidence

    texts = [*TRICKY, *source_paragraphs(), *passage_texts(example_site)]
    texts = [t for t in texts if t.strip()]
    got = run_node(node, "units", {"texts": texts}, tmp_path)
    extended = 0
    for e, (text, js) in enumerate(zip(texts, got, strict=True)):
        cut = tuple(split_sentences(text))
        item = Evidence("k", None, text, cut, None, frozenset(), frozenset(), 0.0, 1)
        expected = [
            [u.first, u.last, u.text, u.start, u.end, u.extended]
            for u in units.units_of(e, item)
        ]
        assert js == expected, text
        extended += sum(u[5] for u in expected)
    assert extended > 20  # lists, code and back references were exercised


def test_python_round(node: str, tmp_path: Path) -> None:
    values = [[0.03125, 4], [0.00015, 4], [0.12345, 4], [1.5, 0], [2.5, 0], [0.8555, 4]]
    values += [[i / 2**k, 4] for k in range(1, 12) for i in range(1, 2**k, 3)]
    values += [[0.1 * i + 1e-9 * j, 2] for i in range(30) for j in (-1, 0, 1)]
    got = run_node(node, "round", {"values": values}, tmp_path)
    assert got == [round(v, n) for v, n in values]


# -- the whole engine, per dev set ---------------------------------------------


def parity(
    node: str, case_file: Path, tmp_path: Path, site: Path | None = None
) -> dict[str, Any]:
    """Run js/test/parity.test.js on one case file; its figures (written to
    *tmp_path*: the case file may be the committed golden one)."""
    out = tmp_path / "parity_figures.jsonl"
    out.unlink(missing_ok=True)
    env = {
        **os.environ,
        "RAGCITE_PARITY_CASES": str(case_file),
        "RAGCITE_PARITY_OUT": str(out),
    }
    if site is not None:
        env["RAGCITE_PARITY_SITE"] = str(site)
    result = subprocess.run(
        [node, "--test", str(JS / "test" / "parity.test.js")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    # the file, not stdout: node --test escapes the quotes of what it prints
    assert out.is_file(), result.stdout + result.stderr
    figures: dict[str, Any] = json.loads(out.read_text("utf-8"))
    print(json.dumps({k: v for k, v in figures.items() if k != "mismatches"}))
    for line in figures["mismatches"]:
        print("  mismatch:", line)
    assert result.returncode == 0, result.stdout + result.stderr
    return figures


@pytest.mark.slow
def test_example_book_parity(node: str, example_site: Path, tmp_path: Path) -> None:
    """The committed case file when it was written from this very build and
    ranker (its digest), else one written now from the Python engine."""
    golden = json.loads(GOLDEN.read_text("utf-8"))
    if golden["digest"] == cases_tool.site_digest(example_site):
        case_file = GOLDEN
    else:
        questions = cases_tool.qa_questions(EXAMPLE_BOOK / "qa.jsonl")
        case_file = tmp_path / "example_book.json"
        cases_tool.write(
            case_file, cases_tool.cases_for("example_book", example_site, questions)
        )
    figures = parity(node, case_file, tmp_path, example_site)
    # 90 questions, every sixth also asked about a selection
    assert figures["questions"] == 90 + 15
    assert figures["parity"] >= 0.99
    outcomes = figures["outcomes"]
    assert min(outcomes.values()) > 0, outcomes  # every outcome was compared


def _corpora_available() -> bool:
    corpora = benchmark("_corpora").corpora_dir()
    return corpora is not None


#: Every dev set (benchmarks/devsets.py) besides the example book: a set added
#: there is compared here too.
DEV_SETS = [name for name in benchmark("devsets").SETS if name != "example_book"]


@pytest.mark.corpora
@pytest.mark.skipif(not _corpora_available(), reason="shared/corpora not found")
@pytest.mark.parametrize("name", DEV_SETS)
def test_dev_set_parity(node: str, name: str, tmp_path: Path) -> None:
    """Each dev set built as answer_quality.py builds it (its cache; with
    ``$RAGCITE_CORPUS_CONF``, see conftest), the Python engine's answers
    written now, the JS engine's compared."""
    try:
        site, questions = cases_tool.dev_set(name)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    case_file = tmp_path / f"{name}.json"
    cases_tool.write(case_file, cases_tool.cases_for(name, site, questions))
    figures = parity(node, case_file, tmp_path)
    assert figures["parity"] >= 0.99
