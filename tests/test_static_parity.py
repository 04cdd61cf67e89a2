"""The browser's tokenizer, stemmer and static search match the Python ones.

``js/tokenize.js``, ``js/stemmer.js`` and ``js/search.js`` run in Node on the
same inputs as ``sphinx_ragcite.text`` and ``search_static``; every
token list, stem and ranking must come out identical.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import Stemmer

from sphinx_ragcite.formats.static import (
    bm25_scores,
    read_static,
    search_static,
    static_passage,
)
from sphinx_ragcite.text import SPEC, spec_for, tokenize, tokenizer, words

from conftest import EXAMPLE_BOOK, REPO, ROOTS, read_manifest, read_passages

NODE = shutil.which("node")
#: Under ``CI=true`` a skip here fails the run (conftest): CI installs Node.
pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        NODE is None, reason="node is not on PATH: the browser scripts cannot run"
    ),
]

JS = REPO / "js"

# Reads the task's input JSON, runs the browser scripts on it, writes the
# result as JSON (a file, not stdout: no console encoding to go wrong).
RUNNER = r"""
const fs = require("fs");
const path = require("path");
const [task, jsdir, input, output] = process.argv.slice(1);
const { tokenize, words } = require(path.join(jsdir, "tokenize.js"));
const { stem } = require(path.join(jsdir, "stemmer.js"));
const { createStaticSearch } = require(path.join(jsdir, "search.js"));
const data = JSON.parse(fs.readFileSync(input, "utf8"));
let result;
if (task === "tokenize") {
  result = data.texts.map((t) => [words(t, data.spec), tokenize(t, data.spec)]);
} else if (task === "stem") {
  result = data.words.map((w) => stem(w));
} else if (task === "search") {
  const engine = createStaticSearch(data.index);
  result = data.queries.map((q) => engine.search(q, data.k));
} else {
  throw new Error("unknown task " + task);
}
fs.writeFileSync(output, JSON.stringify(result));
"""

#: Strings picked to catch a Python/JS disagreement.
#:
#: Left out on purpose: letters and digits added to Unicode after 14.0 (the
#: ``unicodedata`` of Python 3.11), e.g. U+1C89 CYRILLIC CAPITAL LETTER TJE
#: (Unicode 16). Node 20's ICU knows them, so JS finds a word where Python's
#: ``[^\W_]`` sees none (and lower-cases them too). A genuine difference of
#: Unicode versions, not of the two implementations: every code point assigned
#: in Unicode 14 tokenizes alike. The rest, Turkish İ, final sigma, ß and ẞ
#: included, lower-case identically under Python's str.lower and JS's
#: toLowerCase.
TRICKY = [
    "",
    "   \t\n",
    "A 1:16 brew ratio at 9-bar, 20.2 % extraction, 93.5 °C and 18–20 g.",
    "1:15 to 1:17; 200 ppm; 0.5 mm; 2nd crack at 224 °C; v2.0.1; 1e-3; -40",
    "It's the barista's cup; dogs' bowls; o'clock; 'quoted'; rock 'n' roll",
    "Curly quotes: it’s the roaster’s ‘best’ “beans”",
    "snake_case_identifier __dunder__ _private trailing_ a_b_c",
    "CamelCase camelCase HTTPServer XMLHttpRequest iPhone McDonald",
    "The ﬁrst ﬂat ﬀ ﬃ ﬄ ﬅ ligatures",
    "5 µm particles, 3 μm, 10 Å, 2 Ω, 4 ℃, 1 ㎏, ㎖",
    "Full-width ＡＢＣ１２３ and ｈａｌｆ ｋａｔａｋａｎａ ｶﾀｶﾅ",
    "x² y³ H₂O ½ ¼ ⅓ ① ⑩ ⅻ Ⅻ ⁹ ₀",
    "Café crème, naïve, résumé, façade, jalapeño, smörgåsbord, Ærø",
    "Cafe\u0301 decomposed, cre\u0300me, A\u030a",
    "Greek: ΟΔΟΣ ΚΑΙ ΣΟΦΟΣ, Σ, ΑΣ., ΑΣ'Β, Α.Σ, σοφός, ὁδός, ΣΑΣ",
    "German: Straße STRASSE ẞ Maß Fuß GROẞ",
    "Turkish: İstanbul ISTANBUL ıstakoz DİYARBAKIR i̇",
    "Lithuanian and Armenian: Į̃ ǅemal ǈ ǋ և",
    "Cyrillic: Москва ЁЛКА Ёлка; Hebrew: שָׁלוֹם; Arabic: القهوة ١٢٣",
    "Devanagari: हिन्दी कॉफ़ी ०१२; Thai: กาแฟ; Tamil: காபி",
    "CJK: 日本語のテキスト、コーヒー豆。中文咖啡 한국어 커피 〇一二三",
    "Emoji ☕️ coffee 👍🏽 and 🇧🇷 flags, ZWJ 👩‍🔬, math 𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨",
    "Soft\u00adhyphen, zero\u200bwidth, non\u00a0breaking, em\u2014dash",
    "Kelvin \u212a sign, Ohm \u2126, Angstrom \u212b, dotless ı, long ſ",
    "consigned consigning generously dying skies news succeeded knightly",
    "cried ties running hopping caresses ponies relational generate communism",
    "arsenal universal organization international emergency latera pasted geologist",
    "inning outing canning herring earring evening proceed exceed succeed agreed",
    "the and a of to is in it that this with for as on was are be by at or",
    "Thes THE The tHe thE — stopwords only when whole words",
    "ABC123def 123abc 1,000,000 3.14159 0x1F 1_000 №5 #7 @user",
    "email@example.com https://example.com/path?q=1&x=y#frag C++ C# .NET",
    "yes yellow sayyid eying buying enjoying abbey youth Yes YELLOW",
]


def node(task: str, payload: dict, tmp_path: Path) -> list:
    src, dst = tmp_path / f"{task}.in.json", tmp_path / f"{task}.out.json"
    src.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
    subprocess.run(
        [NODE, "-e", RUNNER, task, str(JS), str(src), str(dst)],
        check=True,
        timeout=300,
    )
    return json.loads(dst.read_text("utf-8"))  # type: ignore[no-any-return]


def source_lines() -> list[str]:
    """Every line of the example book's and the test roots' sources."""
    lines: list[str] = []
    paths = sorted(
        p
        for base in (EXAMPLE_BOOK, ROOTS)
        for p in base.rglob("*")
        if p.suffix in {".rst", ".md", ".ipynb", ".jsonl"} and "_build" not in p.parts
    )
    for path in paths:
        text = path.read_text("utf-8")
        if path.suffix == ".ipynb":
            notebook = json.loads(text)
            for cell in notebook["cells"]:
                text = "".join(cell.get("source", []))
                lines += text.splitlines()
                for output in cell.get("outputs", []):
                    lines += "".join(output.get("text", [])).splitlines()
                    for value in output.get("data", {}).values():
                        if isinstance(value, list):
                            lines += "".join(value).splitlines()
        else:
            lines += text.splitlines()
    return lines


@pytest.fixture(scope="module")
def texts() -> list[str]:
    lines = source_lines()
    assert len(lines) > 1000
    return [*TRICKY, *lines]


def test_tokenize_parity(texts, tmp_path):  # type: ignore[no-untyped-def]
    got = node("tokenize", {"texts": texts, "spec": SPEC}, tmp_path)
    assert len(got) == len(texts)
    for text, (js_words, js_tokens) in zip(texts, got, strict=True):
        assert js_words == words(text), text
        assert js_tokens == tokenize(text), text


#: CJK text for the bigram languages, besides the tricky strings.
CJK_TEXTS = [
    "安装XuanCe的方法：pip install xuance版本1.2。强化学习算法（DQN、PPO）",
    "日本語のテキスト、コーヒー豆・Pythonで検索します。ｶﾀｶﾅ〆切々〇𠮷野家",
    "한국어 커피를 마셔요. 설치 방법은 pip install 입니다. 가",
    "混合mixed文本text123数字４５６和ＡＢＣ",
]


@pytest.mark.parametrize(
    "language", ["de", "fr", "es", "ru", "tr", "fi", "zh_CN", "ja", "ko"]
)
def test_tokenize_parity_every_language(texts, language, tmp_path):  # type: ignore[no-untyped-def]
    """The tricky strings and every source line, under each language's spec."""
    spec = spec_for(language)
    tok = tokenizer(spec)
    sample = [*CJK_TEXTS, *texts]
    got = node("tokenize", {"texts": sample, "spec": spec}, tmp_path)
    for text, (js_words, js_tokens) in zip(sample, got, strict=True):
        assert js_words == tok.words(text), text
        if language != "fi":  # Snowball 3.0.1 vs 3.1 (test_languages.py)
            assert js_tokens == tok.tokenize(text), text


#: Endings glued onto the fixture's words, to walk the stemmer's steps.
SUFFIXES = ("s", "es", "ed", "ing", "ly", "edly", "ingly", "ness", "ational", "ization")


def test_stemmer_parity_on_vocabulary(texts, tmp_path):  # type: ignore[no-untyped-def]
    vocabulary = sorted({w for text in texts for w in words(text)})
    assert len(vocabulary) > 2000
    inflected = sorted({w + s for w in vocabulary if w.isalpha() for s in SUFFIXES})
    every = [*vocabulary, *inflected, "dog's", "dogs'", "'tis", "o'neill's'", "'", "''"]
    got = node("stem", {"words": every}, tmp_path)
    expected = Stemmer.Stemmer("english").stemWords(every)
    wrong = [(w, j, p) for w, j, p in zip(every, got, expected, strict=True) if j != p]
    assert not wrong, (
        f"{len(wrong)} of {len(every)} words stem differently: {wrong[:20]}"
    )


@pytest.fixture(scope="module")
def book(example_site: Path) -> Path:
    """The example book's build (the session's)."""
    return example_site


@pytest.fixture(scope="module")
def static_index(book: Path) -> dict:
    files = read_manifest(book)["files"]
    if "static" in files:
        return read_static((book / "_ragcite" / files["static"]).read_bytes())
    # The build does not ship the static index yet: make it from the passages.
    from sphinx_ragcite.formats.bm25 import tokenized
    from sphinx_ragcite.formats.static import static_index as make_static

    records = read_passages(book)
    # Through JSON, as the browser gets it.
    return json.loads(json.dumps(make_static(records, tokenized(records))))  # type: ignore[no-any-return]


def test_passage_text_tokenize_parity(book, tmp_path):  # type: ignore[no-untyped-def]
    from sphinx_ragcite.formats.bm25 import indexed_text

    texts = [indexed_text(r) for r in read_passages(book)]
    got = node("tokenize", {"texts": texts, "spec": SPEC}, tmp_path)
    assert [tokens for _, tokens in got] == [tokenize(t) for t in texts]


def test_search_parity(static_index, tmp_path):  # type: ignore[no-untyped-def]
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    assert len(questions) >= 80
    # Section titles and a few odd queries besides the QA set.
    sections = sorted(
        {static_index["headings"][p[3]] for p in static_index["passages"]}
    )
    queries = [*questions, *sections, "", "the and of", "coffee coffee coffee", "zzzz"]
    k = 10
    got = node("search", {"index": static_index, "queries": queries, "k": k}, tmp_path)
    passages = static_index["passages"]
    for query, hits in zip(queries, got, strict=True):
        docs = search_static(static_index, tokenize(query), k)
        assert [h["passage_id"] for h in hits] == [passages[d][0] for d in docs], query
        scores = bm25_scores(static_index, tokenize(query))
        for hit, doc in zip(hits, docs, strict=True):
            # to the bit: JS sums float32 weights as Python does
            assert hit == {**static_passage(static_index, doc), "score": scores[doc]}
    # Not vacuous: every question of the QA set finds something.
    assert all(got[: len(questions)]), [
        q for q, h in zip(questions, got[: len(questions)], strict=True) if not h
    ]


def test_static_scores_are_bm25s_scores(book):  # type: ignore[no-untyped-def]
    """The static index's BM25 scores equal the server's (bm25s) to the bit,
    so the answer engine in the browser retrieves what the server does."""
    from sphinx_ragcite.retrieval.site import Site

    site = Site.load(book)
    static = read_static((book / "_ragcite" / "search.js").read_bytes())
    lines = (EXAMPLE_BOOK / "qa.jsonl").read_text("utf-8").splitlines()
    questions = [json.loads(line)["question"] for line in lines]
    queries = [*questions, "coffee coffee coffee", "zzzz", ""]
    compared = 0
    for query in queries:
        expected = site.bm25_scores(query)
        got = bm25_scores(static, site.tokenizer.tokenize(query))
        assert set(got) == {int(d) for d in expected.nonzero()[0]}, query
        for doc, score in got.items():
            assert score == float(expected[doc]), (query, doc)
            compared += 1
    assert compared > 1000
