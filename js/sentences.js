// @ts-check
/**
 * Text as the Python answer engine cuts it: sentences (`text.split_sentences`),
 * content words, numbers and word counts (`answer/sentences.py`), and Python's
 * regular expressions run in JS (`pyRegExp`).
 *
 * The answer engine's regular expressions are written once, in Python
 * (`answer/spec.py`), and reach JS verbatim through `spec.js`; `pyRegExp`
 * gives each Python's meaning: `\w`, `\d`, `\s` and `\b` are
 * Unicode-aware, `.` stops only at "\n", `$` also matches before a final
 * "\n". Offsets here are UTF-16 indexes, as JS strings count; Python counts
 * code points, so lengths that decide something are counted in code points
 * (`codePoints`) and offsets sent out are converted (`pythonOffset`).
 *
 * Classic script: provides `sentences` (see `lib.js`).
 */

/**
 * A sentence of a text and its [start, end) in it (UTF-16 offsets).
 * @typedef {{text: string, start: number, end: number}} Sentence
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const T = lib.need("tokenize");
  const spec = lib.need("spec");

  /** Python's `str.isspace` characters (`\s` of a str pattern). */
  const SPACE = "\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  /** Python's `\w` of a str pattern: letters, numbers, underscore. */
  const WORD = "\\p{L}\\p{N}_";
  const WORD_BOUNDARY = `(?:(?<=[${WORD}])(?![${WORD}])|(?<![${WORD}])(?=[${WORD}]))`;
  /** Characters a `\` may escape in a `u` pattern as themselves. */
  const SYNTAX = new Set("^$\\.*+?()[]{}|/-");

  /** @type {Map<string, RegExp>} */
  const compiled = new Map();

  /**
   * A Python `re` pattern (as its source is written in Python) as a JS RegExp
   * with the same meaning on the patterns the answer engine uses.
   * @param {string} source the Python pattern
   * @param {string} [flags] JS flags besides `u` ("i" for re.IGNORECASE, "g", "y")
   * @returns {RegExp}
   */
  function pyRegExp(source, flags = "") {
    const key = `${flags}/${source}`;
    const cached = compiled.get(key);
    if (cached) {
      cached.lastIndex = 0;
      return cached;
    }
    let out = "";
    let inClass = false;
    for (let i = 0; i < source.length; i++) {
      const c = source[i];
      if (c === "\\") {
        const e = source[++i];
        if (e === "w") out += inClass ? WORD : `[${WORD}]`;
        else if (e === "d") out += "\\p{Nd}";
        else if (e === "s") out += inClass ? SPACE : `[${SPACE}]`;
        else if (e === "S" && !inClass) out += `[^${SPACE}]`;
        else if (e === "b" && !inClass) out += WORD_BOUNDARY;
        else if (e === "W" || e === "S" || e === "b" || e === "B" || e === "A" || e === "Z") {
          throw new Error(`pyRegExp: \\${e} is not translated (${source})`);
        } else if (/[A-Za-z0-9]/.test(e) || SYNTAX.has(e)) out += "\\" + e;
        else out += e; // Python's identity escape (\" \') is plain in JS
        continue;
      }
      if (inClass) {
        if (c === "]") inClass = false;
        out += c;
      } else if (c === "[") {
        inClass = true;
        out += c;
        if (source[i + 1] === "^") out += source[++i];
        if (source[i + 1] === "]") out += "\\" + source[++i]; // "[]...]": a literal "]"
      } else if (c === "(" && source.startsWith("?P<", i + 1)) {
        out += "(?<"; // a named group, "(?P<name>...)"
        i += 3;
      } else if (c === ".") out += "[^\\n]";
      else if (c === "$") out += "(?=\\n?(?![\\s\\S]))";
      else out += c;
    }
    const made = new RegExp(out, "u" + flags);
    compiled.set(key, made);
    return made;
  }

  /**
   * A pattern of `spec.js` (`answer/spec.py`'s source and flags) as a RegExp.
   * @param {{readonly source: string, readonly flags: string}} pattern
   * @param {string} [flags] more JS flags ("g" to find all, "y" for re.match)
   * @returns {RegExp}
   */
  function pyPattern(pattern, flags = "") {
    return pyRegExp(pattern.source, flags + pattern.flags);
  }

  /**
   * Python's `re.match`: a match at the start of `text`, or null.
   * @param {RegExp} pattern from `pyRegExp(source, "y" + ...)`
   * @param {string} text
   */
  function matchStart(pattern, text) {
    pattern.lastIndex = 0;
    return pattern.exec(text);
  }

  const SPACE_CHAR = new RegExp(`^[${SPACE}]$`, "u");
  const ALNUM_CHAR = /^[\p{L}\p{N}]$/u;
  const SURROGATE = /[\uD800-\uDFFF]/;

  /** @param {string} c one code point */
  const isSpace = (c) => SPACE_CHAR.test(c);
  /** Python's `str.isalnum` of one character. @param {string} c one code point */
  const isAlnum = (c) => ALNUM_CHAR.test(c);

  /**
   * Python's `len`: code points, not UTF-16 units.
   * @param {string} text
   */
  function codePoints(text) {
    if (!SURROGATE.test(text)) return text.length;
    let n = 0;
    for (const _ of text) n++;
    return n;
  }

  /**
   * A UTF-16 offset into `text` as Python's offset (in code points).
   * @param {string} text
   * @param {number} offset
   */
  function pythonOffset(text, offset) {
    return codePoints(text.slice(0, offset));
  }

  /**
   * Python's `str.strip()` / `lstrip()` / `rstrip()` (no argument).
   * @param {string} text
   * @param {"both" | "left" | "right"} [side]
   */
  function pyStrip(text, side = "both") {
    let start = 0;
    let end = text.length;
    if (side !== "right") while (start < end && isSpace(text[start])) start++;
    if (side !== "left") while (end > start && isSpace(text[end - 1])) end--;
    return text.slice(start, end);
  }

  /**
   * Python's `str.split()` (no argument): the runs between whitespace.
   * @param {string} text
   */
  function pySplit(text) {
    return text.split(pyRegExp("\\s+")).filter((w) => w !== "");
  }

  /**
   * Python's `str.count(sub, 0, end)`: non-overlapping occurrences.
   * @param {string} text
   * @param {string} sub
   * @param {number} end
   */
  function countIn(text, sub, end) {
    let n = 0;
    let at = text.indexOf(sub);
    while (at !== -1 && at + sub.length <= end) {
      n++;
      at = text.indexOf(sub, at + sub.length);
    }
    return n;
  }

  /**
   * Python's string order (by code point; JS's `<` compares UTF-16 units).
   * @param {string} a
   * @param {string} b
   */
  function compareStrings(a, b) {
    if (a === b) return 0;
    if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : 1;
    const x = Array.from(a, (c) => /** @type {number} */ (c.codePointAt(0)));
    const y = Array.from(b, (c) => /** @type {number} */ (c.codePointAt(0)));
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] !== y[i]) return x[i] - y[i];
    }
    return x.length - y.length;
  }

  // -- text.py: the answer layer's words and the sentence splitter ----------

  /** `text.STOPWORDS`: Lucene's English stop words, as bm25s ships them. */
  const STOPWORDS = spec.STOPWORDS;
  /** English spec (`text.SPEC`). */
  const ENGLISH = spec.ENGLISH_SPEC;
  /**
   * `text.MIXED`: the answer layer's words in any book: English rules, CJK
   * runs as bigrams, question words kept.
   */
  const MIXED = spec.MIXED_SPEC;
  const CJK_CLASS = spec.CJK_RANGES.map(([lo, hi]) => `\\u{${lo.toString(16)}}-\\u{${hi.toString(16)}}`).join("");
  const CJK_CHAR = new RegExp(`^[${CJK_CLASS}]`, "u");
  const ANY_CJK = new RegExp(`[${CJK_CLASS}]`, "u");

  /** `text.is_cjk`. @param {string} char */
  const isCjk = (char) => CJK_CHAR.test(char);

  /** `text.ABBREVIATIONS`: a full stop after these ends no sentence. */
  const ABBREVIATIONS = /** @type {Set<string>} */ (new Set(spec.ABBREVIATIONS));
  /** `text.CLOSERS`, as `rstrip` strips them. */
  const CLOSERS = new RegExp(`[${spec.CLOSERS.replace(/[\\\]^-]/g, "\\$&")}]+$`, "u");

  /**
   * `text.split_sentences`: sentences of prose; each line of a list, table or
   * code block on its own.
   * @param {string} text
   * @returns {Sentence[]}
   */
  function splitSentences(text) {
    /** @type {Sentence[]} */
    const out = [];
    const boundary = pyPattern(spec.BOUNDARY, "g");
    let offset = 0;
    for (const line of text.split("\n")) {
      let start = 0;
      for (const match of line.matchAll(boundary)) {
        const at = /** @type {number} */ (match.index);
        const before = line.slice(start, at).replace(CLOSERS, "");
        const pieces = pySplit(before);
        const last = pieces.length ? pieces[pieces.length - 1].replace(/\.+$/, "").toLowerCase() : "";
        if (ABBREVIATIONS.has(last) || /^[a-z]$/.test(last)) continue;
        addSentence(out, line, start, at, offset);
        start = at + match[0].length;
      }
      addSentence(out, line, start, line.length, offset);
      offset += line.length + 1;
    }
    return out;
  }

  /**
   * @param {Sentence[]} out
   * @param {string} line
   * @param {number} start
   * @param {number} end
   * @param {number} offset
   */
  function addSentence(out, line, start, end, offset) {
    const piece = line.slice(start, end);
    const stripped = pyStrip(piece);
    if (codePoints(stripped) < 2 || !Array.from(stripped).some(isAlnum)) return;
    const lead = piece.length - pyStrip(piece, "left").length;
    const begin = offset + start + lead;
    out.push({ text: stripped, start: begin, end: begin + stripped.length });
  }

  // -- answer/sentences.py ---------------------------------------------------

  /** @type {Set<string> | null} */
  let filler = null;
  /** @type {Map<string, Set<string>>} */
  const contentCache = new Map();
  const CONTENT_CACHE = 4096;

  /**
   * `sentences.content_words`: stems that carry meaning.
   * @param {string} text
   * @returns {Set<string>}
   */
  function contentWords(text) {
    const hit = contentCache.get(text);
    if (hit) return hit;
    if (filler === null) filler = new Set(T.tokenize(spec.FILLER_WORDS.join(" "), ENGLISH));
    const stop = filler;
    const found = new Set(T.tokenize(text, MIXED).filter((t) => !stop.has(t)));
    if (contentCache.size >= CONTENT_CACHE) contentCache.clear();
    contentCache.set(text, found);
    return found;
  }

  /**
   * `sentences.numbers`: the numbers of a text, without thousands commas.
   * @param {string} text
   * @returns {Set<string>}
   */
  function numbers(text) {
    return new Set(Array.from(text.matchAll(pyPattern(spec.NUMBER, "g")), (m) => m[0].replaceAll(",", "")));
  }

  /**
   * `sentences.word_count`: a run of CJK characters counts one per two.
   * @param {string} text
   */
  function wordCount(text) {
    if (!ANY_CJK.test(text)) return T.words(text, ENGLISH).length;
    let n = 0;
    for (const w of T.words(text, MIXED)) {
      n += isCjk(w) ? Math.floor((codePoints(w) + 1) / 2) : 1;
    }
    return n;
  }

  /**
   * `sentences.strip_markers`: the text without `[1]`-style markers.
   * @param {string} text
   */
  function stripMarkers(text) {
    return pyStrip(text.replace(pyPattern(spec.MARKER, "g"), ""));
  }

  /**
   * `sentences.split_claims`: the sentences of an answer, each keeping the
   * markers written after it (also where the splitter put them at the next
   * sentence's start).
   * @param {string} text
   * @returns {string[]}
   */
  function splitClaims(text) {
    /** @type {string[]} */
    const claims = [];
    for (const sentence of splitSentences(text)) {
      let piece = sentence.text;
      const lead = matchStart(pyPattern(spec.LEADING_MARKERS, "y"), piece);
      if (lead && claims.length) {
        claims[claims.length - 1] += " " + pyStrip(lead[0]);
        piece = piece.slice(lead[0].length);
      }
      if (pyStrip(piece)) claims.push(pyStrip(piece));
    }
    return claims;
  }

  const api = {
    SPACE,
    pyRegExp,
    pyPattern,
    matchStart,
    isSpace,
    isAlnum,
    codePoints,
    pythonOffset,
    pyStrip,
    pySplit,
    countIn,
    compareStrings,
    isCjk,
    splitSentences,
    splitClaims,
    stripMarkers,
    contentWords,
    numbers,
    wordCount,
    STOPWORDS,
    MIXED,
    ENGLISH,
  };
  lib.provide("sentences", api);
  if (typeof module === "object") module.exports = api;
})();
