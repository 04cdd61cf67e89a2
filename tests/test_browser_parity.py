"""The browser's answer engine (``js/engine.js``) answers as the Python one.

The constants and patterns the engines share reach JS from
``sphinx_ragcite/answer/spec.py`` through ``js/spec.js`` (fresh:
``tests/test_js_spec.py``). On that, two layers: the text functions give the
same results on many texts (sentences, content words, numbers, word counts,
question kinds, answer kinds, code); and on every dev set the whole engine
gives the same outcome and cited passage IDs for >= 0.99 of the questions,
confidence within 0.02 (``js/test/parity.test.js`` on case files of
``tools/write_parity_cases.py``).

The example book runs everywhere Node does; the other dev sets where
``../shared`` holds their corpora (marker ``corpora``). Under ``CI=true`` a
missing Node fails instead of skipping: CI must hold the engines together.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sphinx_ragcite.answer import engine as py_engine
from sphinx_ragcite.answer import sentences, units
from sphinx_ragcite.contracts import make_snippet
from sphinx_ragcite.text import split_sentences
from tools import write_parity_cases as cases_tool

from helpers.repo import EXAMPLE_BOOK, REPO, benchmark

JS = REPO / "js"
GOLDEN = REPO / "tests" / "golden" / "parity_example_book.json"


@pytest.fixture(scope="session")
def harness_example_site() -> Path:
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
const data = JSON.parse(fs.readFileSync(input, "utf8"));
const sorted = (set) => [...set].sort();
const at = (text, offset) => S.pythonOffset(text, offset);
const cp = (text, s) => [at(text, s.start), at(text, s.end), s.text];
let result;
if (task === "texts") {
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
def test_text_functions(node: str, harness_example_site: Path, tmp_path: Path) -> None:
    texts = [
        *TRICKY,
        *questions(),
        *source_paragraphs(),
        *passage_texts(harness_example_site),
    ]
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


def test_units(node: str, harness_example_site: Path, tmp_path: Path) -> None:
    """Answer units of multi-line texts (lists, code blocks, back references)."""
    from sphinx_ragcite.answer.evidence import Evidence

    texts = [*TRICKY, *source_paragraphs(), *passage_texts(harness_example_site)]
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
def test_example_book_parity(
    node: str, harness_example_site: Path, tmp_path: Path
) -> None:
    """The committed case file when it was written from this very build and
    ranker (its digest), else one written now from the Python engine."""
    golden = json.loads(GOLDEN.read_text("utf-8"))
    if golden["digest"] == cases_tool.site_digest(harness_example_site):
        case_file = GOLDEN
    else:
        questions = cases_tool.qa_questions(EXAMPLE_BOOK / "qa.jsonl")
        case_file = tmp_path / "example_book.json"
        cases_tool.write(
            case_file,
            cases_tool.cases_for("example_book", harness_example_site, questions),
        )
    figures = parity(node, case_file, tmp_path, harness_example_site)
    # 90 questions, every sixth also asked about a selection
    assert figures["questions"] == 90 + 15
    assert figures["parity"] >= 0.99
    outcomes = figures["outcomes"]
    assert min(outcomes.values()) > 0, outcomes  # every outcome was compared


@pytest.mark.slow
def test_approximate_dense_search_answers_alike(node: str, tmp_path: Path) -> None:
    """A book built with ``ragcite_browser_dense = "approximate"`` (as a big
    book is by default): the server reads the same approximate index as the
    browser, and the JS engine, fetching cluster shards as it goes, gives
    the Python engine's answers."""
    from sphinx_ragcite.retrieval.site import Site

    from helpers.builds import sphinx_build

    site = tmp_path / "html"
    sphinx_build(
        EXAMPLE_BOOK,
        site,
        "-d",
        str(tmp_path / "doctrees"),
        "-D",
        "ragcite_browser_dense=approximate",
    )
    manifest = json.loads((site / "_ragcite" / "manifest.json").read_text("utf-8"))
    assert "dense" in manifest["files"]
    assert Site.load(site).approximate is not None
    questions = cases_tool.qa_questions(EXAMPLE_BOOK / "qa.jsonl")
    case_file = tmp_path / "approximate.json"
    cases_tool.write(case_file, cases_tool.cases_for("approximate", site, questions))
    figures = parity(node, case_file, tmp_path, site)
    assert figures["questions"] == 90 + 15
    assert figures["parity"] >= 0.99


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
    ``$RAGCITE_CORPUS_CONF``, see plugins/environment.py), the Python engine's answers
    written now, the JS engine's compared."""
    try:
        site, questions = cases_tool.dev_set(name)
    except FileNotFoundError as error:
        pytest.skip(str(error))
    case_file = tmp_path / f"{name}.json"
    cases_tool.write(case_file, cases_tool.cases_for(name, site, questions))
    figures = parity(node, case_file, tmp_path)
    assert figures["parity"] >= 0.99
