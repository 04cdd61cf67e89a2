// @ts-check
/**
 * The question's pieces for a SentencePiece Unigram encoder
 * (multilingual-e5-small's XLM-R vocabulary), cut exactly as the build's
 * `tokenizers` cuts them, so that the browser's question vector is the
 * server's. `wordpiece.js` does the same for BERT WordPiece encoders;
 * `questionTokenizer(json)` picks one of the two by `model.type`.
 *
 * It reads the `tokenizer.json` that `build_tokenizer()` of
 * `sphinx_ragcite/multilingual.py` writes and runs its stages as
 * `tokenizers` does:
 *
 * 1. `Precompiled`: SentencePiece's normalization map (a darts double-array
 *    trie over UTF-8 keys, then NUL-terminated replacements), applied per
 *    grapheme: a grapheme under 6 UTF-8 bytes whose start matches a key is
 *    replaced whole by that key's replacement (the rest of it dropped),
 *    else each code point is looked up alone (`normalizers/precompiled.rs`,
 *    spm_precompiled's `common_prefix_search`: the shortest match wins);
 * 2. `Replace`: runs of two or more spaces become one;
 * 3. `Metaspace`: spaces become "▁", one is put in front, and the text is
 *    split before each "▁";
 * 4. `Unigram`: each word's best path (Viterbi over the pieces' scores, a
 *    later candidate replacing an earlier one only when strictly better); a
 *    character no piece covers scores `min_score - 10` and runs of them
 *    fuse into one unknown piece (`models/unigram/model.rs`,
 *    `encode_optimized`);
 * then the template `<s> ... </s>`, truncated to `maxTokens` in all.
 *
 * Graphemes come from `Intl.Segmenter` (the browser's ICU), `tokenizers`'
 * from the Rust crate `unicode-segmentation`. They can disagree where their
 * Unicode versions differ (a mark newer than one of them) or on rules one
 * of them lacks, and that changes the text only when the grapheme starts
 * with a character the map replaces and is under 6 bytes: a replaced 1-3
 * byte character followed by a mark, ZWJ or LF. Where `Intl.Segmenter` is
 * missing (Firefox before 125), a regular expression stands in: a
 * character and the marks after it. `tests/test_unigram_port.py` checks
 * every code point of planes 0-3 and 14, alone and after replaced
 * characters, against `tokenizers`, in Node with either, and in Chromium;
 * `js/test/unigram.test.js` the ids of `tests/golden/unigram_cases.json`
 * (written by `tools/write_unigram_cases.py`).
 *
 * Classic script: provides `unigram` (see `lib.js`); load `wordpiece.js` first.
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** spm_precompiled replaces a whole grapheme only when it is shorter (UTF-8 bytes). */
  const WHOLE_GRAPHEME_BYTES = 6;
  /** `K_UNK_PENALTY` of `models/unigram/model.rs`. */
  const UNK_PENALTY = 10;
  /** Lone UTF-16 surrogates: a Rust string cannot hold them; dropped, as `wordpiece.js` does. */
  const LONE_SURROGATE = /\p{Cs}/gu;

  /** @param {number} cp */
  const utf8Length = (cp) => (cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);

  /**
   * The UTF-8 bytes of `text` (no lone surrogates) into `out`; their count.
   * @param {string} text
   * @param {number[]} out
   */
  function utf8(text, out) {
    out.length = 0;
    for (const ch of text) {
      const cp = /** @type {number} */ (ch.codePointAt(0));
      if (cp < 0x80) out.push(cp);
      else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
      else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
      else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    }
    return out.length;
  }

  /**
   * SentencePiece's `precompiled_charsmap`, as spm_precompiled reads it:
   * a little-endian u32 trie size, the trie's u32 units, then the
   * replacements, each ended by a NUL.
   */
  class Charsmap {
    /** @param {Uint8Array} bytes */
    constructor(bytes) {
      if (bytes.length < 4) throw new Error("tokenizer.json: precompiled_charsmap is too short");
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const trieSize = view.getUint32(0, true);
      if (4 + trieSize > bytes.length) throw new Error("tokenizer.json: precompiled_charsmap is cut short");
      this.units = new Uint32Array(trieSize >>> 2);
      for (let i = 0; i < this.units.length; i++) this.units[i] = view.getUint32(4 + 4 * i, true);
      this.normalized = bytes.subarray(4 + trieSize);
      this.decoder = new TextDecoder("utf-8", { fatal: true });
      this.decoder.decode(this.normalized); // the replacements must be UTF-8, as Rust requires
      /** @type {number[]} */
      this.bytes = [];
      /** The replacements, decoded once each, by offset. */
      /** @type {Map<number, string>} */
      this.decoded = new Map();
    }

    /**
     * The replacement of the shortest key `text` starts with, or null
     * (`Precompiled::transform`).
     * @param {string} text
     * @returns {string | null}
     */
    transform(text) {
      const at = this.firstMatch(this.bytes, utf8(text, this.bytes));
      if (at < 0) return null;
      let out = this.decoded.get(at);
      if (out === undefined) {
        let end = at;
        while (end < this.normalized.length && this.normalized[end] !== 0) end++;
        out = this.decoder.decode(this.normalized.subarray(at, end));
        this.decoded.set(at, out);
      }
      return out;
    }

    /**
     * darts' `common_prefix_search`, stopped at its first result: the
     * offset of the shortest key's replacement, or -1.
     * @param {number[]} key UTF-8 bytes
     * @param {number} length
     */
    firstMatch(key, length) {
      const units = this.units;
      if (!units.length) return -1;
      let pos = offset(units[0]);
      for (let i = 0; i < length; i++) {
        const c = key[i];
        if (c === 0) return -1;
        pos ^= c;
        // Rust indexes out of bounds with a panic; no key goes there.
        if (pos >= units.length) return -1;
        const unit = units[pos];
        if ((unit & 0x800000ff) >>> 0 !== c) return -1;
        pos ^= offset(unit);
        if ((unit >>> 8) & 1) return pos < units.length ? units[pos] & 0x7fffffff : -1;
      }
      return -1;
    }
  }

  /** @param {number} unit */
  const offset = (unit) => (unit >>> 10) << ((unit & (1 << 9)) >>> 6);

  /** Graphemes where `Intl.Segmenter` is missing (UAX #29 in short): CR LF;
   * a control or format character alone; else a character and the
   * extending and spacing marks (and ZWJ, emoji modifiers) after it. */
  const GRAPHEME_FALLBACK = new RegExp(
    "\\r\\n|(?![\\u200c\\u200d])[\\p{Cc}\\p{Zl}\\p{Zp}\\p{Cf}]|[^](?:" +
      "[\\p{Grapheme_Extend}\\u200d\\u{1f3fb}-\\u{1f3ff}\\u0e33\\u0eb3]|" +
      // the spacing marks UAX #29 leaves out of SpacingMark
      "(?![\\u102b\\u102c\\u1038\\u1062-\\u1064\\u1067-\\u106d\\u1083\\u1087-\\u108c\\u108f" +
      "\\u109a-\\u109c\\u1a61\\u1a63\\u1a64\\uaa7b\\uaa7d\\u{11720}\\u{11721}])\\p{Mc})*",
    "gu",
  );

  /**
   * The text's extended grapheme clusters.
   * @param {string} text
   * @returns {Iterable<string>}
   */
  function graphemes(text) {
    const Segmenter = globalThis.Intl && /** @type {any} */ (Intl).Segmenter;
    if (typeof Segmenter === "function") {
      if (!graphemes.segmenter) graphemes.segmenter = new Segmenter("und", { granularity: "grapheme" });
      const segments = graphemes.segmenter.segment(text);
      return (function* () {
        for (const s of segments) yield /** @type {string} */ (s.segment);
      })();
    }
    return text.match(GRAPHEME_FALLBACK) || [];
  }
  /** @type {any} */
  graphemes.segmenter = null;

  /**
   * What `tokenizer.json` says, reduced to what encoding needs.
   * @typedef {object} UnigramSpec
   * @property {Map<string, number>} vocab each piece's id (a repeated piece: its last)
   * @property {Float64Array} scores by id
   * @property {number} unkId
   * @property {number} unkScore the lowest score less 10
   * @property {number} maxPieceChars the longest piece, in code points
   * @property {{charsmap: Charsmap | null, replace: [RegExp, string][]}[]} normalizers in order
   * @property {string} replacement Metaspace's "▁"
   * @property {boolean} prepend put one "▁" in front
   * @property {boolean} split split before each "▁"
   * @property {number} bosId
   * @property {number} eosId
   */

  /** @typedef {import("./types").UnigramTokenizer} UnigramApi */

  /**
   * A SentencePiece Unigram tokenizer built from a `tokenizer.json`.
   * @implements {UnigramApi}
   */
  class Unigram {
    /** @param {UnigramSpec} spec */
    constructor(spec) {
      this.spec = spec;
    }

    /**
     * Check a parsed `tokenizer.json` and build the tokenizer from it.
     * @param {any} json
     * @returns {Unigram}
     * @throws {Error} naming the first part this tokenizer cannot reproduce
     */
    static fromJSON(json) {
      /** @param {string} what */
      const unsupported = (what) =>
        new Error(`tokenizer.json: ${what} is not supported in the browser (a SentencePiece Unigram tokenizer is)`);
      if (!json || typeof json !== "object") throw new Error("tokenizer.json: not a JSON object");
      const model = json.model;
      if (!model || model.type !== "Unigram" || !Array.isArray(model.vocab) || !model.vocab.length) {
        throw unsupported(`model ${JSON.stringify(model && model.type)}`);
      }
      if (model.byte_fallback) throw unsupported("byte_fallback");
      const unkId = model.unk_id;
      if (!Number.isInteger(unkId) || unkId < 0 || unkId >= model.vocab.length) {
        throw unsupported(`unk_id ${JSON.stringify(unkId)}`);
      }
      if ((json.added_tokens || []).length) {
        throw unsupported(`added tokens (${json.added_tokens.map((/** @type {any} */ t) => JSON.stringify(t.content)).join(", ")})`);
      }
      /** @type {Map<string, number>} */
      const vocab = new Map();
      const scores = new Float64Array(model.vocab.length);
      let minScore = Infinity;
      let maxPieceChars = 0;
      model.vocab.forEach((/** @type {any} */ entry, /** @type {number} */ id) => {
        const [piece, score] = Array.isArray(entry) ? entry : [];
        if (typeof piece !== "string" || typeof score !== "number") {
          throw new Error(`tokenizer.json: vocabulary entry ${id} is not [piece, score]`);
        }
        vocab.set(piece, id);
        scores[id] = score;
        if (score < minScore) minScore = score;
        let chars = 0;
        for (const _ of piece) chars++;
        if (chars > maxPieceChars) maxPieceChars = chars;
      });
      const pre = json.pre_tokenizer;
      if (!pre || pre.type !== "Metaspace") throw unsupported(`pre_tokenizer ${JSON.stringify(pre && pre.type)}`);
      const prepend = pre.prepend_scheme === undefined ? pre.add_prefix_space !== false : pre.prepend_scheme;
      if (prepend !== "always" && prepend !== true) throw unsupported(`Metaspace prepend_scheme ${JSON.stringify(prepend)}`);
      if (typeof pre.replacement !== "string" || Array.from(pre.replacement).length !== 1) {
        throw unsupported(`Metaspace replacement ${JSON.stringify(pre.replacement)}`);
      }
      const wp = lib.need("wordpiece");
      const { clsId, sepId } = wp.template(json.post_processor, unsupported);
      return new Unigram({
        vocab,
        scores,
        unkId,
        unkScore: minScore - UNK_PENALTY,
        maxPieceChars,
        normalizers: normalizerSteps(json.normalizer, unsupported),
        replacement: pre.replacement,
        prepend: true,
        split: pre.split !== false,
        bosId: clsId,
        eosId: sepId,
      });
    }

    /**
     * The ids the model reads for `text`: `<s> pieces </s>`, at most
     * `maxTokens` in all (the pieces past that are cut).
     * @param {string} text
     * @param {number} maxTokens at least 2
     * @returns {import("./types").TokenEncoding}
     */
    encode(text, maxTokens) {
      const { framed } = lib.need("wordpiece");
      return framed(this.spec.bosId, this.pieceIds(text), this.spec.eosId, maxTokens);
    }

    /**
     * The ids of the text's pieces, without `<s>`/`</s>` or truncation.
     * @param {string} text
     * @returns {number[]}
     */
    pieceIds(text) {
      /** @type {number[]} */
      const ids = [];
      for (const word of this.words(text)) {
        for (const piece of this.wordPieces(word)) ids.push(this.spec.vocab.get(piece) ?? this.spec.unkId);
      }
      return ids;
    }

    /**
     * The normalizers, then `Metaspace`: the words Unigram cuts.
     * @param {string} text
     * @returns {string[]}
     */
    words(text) {
      const { replacement, prepend, split } = this.spec;
      let normal = this.normalize(text).replaceAll(" ", replacement);
      if (prepend && normal && !normal.startsWith(replacement)) normal = replacement + normal;
      if (!split) return normal ? [normal] : [];
      /** @type {string[]} */
      const words = [];
      let start = 0;
      for (let at = normal.indexOf(replacement, 1); at >= 0; at = normal.indexOf(replacement, at + 1)) {
        words.push(normal.slice(start, at));
        start = at;
      }
      if (start < normal.length) words.push(normal.slice(start));
      return words;
    }

    /**
     * The normalizers in `tokenizer.json`'s order.
     * @param {string} text
     * @returns {string}
     */
    normalize(text) {
      let out = text.replace(LONE_SURROGATE, "");
      for (const step of this.spec.normalizers) {
        if (step.charsmap) out = precompiled(step.charsmap, out);
        for (const [pattern, content] of step.replace) out = out.replace(pattern, () => content);
      }
      return out;
    }

    /**
     * One word's best cut into pieces (`Unigram::encode_optimized`), runs
     * of unknown pieces fused into one string.
     * @param {string} word
     * @returns {string[]}
     */
    wordPieces(word) {
      const { vocab, scores, unkId, unkScore, maxPieceChars } = this.spec;
      const chars = Array.from(word);
      const n = chars.length;
      const best = new Float64Array(n + 1);
      const from = new Int32Array(n + 1).fill(-1);
      const idAt = new Int32Array(n + 1);
      for (let start = 0; start < n; start++) {
        const here = best[start];
        let single = false;
        let piece = "";
        // shortest first, as the trie's common-prefix search yields them
        for (let end = start + 1; end <= Math.min(n, start + maxPieceChars); end++) {
          piece += chars[end - 1];
          const id = vocab.get(piece);
          if (id === undefined) continue;
          const score = scores[id] + here;
          if (from[end] < 0 || score > best[end]) {
            best[end] = score;
            from[end] = start;
            idAt[end] = id;
          }
          if (end === start + 1) single = true;
        }
        if (!single) {
          const score = unkScore + here;
          if (from[start + 1] < 0 || score > best[start + 1]) {
            best[start + 1] = score;
            from[start + 1] = start;
            idAt[start + 1] = unkId;
          }
        }
      }
      /** @type {string[]} */
      const pieces = [];
      let unknown = "";
      for (let end = n; end > 0; end = from[end]) {
        const piece = chars.slice(from[end], end).join("");
        if (idAt[end] === unkId) {
          unknown = piece + unknown;
          continue;
        }
        if (unknown) pieces.push(unknown);
        unknown = "";
        pieces.push(piece);
      }
      if (unknown) pieces.push(unknown);
      return pieces.reverse();
    }
  }

  /**
   * `Precompiled::normalize`: a grapheme under 6 bytes whose start the map
   * knows becomes that key's replacement, whole; else each code point is
   * replaced alone, or kept.
   * @param {Charsmap} map
   * @param {string} text
   */
  function precompiled(map, text) {
    let out = "";
    for (const grapheme of graphemes(text)) {
      let bytes = 0;
      for (const ch of grapheme) bytes += utf8Length(/** @type {number} */ (ch.codePointAt(0)));
      if (bytes < WHOLE_GRAPHEME_BYTES) {
        const whole = map.transform(grapheme);
        if (whole !== null) {
          out += whole;
          continue;
        }
      }
      for (const ch of grapheme) {
        const replaced = map.transform(ch);
        out += replaced === null ? ch : replaced;
      }
    }
    return out;
  }

  /**
   * The normalizer as steps: `Precompiled` and `Replace`, alone or in a `Sequence`.
   * @param {any} normalizer
   * @param {(what: string) => Error} unsupported
   * @returns {{charsmap: Charsmap | null, replace: [RegExp, string][]}[]}
   */
  function normalizerSteps(normalizer, unsupported) {
    const list = normalizer && normalizer.type === "Sequence" ? normalizer.normalizers : [normalizer];
    return (list || []).map((/** @type {any} */ step) => {
      if (step && step.type === "Precompiled" && typeof step.precompiled_charsmap === "string") {
        return { charsmap: new Charsmap(base64(step.precompiled_charsmap)), replace: [] };
      }
      if (step && step.type === "Replace" && typeof step.content === "string" && step.pattern) {
        const { String: literal, Regex: regex } = step.pattern;
        if (typeof literal === "string" && literal) {
          return { charsmap: null, replace: [[new RegExp(literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gu"), step.content]] };
        }
        // the one regular expression XLM-R's tokenizer.json has; Oniguruma and JS read it alike
        if (regex === " {2,}") return { charsmap: null, replace: [[/ {2,}/g, step.content]] };
        throw unsupported(`Replace pattern ${JSON.stringify(step.pattern)}`);
      }
      throw unsupported(`normalizer ${JSON.stringify(step && step.type)}`);
    });
  }

  /**
   * @param {string} text standard base64
   * @returns {Uint8Array}
   */
  function base64(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  /**
   * The question tokenizer a `tokenizer.json` describes: WordPiece or
   * Unigram, by its model's type.
   * @param {any} json
   * @returns {import("./types").QuestionTokenizer}
   */
  function questionTokenizer(json) {
    if (json && json.model && json.model.type === "Unigram") return Unigram.fromJSON(json);
    return lib.need("wordpiece").WordPiece.fromJSON(json);
  }

  const api = { Unigram, Charsmap, questionTokenizer, graphemes, GRAPHEME_FALLBACK };
  lib.provide("unigram", api);
  if (typeof module === "object") module.exports = api;
})();
