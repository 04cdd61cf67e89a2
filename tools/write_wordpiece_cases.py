"""Write the browser question encoder's golden files from the Python encoder.

Why: ``js/wordpiece.js`` and ``js/encode.js`` must give a question the ids
and the vector ``sphinx_ragcite.encoder.Embedder`` gives it (the
encoder ``ragcite serve`` embeds questions with), or the browser retrieves
other passages than the server. These files hold the Python side:

- ``tests/golden/wordpiece_cases.json``: the ids of tricky strings (accents,
  CJK, long words, ``[UNK]``, punctuation, control characters, emoji,
  combining marks, odd whitespace, truncation, the empty string) and of every
  question of the dev sets (``example_book/qa.jsonl``, ``benchmarks/qa/``);
- ``tests/golden/question_vectors.json``: the vectors of 50 questions.

``js/test/wordpiece.test.js`` and ``js/test/encode.test.js`` check the JS
against them; ``tests/test_browser_encoder.py`` checks they are still what
Python gives. Regenerate only on purpose (a new tokenizer or model), then
review the diff:

    python tools/write_wordpiece_cases.py            # write both files
    python tools/write_wordpiece_cases.py --tables   # print wordpiece.js's
                                                     # Unicode tables
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tokenizers
from tokenizers import normalizers, pre_tokenizers

from sphinx_ragcite.encoder import DEFAULT_MAX_TOKENS, Embedder, model_files

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"
WORDPIECE_CASES = GOLDEN / "wordpiece_cases.json"
QUESTION_VECTORS = GOLDEN / "question_vectors.json"
QA_FILES = [
    REPO / "example_book" / "qa.jsonl",
    *sorted((REPO / "benchmarks" / "qa").glob("*.jsonl")),
]

#: Strings picked to catch a Python/JS disagreement, and what each probes.
TRICKY: list[tuple[str, str]] = [
    ("empty", ""),
    ("whitespace only", "   \t\n\r  "),
    (
        "accents",
        "Café crème, naïve, résumé, façade, jalapeño, smörgåsbord, Ærø, Øresund",
    ),
    ("decomposed accents", "Cafe\u0301 cre\u0300me A\u030angstro\u0308m"),
    ("Turkish and German case", "İstanbul ıi IĞDIR Straße STRASSE ẞ"),
    ("Greek final sigma", "ΟΔΥΣΣΕΥΣ Σ ὈΔΥΣΣΕΎΣ λόγος"),
    ("Chinese", "如何安装 XuanCe？强化学习算法有哪些，例如 DQN 和 PPO。"),
    ("Chinese, extension B and compatibility ideographs", "𠀀𪜀𫝀 豈更 ⺀ ㈠ 〇"),
    ("Japanese kana", "日本語のテキスト、コーヒー豆。カタカナ ひらがな ｶﾀｶﾅ ヴァ ゔ"),
    ("Korean", "한국어 커피를 어떻게 만드나요? ㄱㄴㄷ ᄀ"),
    ("long word: 100 letters", "a" * 100),
    ("long word: 101 letters is [UNK]", "a" * 101 + " b"),
    ("long word: 101 accented letters strip to 101", "é" * 101),
    ("long word: 120 code points, 60 after stripping", "e\u0301" * 60),
    (
        "long word: real",
        "pneumonoultramicroscopicsilicovolcanoconiosis Llanfairpwllgwyngyll",
    ),
    ("long word: 150 letters of a URL", "https://example.com/" + "x" * 150),
    (
        "added tokens typed in",
        "what is [UNK] and [CLS] [SEP] [PAD] [MASK] [mask] [UNK][UNK]",
    ),
    ("added tokens inside words", "a[SEP]b x[CLS] [UN K] [[UNK]]"),
    ("unknown characters", "☃ ⌘ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ᚠᛇᚻ"),
    (
        "punctuation",
        "Hello, world! (really?) — yes; “quotes” «guillemets» ¿qué? ¡sí! "
        "1:16 9-bar 20.2% $5 ^_^ `code` a/b\\c {x} [y] <z> ~ | @ # & * + = ‘’ … ‧ ・",
    ),
    ("symbols are not punctuation", "€100 £ ¥ © ® ™ ° ± × ÷ § ¶ → ⇒ ∀ ∑ √ ∞"),
    ("repeated punctuation", "...???!!!---___'''\"\"\""),
    (
        "control and format characters",
        "a\u0000b\u0001c\u007fd\u0085e\u200bf\u200dg\ufeffh\u00adi\u202ej\u2066k",
    ),
    (
        "tab, newlines, vertical tab, form feed",
        "tab\tnew\nline\rcr\u000bvt\u000cff\u001fus",
    ),
    ("replacement character", "\ufffd bad \ufffdbyte"),
    ("private use", "\ue000 a \U000f0000 b \U0010fffd"),
    ("emoji", "I ❤️ coffee ☕ 😀 🥰 👩‍👩‍👧 🇫🇷 👍🏽 🫠 1️⃣ #️⃣"),
    ("combining marks", "ä̈ q̃ a\u0301\u0302\u0303 Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ n\u0303\u0323"),
    ("Indic, Thai, Arabic and Hebrew marks", "हिन्दी ภาษาไทย مَرْحَبًا بالعالم שָׁלוֹם"),
    ("Cyrillic", "Как приготовить кофе? Ёлка ЁЛКА"),
    (
        "whitespace oddities",
        "a\u00a0b\u2003c\u3000d\u2028e\u2029f\u202fg\u205fh\u1680i\u180ej"
        "  multiple     spaces ",
    ),
    ("zero-width only", "\u200b\u200c\u200d\u2060"),
    ("Unicode after 8.0", "\u1c89 \u07fd \u166d \U0001fae8 \U00011f00 \u0897"),
    ("numbers", "1,000,000.50 3.14159 1e-10 0x1F 2^10 ½ ² ① ⅻ ٣ ३"),
    ("fullwidth letters and digits", "ＡＢＣ１２３ ｆｕｌｌ－ｗｉｄｔｈ"),
    ("ligatures and compatibility", "ﬁle ﬂat ﬀ Å Ω ㎏ ℃ µm"),
    ("code", "def f(x): return x**2  # pip install sphinx-ragcite==0.1 --upgrade"),
    ("URL", "https://example.com/a/b?c=d&e=f#frag mailto:me@example.org"),
    ("identifiers", "snake_case __init__ CamelCase HTTPServer XMLHttpRequest iPhone"),
    ("256 tokens exactly: 254 pieces", " ".join(["coffee"] * 254)),
    ("257 tokens cut to 256", " ".join(["coffee"] * 255)),
    ("truncation inside a word's pieces", "x " * 253 + "unbelievably"),
]
#: A few cases at another ``ragcite_embedding_max_tokens``.
OTHER_MAX_TOKENS = [
    (2, "What does a 1:16 brew ratio mean?"),
    (3, "What does a 1:16 brew ratio mean?"),
    (16, "How do I make a bloom with a pour-over and why does it matter?"),
    (128, " ".join(["espresso"] * 200)),
]
#: Vector cases: tricky strings besides the dev-set questions.
VECTOR_EXTRAS = [
    "",
    "Café crème: naïve résumé?",
    "日本語のテキスト、コーヒー豆。",
    "한국어 커피를 어떻게 만드나요?",
    "I ❤️ coffee ☕ 😀",
    "what is [UNK] and [MASK]",
    "a" * 101,
]


def questions() -> list[str]:
    """Every dev-set question, once, in file order."""
    seen: dict[str, None] = {}
    for path in QA_FILES:
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                seen.setdefault(json.loads(line)["question"], None)
    return list(seen)


def book_paragraphs(limit: int = 60) -> list[str]:
    """Paragraphs of the example book's Markdown pages: real, long sentences."""
    out = []
    for path in sorted((REPO / "example_book").glob("*.md")):
        for block in path.read_text("utf-8").split("\n\n"):
            text = " ".join(block.split())
            if len(text) > 200 and not text.startswith(("(", "```", ":")):
                out.append(text)
    return out[:limit]


def long_text() -> str:
    """Four paragraphs in one: well past 256 tokens."""
    return " ".join(book_paragraphs()[:4])


def embedder(max_tokens: int = DEFAULT_MAX_TOKENS) -> Embedder:
    """The question encoder of ``ragcite serve`` (its default model), one thread."""
    return Embedder(model_files(None), max_tokens=max_tokens, threads=1)


def wordpiece_cases(encoder: Embedder) -> dict[str, Any]:
    cases: list[dict[str, Any]] = []

    def add(text: str, about: str, max_tokens: int = encoder.max_tokens) -> None:
        tokenizer = encoder.tokenizer
        if max_tokens != encoder.max_tokens:
            tokenizer = tokenizers.Tokenizer.from_str(encoder.tokenizer.to_str())
            tokenizer.enable_truncation(max_length=max_tokens)
        encoding = tokenizer.encode(text)
        if set(encoding.attention_mask) - {1} or set(encoding.type_ids) - {0}:
            raise SystemExit(f"unexpected mask or type ids for {text!r}")
        cases.append(
            {
                "about": about,
                "text": text,
                "max_tokens": max_tokens,
                "ids": encoding.ids,
            }
        )

    for about, text in TRICKY:
        add(text, about)
    add(long_text(), "four book paragraphs, cut at 256 tokens")
    for max_tokens, text in OTHER_MAX_TOKENS:
        add(text, f"max_tokens {max_tokens}", max_tokens)
    for text in questions():
        add(text, "dev-set question")
    for text in book_paragraphs():
        add(text, "example book paragraph")
    return {
        "about": (
            "Token ids of the question encoder's tokenizer "
            "(sphinx_ragcite.encoder.Embedder: the tokenizer.json below, "
            "truncated to max_tokens, no padding); js/wordpiece.js must give the "
            "same. Written by tools/write_wordpiece_cases.py; regenerate only on "
            "purpose."
        ),
        "tokenizer": tokenizer_path(encoder),
        "tokenizers_version": tokenizers.__version__,
        "cases": cases,
    }


def tokenizer_path(encoder: Embedder) -> str:
    del encoder  # the default model's tokenizer ships in the package
    return str(
        model_files(None).tokenizer.resolve().relative_to(REPO.resolve())
    ).replace("\\", "/")


#: How many questions of each dev set get a vector golden (with the extras
#: and the long text: 50).
VECTOR_SETS = {
    "qa": 20,  # example_book/qa.jsonl
    "xuance_zh": 12,
    "requests": 2,
    "flask": 2,
    "attrs": 2,
    "jinja": 1,
    "packaging_guide": 1,
    "question_topics": 1,
    "squad_unanswerable": 1,
}


def vector_questions() -> list[str]:
    """The first questions of each dev set, the tricky extras, a long text."""
    picked = []
    for path in QA_FILES:
        rows = [
            json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()
        ]
        picked += [row["question"] for row in rows[: VECTOR_SETS.get(path.stem, 0)]]
    return [*picked, *VECTOR_EXTRAS, long_text()]


def question_vectors(encoder: Embedder) -> dict[str, Any]:
    texts = vector_questions()
    vectors = encoder.embed(texts, batch_size=1)
    return {
        "about": (
            "Question vectors of sphinx_ragcite.encoder.Embedder (mean "
            "pooled over the attention mask, L2-normalised), rounded to 6 decimals; "
            "js/encode.js must give each with cosine >= 0.9999. Written by "
            "tools/write_wordpiece_cases.py; regenerate only on purpose."
        ),
        "model": encoder.model_id,
        "max_tokens": encoder.max_tokens,
        "dim": encoder.dim,
        "tokenizer": tokenizer_path(encoder),
        "cases": [
            {
                "text": text,
                "ids": encoder.tokenizer.encode(text).ids,
                "vector": [round(float(x), 6) for x in vector],
            }
            for text, vector in zip(texts, vectors, strict=True)
        ],
    }


def code_points() -> Iterator[int]:
    """Every code point a Rust string can hold (no surrogates)."""
    yield from range(0xD800)
    yield from range(0xE000, 0x110000)


def unicode_tables() -> dict[str, str]:
    """``tokenizers``' own character classes, probed one code point at a time,
    as ``js/wordpiece.js`` writes them: hex ranges ``"a-b,c"``. The characters
    whose decomposition it does not know yet come from Node's NFD (its Unicode
    is newer)."""
    clean = normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=False,
        strip_accents=False,
        lowercase=False,
    )
    cjk = normalizers.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=True,
        strip_accents=False,
        lowercase=False,
    )
    strip = normalizers.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=False,
        strip_accents=True,
        lowercase=False,
    )
    split = pre_tokenizers.BertPreTokenizer()
    found: dict[str, list[int]] = {
        k: [] for k in ("removed", "whitespace", "cjk", "punctuation", "nonspacing")
    }
    for cp in code_points():
        char = chr(cp)
        if clean.normalize_str(char) == "":
            found["removed"].append(cp)
        pieces = len(split.pre_tokenize_str(f"a{char}a"))
        if pieces == 2:
            found["whitespace"].append(cp)
        elif pieces == 3:
            found["punctuation"].append(cp)
        if cjk.normalize_str(char) != char:
            found["cjk"].append(cp)
        if strip.normalize_str(char) == "":
            found["nonspacing"].append(cp)
    # A JS string may hold lone surrogates, a Rust one not: JS drops them.
    found["removed"] += range(0xD800, 0xE000)
    # Decompositions newer than tokenizers' NFD: those Node's NFD makes.
    script = (
        "const out = [];"
        "for (let cp = 0; cp < 0x110000; cp++) {"
        "  if (cp >= 0xd800 && cp <= 0xdfff) continue;"
        "  const c = String.fromCodePoint(cp);"
        "  if (c.normalize('NFD') !== c) out.push(cp);"
        "}"
        "console.log(JSON.stringify(out));"
    )
    node = subprocess.run(
        ["node", "-e", script], capture_output=True, text=True, check=True
    )
    found["no_decomposition"] = [
        cp for cp in json.loads(node.stdout) if strip.normalize_str(chr(cp)) == chr(cp)
    ]
    return {name: ranges(cps) for name, cps in found.items()}


def ranges(cps: Iterable[int]) -> str:
    spans: list[list[int]] = []
    for cp in sorted(cps):
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return ",".join(f"{a:x}-{b:x}" if a != b else f"{a:x}" for a, b in spans)


def write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, ensure_ascii=False, indent=1) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tables", action="store_true", help="print the Unicode tables, write nothing"
    )
    args = parser.parse_args(argv)
    if args.tables:
        for name, text in unicode_tables().items():
            print(f"{name}: {text}\n")
        return 0
    encoder = embedder()
    write(WORDPIECE_CASES, wordpiece_cases(encoder))
    write(QUESTION_VECTORS, question_vectors(encoder))
    for path in (WORDPIECE_CASES, QUESTION_VECTORS):
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
