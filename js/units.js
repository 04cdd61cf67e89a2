// @ts-check
/**
 * Evidence -> answer units and their signals: the JS twin of
 * `sphinx_ragcite/answer/units.py` (read it for the why of each rule).
 *
 * A unit is one sentence, or a sentence with what it cannot stand without:
 * the list, table or code block it introduces, or the sentence before it when
 * it refers back. Each unit gets the signals the ranker weighs (`features`),
 * in the order of `UNIT_FEATURES`; `listwise` adds the signals of a unit
 * among its rivals. The names are checked against ranker.json's `features`.
 *
 * Classic script: provides `units` (see `lib.js`).
 */

/** @typedef {import("./sentences.js").Sentence} Sentence */
/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").EngineUnit} Unit */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const { pyRegExp, pyPattern, matchStart } = S;

  const spec = lib.need("spec");
  // What makes a unit, its signals and the patterns: `answer/spec.py`, whose
  // values reach JS through `spec.js`; the ranker is trained on units so made.
  const { MAX_FOLLOW_LINES, MAX_UNIT_WORDS, MIN_UNIT_WORDS, CODE_SYMBOLS } = spec;
  const { CJK_PROSE, PROSE_MARKS, OPENER_WORDS, QUESTION_KINDS } = spec;
  const { UNIT_FEATURES, LISTWISE, FEATURES } = spec;

  /**
   * `units.question_kind`: what kind of answer the question asks for.
   * @param {string} question
   * @returns {string}
   */
  function questionKind(question) {
    const text = S.pyStrip(question).toLowerCase();
    if (kindPatterns === null) kindPatterns = QUESTION_KINDS.map(([kind, pattern]) => [kind, pyPattern(pattern)]);
    for (const [kind, pattern] of kindPatterns) {
      if (/** @type {RegExp} */ (pattern).test(text)) return /** @type {string} */ (kind);
    }
    return "other";
  }
  /** @type {Array<[string, RegExp]> | null} */
  let kindPatterns = null;

  /** A code symbol: no letter, number, Python whitespace or prose mark. */
  const SYMBOL = new RegExp(
    `[^\\p{L}\\p{N}${S.SPACE}${(PROSE_MARKS + CJK_PROSE).replace(/[\\\]^-]/g, "\\$&")}]`,
    "gu",
  );

  /**
   * `units.looks_like_code`.
   * @param {string} text
   */
  function looksLikeCode(text) {
    const symbols = (text.match(SYMBOL) || []).length;
    return symbols > CODE_SYMBOLS * Math.max(S.codePoints(text), 1);
  }

  /** `units._OPENERS`: capitalised words that open a sentence without naming anyone. */
  const OPENERS = /** @type {Set<string>} */ (new Set([...S.STOPWORDS, ...OPENER_WORDS]));

  /**
   * `units.names_someone`.
   * @param {string} text
   * @param {Set<string>} asked
   */
  function namesSomeone(text, asked) {
    for (const match of text.matchAll(pyPattern(spec.CAPITALISED, "g"))) {
      const word = match[0].toLowerCase();
      if (!asked.has(word) && !OPENERS.has(word)) return true;
    }
    return false;
  }

  const WORDS = pyRegExp("\\w+", "g");

  /**
   * `units.kind_match`: 1 if `text` holds the kind of answer asked for, 0 if
   * not, 0.5 if unknown; what the question itself contains does not count.
   * @param {string} kind
   * @param {string} text
   * @param {string} [question]
   */
  function kindMatch(kind, text, question = "") {
    const asked = new Set(question.toLowerCase().match(WORDS) || []);
    /** @param {{source: string, flags: string}} pattern */
    const fresh = (pattern) => {
      for (const m of text.matchAll(pyPattern(pattern, "g"))) {
        if (!asked.has(m[0].toLowerCase())) return true;
      }
      return false;
    };
    const { YEAR, KIND_NUMBER, NUMBER_WORD, MONTH } = spec;
    if (kind === "when") return Number(fresh(YEAR) || fresh(KIND_NUMBER) || fresh(NUMBER_WORD) || fresh(MONTH));
    if (kind === "quantity") return Number(fresh(KIND_NUMBER) || fresh(NUMBER_WORD));
    if (kind === "who") return Number(namesSomeone(text, asked));
    if (kind === "why") return Number(pyPattern(spec.CAUSE).test(text));
    if (kind === "howto") return Number(pyPattern(spec.CODE_TOKEN).test(text));
    if (kind === "definition") return Number(pyPattern(spec.DEFINITION).test(text));
    return 0.5;
  }

  /**
   * `units._code_blocks`: blocks most of whose lines are code.
   * @param {Sentence[]} sentences
   * @param {number[]} blocks
   * @returns {Set<number>}
   */
  function codeBlocks(sentences, blocks) {
    /** @type {Map<number, boolean[]>} */
    const lines = new Map();
    sentences.forEach((sentence, i) => {
      const flags = lines.get(blocks[i]) || [];
      flags.push(looksLikeCode(sentence.text) || matchStart(pyPattern(spec.CODE_LINE, "y"), sentence.text) !== null);
      lines.set(blocks[i], flags);
    });
    const out = new Set();
    for (const [block, flags] of lines) {
      if (flags.filter(Boolean).length * 2 > flags.length) out.add(block);
    }
    return out;
  }

  /** @param {string} text */
  const asksQuestion = (text) => text.endsWith("?") || text.endsWith("？");

  /**
   * `units.units_of`: every unit of one evidence item, in text order.
   * @param {number} e the item's index in the evidence
   * @param {Evidence} item
   * @returns {Unit[]}
   */
  function unitsOf(e, item) {
    const { sentences, text } = item;
    const blocks = sentences.map((s) => S.countIn(text, "\n\n", s.start));
    const inCode = codeBlocks(sentences, blocks);
    /** @type {Unit[]} */
    const out = [];
    sentences.forEach((sentence, i) => {
      const words = S.wordCount(sentence.text);
      const code = looksLikeCode(sentence.text) || inCode.has(blocks[i]);
      if (asksQuestion(sentence.text) || (code && !opens(i, blocks))) return;
      let first = i;
      let last = i;
      if (i > 0 && matchStart(pyPattern(spec.BACK_REFERENCE, "y"), sentence.text) && blocks[i - 1] === blocks[i]) {
        first = i - 1;
      }
      const tail = S.pyStrip(sentence.text, "right");
      const introduces = tail.endsWith(":") || tail.endsWith("：");
      if (introduces || code) {
        let taken = introduces ? blocks[i] + 1 : blocks[i];
        let total = words;
        let j = i + 1;
        while (
          j < sentences.length &&
          j - i <= MAX_FOLLOW_LINES &&
          (blocks[j] <= taken || (blocks[j] === taken + 1 && inCode.has(blocks[j]) && inCode.has(taken))) &&
          total < MAX_UNIT_WORDS
        ) {
          taken = Math.max(taken, blocks[j]);
          total += S.wordCount(sentences[j].text);
          last = j;
          j++;
        }
      }
      if (first === last && words < MIN_UNIT_WORDS && !code) return;
      if (asksQuestion(S.pyStrip(sentences[last].text, "right"))) return;
      out.push(makeUnit(e, item, first, last, first !== i || last !== i));
    });
    return out;
  }

  /**
   * @param {number} i
   * @param {number[]} blocks
   */
  const opens = (i, blocks) => i === 0 || blocks[i - 1] !== blocks[i];

  /**
   * `units._unit`.
   * @param {number} e
   * @param {Evidence} item
   * @param {number} first
   * @param {number} last
   * @param {boolean} extended
   * @returns {Unit}
   */
  function makeUnit(e, item, first, last, extended) {
    const { sentences } = item;
    const start = sentences[first].start;
    const end = sentences[last].end;
    let body;
    if (first === last) {
      body = sentences[first].text;
    } else if (item.text.slice(start, end).includes("\n\n")) {
      body = item.text
        .slice(start, end)
        .split("\n")
        .filter((line) => S.pyStrip(line) !== "")
        .map((line) => S.pyStrip(line, "right"))
        .join("\n");
    } else {
      body = sentences
        .slice(first, last + 1)
        .map((s) => S.pySplit(s.text).join(" "))
        .join("\n");
    }
    return { evidence: e, first, last, text: body, start, end, extended };
  }

  const LISTWISE_COLUMNS = LISTWISE.map((n) => UNIT_FEATURES.indexOf(n));

  /**
   * `units.listwise`: the units' own signals -> all of FEATURES.
   * @param {number[][]} rows
   * @returns {number[][]}
   */
  function listwise(rows) {
    if (!rows.length) return [];
    const best = LISTWISE_COLUMNS.map((c) => Math.max(...rows.map((r) => r[c])));
    // place by similarity, descending, ties in row order (a stable argsort)
    const order = rows.map((_, i) => i).sort((a, b) => rows[b][0] - rows[a][0] || a - b);
    const place = new Array(rows.length);
    order.forEach((row, at) => (place[row] = at));
    return rows.map((r, i) => [...r, ...LISTWISE_COLUMNS.map((c, j) => best[j] - r[c]), 1 / (1 + place[i])]);
  }

  /**
   * `units.features`: the unit's signals; `sims` holds the question's cosine
   * per sentence of the item, `asked` the question's content words with their
   * idf, in Python's (sorted) order.
   * @param {Unit} unit
   * @param {Evidence} item
   * @param {number[]} sims
   * @param {Array<[string, number]>} asked
   * @param {string} kind
   * @param {number} bm25Share
   * @param {string} question
   * @returns {number[]}
   */
  function features(unit, item, sims, asked, kind, bm25Share, question) {
    let similarity = -Infinity;
    for (let i = unit.first; i <= unit.last; i++) similarity = Math.max(similarity, sims[i]);
    const words = S.contentWords(unit.text);
    const path = item.record ? item.record.heading_path.join(" ") : "";
    const headings = S.contentWords(path);
    let total = 0;
    for (const [, w] of asked) total += w;
    total = total || 1.0;
    /** @param {(term: string) => boolean} found */
    const share = (found) => {
      let sum = 0;
      for (const [t, w] of asked) if (found(t)) sum += w;
      return sum / total;
    };
    const count = asked.length || 1;
    const overlap = asked.length ? asked.filter(([t]) => words.has(t)).length / count : 0.0;
    const headingOverlap = asked.length
      ? asked.filter(([t]) => words.has(t) || headings.has(t)).length / count
      : 0.0;
    const lines = unit.text.split("\n");
    const match = kindMatch(kind, unit.text, question);
    return [
      similarity,
      overlap,
      headingOverlap,
      share((t) => words.has(t)),
      share((t) => words.has(t) || headings.has(t)),
      share((t) => item.words.has(t) || headings.has(t)),
      Math.max(...sims) - similarity,
      item.relevance,
      bm25Share,
      1.0 / Math.max(item.rank, 1),
      Number(match === 1.0),
      Number(match === 0.0),
      Number(unit.extended),
      lines.filter(looksLikeCode).length / lines.length,
      Math.log1p(S.wordCount(unit.text)),
      Number(unit.first === 0),
      similarity * overlap,
    ];
  }

  const api = {
    UNIT_FEATURES,
    LISTWISE,
    FEATURES,
    questionKind,
    looksLikeCode,
    namesSomeone,
    kindMatch,
    unitsOf,
    features,
    listwise,
  };
  lib.provide("units", api);
  if (typeof module === "object") module.exports = api;
})();
