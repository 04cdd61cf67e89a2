// @ts-check
/**
 * The question's word pieces, cut exactly as the build's `tokenizers` cuts
 * them, so that the browser's question vector is the server's.
 *
 * It reads the very `tokenizer.json` the build embeds passages with (a BERT
 * WordPiece tokenizer: all-MiniLM-L6-v2's by default) and runs its four
 * stages as `tokenizers` does:
 *
 * 1. added tokens: `[CLS]`, `[SEP]`, `[UNK]`... typed in the text are found
 *    in the raw text first and kept whole;
 * 2. `BertNormalizer`: drop control and format characters, map whitespace to
 *    a space, put spaces around CJK ideographs, strip accents (NFD, then drop
 *    non-spacing marks), lower-case one code point at a time;
 * 3. `BertPreTokenizer`: split on whitespace, and isolate each punctuation mark;
 * 4. `WordPiece`: greedy longest match from the vocabulary, later pieces
 *    prefixed `##`; a word longer than `max_input_chars_per_word` code points,
 *    or one with no full cut, is one `[UNK]`;
 * then the template `[CLS] ... [SEP]`, truncated to `maxTokens` in all.
 *
 * The character classes are `tokenizers`' own (the Rust crate
 * `unicode_categories`, Unicode 8.0), written out below as code point ranges,
 * not the JS engine's `\p{...}`: those follow each browser's newer Unicode
 * and would cut ~650 rare characters differently; likewise the 21 characters
 * its NFD (Unicode 12.1) leaves whole. `tests/test_browser_encoder.py`
 * checks every code point against `tokenizers`, and `js/test/wordpiece.test.js`
 * the ids of `tests/golden/wordpiece_cases.json`
 * (written by `tools/write_wordpiece_cases.py`).
 *
 * Classic script: provides `wordpiece` (see `lib.js`).
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  // Code point ranges (hex, "a-b" or "a"), as `tokenizers` classifies them;
  // `tools/write_wordpiece_cases.py --tables` prints them from `tokenizers`.
  /** Removed by `clean_text`: Cc, Cf, Co (Unicode 8.0), NUL, U+FFFD; and
   * lone surrogates, which a Rust string cannot hold. */
  const REMOVED =
    "0-8,b-c,e-1f,7f-9f,ad,600-605,61c,6dd,70f,180e,200b-200f,202a-202e," +
    "2060-2064,2066-206f,d800-dfff,e000-f8ff,feff,fff9-fffb,fffd,110bd,1bca0-1bca3," +
    "1d173-1d17a,e0001,e0020-e007f,f0000-ffffd,100000-10fffd";
  /** Rust's `char::is_whitespace`: Unicode's White_Space. */
  const WHITESPACE = "9-d,20,85,a0,1680,2000-200a,2028-2029,202f,205f,3000";
  /** Spaced apart by `handle_chinese_chars`: CJK ideographs, as BERT has them. */
  const CJK = "3400-4dbf,4e00-9fff,f900-faff,20000-2a6df,2a700-2b81f,2b920-2ceaf,2f800-2fa1f";
  /** Isolated by `BertPreTokenizer`: ASCII punctuation, and P* (Unicode 8.0). */
  const PUNCTUATION =
    "21-2f,3a-40,5b-60,7b-7e,a1,a7,ab,b6-b7,bb,bf,37e,387,55a-55f,589-58a,5be,5c0," +
    "5c3,5c6,5f3-5f4,609-60a,60c-60d,61b,61e-61f,66a-66d,6d4,700-70d,7f7-7f9," +
    "830-83e,85e,964-965,970,af0,df4,e4f,e5a-e5b,f04-f12,f14,f3a-f3d,f85,fd0-fd4," +
    "fd9-fda,104a-104f,10fb,1360-1368,1400,166d-166e,169b-169c,16eb-16ed," +
    "1735-1736,17d4-17d6,17d8-17da,1800-180a,1944-1945,1a1e-1a1f,1aa0-1aa6," +
    "1aa8-1aad,1b5a-1b60,1bfc-1bff,1c3b-1c3f,1c7e-1c7f,1cc0-1cc7,1cd3,2010-2027," +
    "2030-2043,2045-2051,2053-205e,207d-207e,208d-208e,2308-230b,2329-232a," +
    "2768-2775,27c5-27c6,27e6-27ef,2983-2998,29d8-29db,29fc-29fd,2cf9-2cfc," +
    "2cfe-2cff,2d70,2e00-2e2e,2e30-2e42,3001-3003,3008-3011,3014-301f,3030,303d," +
    "30a0,30fb,a4fe-a4ff,a60d-a60f,a673,a67e,a6f2-a6f7,a874-a877,a8ce-a8cf," +
    "a8f8-a8fa,a8fc,a92e-a92f,a95f,a9c1-a9cd,a9de-a9df,aa5c-aa5f,aade-aadf," +
    "aaf0-aaf1,abeb,fd3e-fd3f,fe10-fe19,fe30-fe52,fe54-fe61,fe63,fe68,fe6a-fe6b," +
    "ff01-ff03,ff05-ff0a,ff0c-ff0f,ff1a-ff1b,ff1f-ff20,ff3b-ff3d,ff3f,ff5b,ff5d," +
    "ff5f-ff65,10100-10102,1039f,103d0,1056f,10857,1091f,1093f,10a50-10a58,10a7f," +
    "10af0-10af6,10b39-10b3f,10b99-10b9c,11047-1104d,110bb-110bc,110be-110c1," +
    "11140-11143,11174-11175,111c5-111c9,111cd,111db,111dd-111df,11238-1123d," +
    "112a9,114c6,115c1-115d7,11641-11643,1173c-1173e,12470-12474,16a6e-16a6f," +
    "16af5,16b37-16b3b,16b44,1bc9f,1da87-1da8b";
  /** Dropped after NFD by `strip_accents`: Mn, non-spacing marks (Unicode 8.0). */
  const NONSPACING =
    "300-36f,483-487,591-5bd,5bf,5c1-5c2,5c4-5c5,5c7,610-61a,64b-65f,670,6d6-6dc," +
    "6df-6e4,6e7-6e8,6ea-6ed,711,730-74a,7a6-7b0,7eb-7f3,816-819,81b-823,825-827," +
    "829-82d,859-85b,8e3-902,93a,93c,941-948,94d,951-957,962-963,981,9bc,9c1-9c4," +
    "9cd,9e2-9e3,a01-a02,a3c,a41-a42,a47-a48,a4b-a4d,a51,a70-a71,a75,a81-a82,abc," +
    "ac1-ac5,ac7-ac8,acd,ae2-ae3,b01,b3c,b3f,b41-b44,b4d,b56,b62-b63,b82,bc0,bcd," +
    "c00,c3e-c40,c46-c48,c4a-c4d,c55-c56,c62-c63,c81,cbc,cbf,cc6,ccc-ccd,ce2-ce3," +
    "d01,d41-d44,d4d,d62-d63,dca,dd2-dd4,dd6,e31,e34-e3a,e47-e4e,eb1,eb4-eb9," +
    "ebb-ebc,ec8-ecd,f18-f19,f35,f37,f39,f71-f7e,f80-f84,f86-f87,f8d-f97,f99-fbc," +
    "fc6,102d-1030,1032-1037,1039-103a,103d-103e,1058-1059,105e-1060,1071-1074," +
    "1082,1085-1086,108d,109d,135d-135f,1712-1714,1732-1734,1752-1753,1772-1773," +
    "17b4-17b5,17b7-17bd,17c6,17c9-17d3,17dd,180b-180d,18a9,1920-1922,1927-1928," +
    "1932,1939-193b,1a17-1a18,1a1b,1a56,1a58-1a5e,1a60,1a62,1a65-1a6c,1a73-1a7c," +
    "1a7f,1ab0-1abd,1b00-1b03,1b34,1b36-1b3a,1b3c,1b42,1b6b-1b73,1b80-1b81," +
    "1ba2-1ba5,1ba8-1ba9,1bab-1bad,1be6,1be8-1be9,1bed,1bef-1bf1,1c2c-1c33," +
    "1c36-1c37,1cd0-1cd2,1cd4-1ce0,1ce2-1ce8,1ced,1cf4,1cf8-1cf9,1dc0-1df5," +
    "1dfc-1dff,20d0-20dc,20e1,20e5-20f0,2cef-2cf1,2d7f,2de0-2dff,302a-302d," +
    "3099-309a,a66f,a674-a67d,a69e-a69f,a6f0-a6f1,a802,a806,a80b,a825-a826,a8c4," +
    "a8e0-a8f1,a926-a92d,a947-a951,a980-a982,a9b3,a9b6-a9b9,a9bc,a9e5,aa29-aa2e," +
    "aa31-aa32,aa35-aa36,aa43,aa4c,aa7c,aab0,aab2-aab4,aab7-aab8,aabe-aabf,aac1," +
    "aaec-aaed,aaf6,abe5,abe8,abed,fb1e,fe00-fe0f,fe20-fe2f,101fd,102e0," +
    "10376-1037a,10a01-10a03,10a05-10a06,10a0c-10a0f,10a38-10a3a,10a3f," +
    "10ae5-10ae6,11001,11038-11046,1107f-11081,110b3-110b6,110b9-110ba," +
    "11100-11102,11127-1112b,1112d-11134,11173,11180-11181,111b6-111be," +
    "111ca-111cc,1122f-11231,11234,11236-11237,112df,112e3-112ea,11300-11301," +
    "1133c,11340,11366-1136c,11370-11374,114b3-114b8,114ba,114bf-114c0," +
    "114c2-114c3,115b2-115b5,115bc-115bd,115bf-115c0,115dc-115dd,11633-1163a," +
    "1163d,1163f-11640,116ab,116ad,116b0-116b5,116b7,1171d-1171f,11722-11725," +
    "11727-1172b,16af0-16af4,16b30-16b36,16f8f-16f92,1bc9d-1bc9e,1d167-1d169," +
    "1d17b-1d182,1d185-1d18b,1d1aa-1d1ad,1d242-1d244,1da00-1da36,1da3b-1da6c," +
    "1da75,1da84,1da9b-1da9f,1daa1-1daaf,1e8d0-1e8d6,e0100-e01ef";

  /** Left whole by `strip_accents`, whose NFD (Rust's `unicode-normalization`
   * of Unicode 12.1) predates their decompositions (Unicode 13 to 17), which a
   * browser's `normalize("NFD")` knows. */
  const NO_DECOMPOSITION =
    "105c9,105e4,11383,11385,1138e,11391,113c5,113c7-113c8,11938,16121-16128,16d68-16d6a";

  /**
   * A set of code points, as sorted inclusive ranges: [lo0, hi0, lo1, hi1...].
   * @param {string} text "a-b,c,..." in hex
   * @returns {Uint32Array}
   */
  function parseRanges(text) {
    const out = [];
    for (const part of text.split(",")) {
      const [lo, hi] = part.split("-");
      out.push(parseInt(lo, 16), parseInt(hi === undefined ? lo : hi, 16));
    }
    return Uint32Array.from(out);
  }

  /**
   * @param {Uint32Array} ranges
   * @param {number} cp
   * @returns {boolean}
   */
  function inRanges(ranges, cp) {
    let lo = 0;
    let hi = ranges.length / 2 - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < ranges[2 * mid]) hi = mid - 1;
      else if (cp > ranges[2 * mid + 1]) lo = mid + 1;
      else return true;
    }
    return false;
  }

  const TABLES = {
    removed: parseRanges(REMOVED),
    whitespace: parseRanges(WHITESPACE),
    cjk: parseRanges(CJK),
    punctuation: parseRanges(PUNCTUATION),
    nonspacing: parseRanges(NONSPACING),
    noDecomposition: parseRanges(NO_DECOMPOSITION),
  };

  /** @param {number} cp */
  const isWhitespace = (cp) => inRanges(TABLES.whitespace, cp);
  /** @param {number} cp */
  const isPunctuation = (cp) => inRanges(TABLES.punctuation, cp);

  /**
   * What `tokenizer.json` says, reduced to what encoding needs.
   * @typedef {object} WordPieceSpec
   * @property {Map<string, number>} vocab
   * @property {number} unkId
   * @property {string} prefix "##": marks a piece that continues a word
   * @property {number} maxWordChars a longer word is one `[UNK]`
   * @property {{clean: boolean, cjk: boolean, strip: boolean, lower: boolean}} normalizer
   * @property {Map<string, number>} added added tokens matched in the raw text
   * @property {number} clsId
   * @property {number} sepId
   */

  /** @typedef {import("./types").WordPiece} WordPieceApi */

  /**
   * A BERT WordPiece tokenizer built from a `tokenizer.json`.
   * @implements {WordPieceApi}
   */
  class WordPiece {
    /** @param {WordPieceSpec} spec */
    constructor(spec) {
      this.spec = spec;
      const added = [...spec.added.keys()].sort((a, b) => b.length - a.length);
      /** Leftmost, then longest, as `tokenizers` matches added tokens. */
      this.addedPattern = added.length
        ? new RegExp(added.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g")
        : null;
    }

    /**
     * Check a parsed `tokenizer.json` and build the tokenizer from it.
     * @param {any} json
     * @returns {WordPiece}
     * @throws {Error} naming the first part this tokenizer cannot reproduce
     */
    static fromJSON(json) {
      /** @param {string} what */
      const unsupported = (what) =>
        new Error(`tokenizer.json: ${what} is not supported in the browser (a BERT WordPiece tokenizer is)`);
      if (!json || typeof json !== "object") throw new Error("tokenizer.json: not a JSON object");
      const model = json.model;
      if (!model || model.type !== "WordPiece" || !model.vocab || typeof model.vocab !== "object") {
        throw unsupported(`model ${JSON.stringify(model && model.type)}`);
      }
      const norm = json.normalizer;
      if (!norm || norm.type !== "BertNormalizer") {
        throw unsupported(`normalizer ${JSON.stringify(norm && norm.type)}`);
      }
      const pre = json.pre_tokenizer;
      if (!pre || pre.type !== "BertPreTokenizer") {
        throw unsupported(`pre_tokenizer ${JSON.stringify(pre && pre.type)}`);
      }
      /** @type {Map<string, number>} */
      const vocab = new Map(Object.entries(model.vocab));
      /** @param {string} token */
      const idOf = (token) => {
        const id = vocab.get(token);
        if (id === undefined) throw new Error(`tokenizer.json: ${token} is not in the vocabulary`);
        return id;
      };
      /** @type {Map<string, number>} */
      const added = new Map();
      for (const token of json.added_tokens || []) {
        if (token.normalized || token.lstrip || token.rstrip || token.single_word) {
          throw unsupported(`added token ${JSON.stringify(token.content)} with normalized/lstrip/rstrip/single_word`);
        }
        added.set(token.content, token.id);
      }
      const { clsId, sepId } = template(json.post_processor, unsupported);
      const lower = norm.lowercase !== false;
      return new WordPiece({
        vocab,
        unkId: idOf(model.unk_token || "[UNK]"),
        prefix: model.continuing_subword_prefix ?? "##",
        maxWordChars: model.max_input_chars_per_word ?? 100,
        normalizer: {
          clean: norm.clean_text !== false,
          cjk: norm.handle_chinese_chars !== false,
          // null follows `lowercase`, as in `tokenizers`
          strip: norm.strip_accents == null ? lower : !!norm.strip_accents,
          lower,
        },
        added,
        clsId,
        sepId,
      });
    }

    /**
     * The ids the model reads for `text`: `[CLS] pieces [SEP]`, at most
     * `maxTokens` in all (the pieces past that are cut).
     * @param {string} text
     * @param {number} maxTokens at least 2
     * @returns {import("./types").WordPieceEncoding}
     */
    encode(text, maxTokens) {
      return framed(this.spec.clsId, this.pieceIds(text), this.spec.sepId, maxTokens);
    }

    /**
     * The ids of the text's pieces, without `[CLS]`/`[SEP]` or truncation.
     * @param {string} text
     * @returns {number[]}
     */
    pieceIds(text) {
      /** @type {number[]} */
      const ids = [];
      for (const part of this.splitAdded(text)) {
        if (typeof part === "number") {
          ids.push(part);
          continue;
        }
        for (const word of this.words(part)) this.wordIds(word, ids);
      }
      return ids;
    }

    /**
     * The text cut around the added tokens it holds: strings between, ids for them.
     * @param {string} text
     * @returns {(string | number)[]}
     */
    splitAdded(text) {
      if (!this.addedPattern) return [text];
      /** @type {(string | number)[]} */
      const parts = [];
      let last = 0;
      for (const match of text.matchAll(this.addedPattern)) {
        const at = /** @type {number} */ (match.index);
        if (at > last) parts.push(text.slice(last, at));
        parts.push(/** @type {number} */ (this.spec.added.get(match[0])));
        last = at + match[0].length;
      }
      if (last < text.length) parts.push(text.slice(last));
      return parts;
    }

    /**
     * `BertNormalizer` then `BertPreTokenizer`: the words WordPiece cuts.
     * @param {string} text
     * @returns {string[]}
     */
    words(text) {
      const normal = this.normalize(text);
      /** @type {string[]} */
      const words = [];
      let word = "";
      for (const ch of normal) {
        const cp = /** @type {number} */ (ch.codePointAt(0));
        if (isWhitespace(cp)) {
          if (word) words.push(word);
          word = "";
        } else if (isPunctuation(cp)) {
          if (word) words.push(word);
          words.push(ch);
          word = "";
        } else {
          word += ch;
        }
      }
      if (word) words.push(word);
      return words;
    }

    /**
     * `BertNormalizer`, its steps in `tokenizers`' order.
     * @param {string} text
     * @returns {string}
     */
    normalize(text) {
      const { clean, cjk, strip, lower } = this.spec.normalizer;
      let out = "";
      for (const ch of text) {
        const cp = /** @type {number} */ (ch.codePointAt(0));
        if (clean && inRanges(TABLES.removed, cp)) continue;
        if (clean && isWhitespace(cp)) out += " ";
        else if (cjk && inRanges(TABLES.cjk, cp)) out += " " + ch + " ";
        else out += ch;
      }
      if (strip) {
        let kept = "";
        for (const ch of nfd(out)) {
          if (!inRanges(TABLES.nonspacing, /** @type {number} */ (ch.codePointAt(0)))) kept += ch;
        }
        out = kept;
      }
      if (lower) {
        // One code point at a time, as Rust's char::to_lowercase: a whole
        // string's toLowerCase would make a word-final sigma "ς".
        let lowered = "";
        for (const ch of out) lowered += ch.toLowerCase();
        out = lowered;
      }
      return out;
    }

    /**
     * One word's pieces appended to `ids`: greedy longest match first.
     * @param {string} word
     * @param {number[]} ids
     */
    wordIds(word, ids) {
      const { vocab, unkId, prefix, maxWordChars } = this.spec;
      const chars = Array.from(word);
      if (chars.length > maxWordChars) {
        ids.push(unkId);
        return;
      }
      /** @type {number[]} */
      const pieces = [];
      let start = 0;
      while (start < chars.length) {
        let end = chars.length;
        let found = -1;
        while (start < end) {
          const piece = (start > 0 ? prefix : "") + chars.slice(start, end).join("");
          const id = vocab.get(piece);
          if (id !== undefined) {
            found = id;
            break;
          }
          end -= 1;
        }
        if (found < 0) {
          ids.push(unkId);
          return;
        }
        pieces.push(found);
        start = end;
      }
      ids.push(...pieces);
    }
  }

  /**
   * Canonical decomposition as `tokenizers` does it: the JS engine's NFD,
   * except for the characters its older Unicode does not decompose.
   * @param {string} text
   * @returns {string}
   */
  function nfd(text) {
    let out = "";
    let run = "";
    for (const ch of text) {
      if (inRanges(TABLES.noDecomposition, /** @type {number} */ (ch.codePointAt(0)))) {
        out += run.normalize("NFD") + ch;
        run = "";
      } else {
        run += ch;
      }
    }
    return out + run.normalize("NFD");
  }

  /**
   * The ids around a single sequence: `[CLS] A [SEP]`, from a
   * `TemplateProcessing` or a `BertProcessing` post-processor.
   * @param {any} post
   * @param {(what: string) => Error} unsupported
   * @returns {{clsId: number, sepId: number}}
   */
  function template(post, unsupported) {
    if (post && post.type === "BertProcessing") {
      return { clsId: post.cls[1], sepId: post.sep[1] };
    }
    const single = post && post.type === "TemplateProcessing" ? post.single : null;
    const shape = (single || []).map((/** @type {any} */ step) =>
      step.SpecialToken ? `S${step.SpecialToken.type_id}` : step.Sequence ? `${step.Sequence.id}${step.Sequence.type_id}` : "?",
    );
    if (shape.join(" ") !== "S0 A0 S0") {
      throw unsupported(`post_processor ${JSON.stringify(post && post.type)} ${shape.join(" ")}`);
    }
    /** @param {string} name */
    const special = (name) => {
      const entry = post.special_tokens && post.special_tokens[name];
      if (!entry || !Array.isArray(entry.ids) || entry.ids.length !== 1) {
        throw unsupported(`special token ${JSON.stringify(name)} of several ids`);
      }
      return entry.ids[0];
    };
    return { clsId: special(single[0].SpecialToken.id), sepId: special(single[2].SpecialToken.id) };
  }

  /**
   * `first pieces last`, the pieces cut so that at most `maxTokens` ids
   * remain, as `tokenizers` truncates a single sequence with its template
   * (shared by WordPiece and `unigram.js`).
   * @param {number} first
   * @param {number[]} pieces
   * @param {number} last
   * @param {number} maxTokens at least 2
   * @returns {import("./types").TokenEncoding}
   */
  function framed(first, pieces, last, maxTokens) {
    if (!Number.isInteger(maxTokens) || maxTokens < 2) {
      throw new RangeError(`maxTokens must be an integer >= 2, not ${maxTokens}`);
    }
    const ids = [first, ...pieces.slice(0, maxTokens - 2), last];
    return { ids, attentionMask: ids.map(() => 1), typeIds: ids.map(() => 0) };
  }

  const api = { WordPiece, TABLES, inRanges, template, framed };
  lib.provide("wordpiece", api);
  if (typeof module === "object") module.exports = api;
})();
