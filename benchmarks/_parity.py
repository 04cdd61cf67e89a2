"""Python/JS parity: the browser's scripts run in Node on the inputs Python sees.

``tests/test_static_parity.py`` and ``languages.py`` (its parity table) share
the Node runner and the strings picked to catch a disagreement.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

JS = Path(__file__).resolve().parents[1] / "js"


# Reads the task's input JSON, runs the browser scripts on it, writes the
# result as JSON (a file, not stdout: no console encoding to go wrong).
RUNNER = r"""
const fs = require("fs");
const path = require("path");
const [task, jsdir, input, output] = process.argv.slice(1);
const { tokenize, words } = require(path.join(jsdir, "tokenize.js"));
const { stem } = require(path.join(jsdir, "stemmer.js"));
const search = require(path.join(jsdir, "search.js"));
const { createStaticSearch, createShardedSearch } = search;
const data = JSON.parse(fs.readFileSync(input, "utf8"));
let result;
async function sharded() {
  // the sharded index of a built site's _ragcite/ folder, read from disk
  const read = (name) =>
    JSON.parse(fs.readFileSync(path.join(data.folder, name), "utf8"));
  const loaded = [];
  const engine = createShardedSearch(read(data.root), async (name) => {
    loaded.push(name);
    return read(name);
  });
  const out = [];
  for (const q of data.queries) {
    loaded.length = 0;
    out.push({ hits: await engine.search(q, data.k), loaded: [...loaded] });
  }
  return out;
}
if (task === "sharded") {
  result = null;
  sharded().then((r) => fs.writeFileSync(output, JSON.stringify(r)), (e) => {
    console.error(e);
    process.exit(1);
  });
} else if (task === "tokenize") {
  result = data.texts.map((t) => [words(t, data.spec), tokenize(t, data.spec)]);
} else if (task === "stem") {
  result = data.words.map((w) => stem(w));
} else if (task === "search") {
  const engine = createStaticSearch(data.index);
  result = data.queries.map((q) => engine.search(q, data.k));
} else {
  throw new Error("unknown task " + task);
}
if (result !== null) fs.writeFileSync(output, JSON.stringify(result));
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
    # text.MAX_TOKEN_LENGTH: counted in code points (JS counts UTF-16 units),
    # after NFKC and lower-casing, before stemming
    "edge " + "a" * 255 + " over " + "b" * 256 + " " + "\U00010300" * 255,
    "\U00010300" * 256 + " " + "ﷺ" * 15 + " " + "ß" * 255 + " " + "ẞ" * 256,
    "x" * 254 + "ﬁ" + " " + "Ａ" * 256 + " 日本" + "q" * 300 + "語",
]

#: CJK text for the bigram languages, besides the tricky strings.
CJK_TEXTS = [
    "安装XuanCe的方法：pip install xuance版本1.2。强化学习算法（DQN、PPO）",
    "日本語のテキスト、コーヒー豆・Pythonで検索します。ｶﾀｶﾅ〆切々〇𠮷野家",
    "한국어 커피를 마셔요. 설치 방법은 pip install 입니다. 가",
    "混合mixed文本text123数字４５６和ＡＢＣ",
]


def node(task: str, payload: dict[str, Any], tmp_path: Path) -> list[Any]:
    """*task* (``tokenize``, ``stem``, ``search`` or ``sharded``) run by the browser's
    scripts in Node on *payload*; the result, through a file in *tmp_path*."""
    node = shutil.which("node")
    if node is None:
        raise FileNotFoundError("node is not on PATH")
    src, dst = tmp_path / f"{task}.in.json", tmp_path / f"{task}.out.json"
    src.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
    subprocess.run(
        [node, "-e", RUNNER, task, str(JS), str(src), str(dst)],
        check=True,
        timeout=300,
    )
    return json.loads(dst.read_text("utf-8"))
