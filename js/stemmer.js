// @ts-check
/**
 * The Snowball English stemmer, ported by hand from `english.sbl`.
 *
 * It must stem exactly like PyStemmer's `Stemmer.Stemmer("english").stemWord`,
 * which the Python side of sphinx_ragcite uses to build the BM25 index: a
 * query stemmed differently here would miss terms the index holds. The port
 * follows the Snowball 3.x version of the algorithm (the one PyStemmer 3.x and
 * snowballstemmer 3.x ship), which extends the classic Porter2 description:
 * more R1 prefixes (emerg, inter, later, organ, past, univers besides
 * gener, commun, arsen), "-ogist" -> "-og", "past" counting as a short
 * syllable, and the old exception2 list ("inning", "succeed", ...) folded into
 * step 1b.
 *
 * Each routine mirrors the Snowball routine of the same name, with its cursor,
 * limit, bra and ket. The word is held as an array of code points, because
 * libstemmer works on UTF-8 characters: "hop 3" or "next" step over one
 * character, never over half of a surrogate pair.
 *
 * Classic script: provides `stemmer` (see `lib.js`).
 */
(function () {
  "use strict";

  /**
   * An `among` entry: the string to match and the value `among` returns
   * (-1 for entries with no action, as Snowball's generated code has it).
   * @typedef {readonly [string, number]} Among
   */

  const G_AEO = new Set(["a", "e", "o"]);
  const G_V = new Set(["a", "e", "i", "o", "u", "y"]);
  const G_V_WXY = new Set(["a", "e", "i", "o", "u", "y", "w", "x", "Y"]);
  const G_VALID_LI = new Set(["c", "d", "e", "g", "h", "k", "m", "n", "r", "t"]);

  /** Prefixes that end R1 wherever the vowels say otherwise. @type {readonly Among[]} */
  const A_0 = [
    ["arsen", -1],
    ["commun", -1],
    ["emerg", -1],
    ["gener", -1],
    ["inter", -1],
    ["later", -1],
    ["organ", -1],
    ["past", -1],
    ["univers", -1],
  ];

  /** @type {readonly Among[]} */
  const A_1 = [
    ["'", 1],
    ["'s'", 1],
    ["'s", 1],
  ];

  /** @type {readonly Among[]} */
  const A_2 = [
    ["ied", 2],
    ["s", 3],
    ["ies", 2],
    ["sses", 1],
    ["ss", -1],
    ["us", -1],
  ];

  /** @type {readonly Among[]} */
  const A_3 = [
    ["succ", 1],
    ["proc", 1],
    ["exc", 1],
  ];

  /** @type {readonly Among[]} */
  const A_4 = [
    ["even", 2],
    ["cann", 2],
    ["inn", 2],
    ["earr", 2],
    ["herr", 2],
    ["out", 2],
    ["y", 1],
  ];

  /** @type {readonly Among[]} */
  const A_5 = [
    ["", -1],
    ["ed", 2],
    ["eed", 1],
    ["ing", 3],
    ["edly", 2],
    ["eedly", 1],
    ["ingly", 2],
  ];

  /** @type {readonly Among[]} */
  const A_6 = [
    ["", 3],
    ["bb", 2],
    ["dd", 2],
    ["ff", 2],
    ["gg", 2],
    ["bl", 1],
    ["mm", 2],
    ["nn", 2],
    ["pp", 2],
    ["rr", 2],
    ["at", 1],
    ["tt", 2],
    ["iz", 1],
  ];

  /** @type {readonly Among[]} */
  const A_7 = [
    ["anci", 3],
    ["enci", 2],
    ["ogi", 14],
    ["li", 16],
    ["bli", 12],
    ["abli", 4],
    ["alli", 8],
    ["fulli", 9],
    ["lessli", 15],
    ["ousli", 10],
    ["entli", 5],
    ["aliti", 8],
    ["biliti", 12],
    ["iviti", 11],
    ["tional", 1],
    ["ational", 7],
    ["alism", 8],
    ["ation", 7],
    ["ization", 6],
    ["izer", 6],
    ["ator", 7],
    ["iveness", 11],
    ["fulness", 9],
    ["ousness", 10],
    ["ogist", 13],
  ];

  /** @type {readonly Among[]} */
  const A_8 = [
    ["icate", 4],
    ["ative", 6],
    ["alize", 3],
    ["iciti", 4],
    ["ical", 4],
    ["tional", 1],
    ["ational", 2],
    ["ful", 5],
    ["ness", 5],
  ];

  /** @type {readonly Among[]} */
  const A_9 = [
    ["ic", 1],
    ["ance", 1],
    ["ence", 1],
    ["able", 1],
    ["ible", 1],
    ["ate", 1],
    ["ive", 1],
    ["ize", 1],
    ["iti", 1],
    ["al", 1],
    ["ism", 1],
    ["ion", 2],
    ["er", 1],
    ["ous", 1],
    ["ant", 1],
    ["ent", 1],
    ["ment", 1],
    ["ement", 1],
  ];

  /** @type {readonly Among[]} */
  const A_10 = [
    ["e", 1],
    ["l", 2],
  ];

  /** Whole words with a fixed stem (-1: the word is its own stem). @type {readonly Among[]} */
  const A_11 = [
    ["andes", -1],
    ["atlas", -1],
    ["bias", -1],
    ["cosmos", -1],
    ["early", 6],
    ["gently", 4],
    ["howe", -1],
    ["idly", 3],
    ["news", -1],
    ["only", 7],
    ["singly", 8],
    ["skies", 2],
    ["skis", 1],
    ["sky", -1],
    ["ugly", 5],
  ];
  const AS_11 = ["ski", "sky", "idl", "gentl", "ugli", "earli", "onli", "singl"];

  /**
   * The state of one stemming run: Snowball's current string, cursor,
   * limits and slice.
   */
  class EnglishStemmer {
    /** @param {string} word */
    constructor(word) {
      /** @type {string[]} one code point per element */
      this.current = Array.from(word);
      this.cursor = 0;
      this.limit = this.current.length;
      this.limit_backward = 0;
      this.bra = 0;
      this.ket = this.limit;
      this.Y_found = false;
      this.p1 = 0;
      this.p2 = 0;
    }

    // --- Snowball's primitives -------------------------------------------

    /** @param {Set<string>} s */
    in_grouping(s) {
      if (this.cursor >= this.limit || !s.has(this.current[this.cursor])) return false;
      this.cursor += 1;
      return true;
    }

    /** Moves past characters in `s`; true when one outside `s` follows. @param {Set<string>} s */
    go_in_grouping(s) {
      while (this.cursor < this.limit) {
        if (!s.has(this.current[this.cursor])) return true;
        this.cursor += 1;
      }
      return false;
    }

    /** Moves past characters outside `s`; true when one in `s` follows. @param {Set<string>} s */
    go_out_grouping(s) {
      while (this.cursor < this.limit) {
        if (s.has(this.current[this.cursor])) return true;
        this.cursor += 1;
      }
      return false;
    }

    /** @param {Set<string>} s */
    in_grouping_b(s) {
      if (this.cursor <= this.limit_backward) return false;
      if (!s.has(this.current[this.cursor - 1])) return false;
      this.cursor -= 1;
      return true;
    }

    /** @param {Set<string>} s */
    out_grouping_b(s) {
      if (this.cursor <= this.limit_backward) return false;
      if (s.has(this.current[this.cursor - 1])) return false;
      this.cursor -= 1;
      return true;
    }

    /** @param {Set<string>} s */
    go_out_grouping_b(s) {
      while (this.cursor > this.limit_backward) {
        if (s.has(this.current[this.cursor - 1])) return true;
        this.cursor -= 1;
      }
      return false;
    }

    /** The character before the cursor is `ch` (then step over it). @param {string} ch */
    eq_c_b(ch) {
      if (this.cursor <= this.limit_backward || this.current[this.cursor - 1] !== ch) return false;
      this.cursor -= 1;
      return true;
    }

    /** The character at the cursor is `ch` (then step over it). @param {string} ch */
    eq_c(ch) {
      if (this.cursor >= this.limit || this.current[this.cursor] !== ch) return false;
      this.cursor += 1;
      return true;
    }

    /** @param {string} s */
    eq_s_b(s) {
      const chars = Array.from(s);
      const start = this.cursor - chars.length;
      if (start < this.limit_backward) return false;
      for (let i = 0; i < chars.length; i++) {
        if (this.current[start + i] !== chars[i]) return false;
      }
      this.cursor = start;
      return true;
    }

    /**
     * `among` read forwards: the longest entry that starts at the cursor.
     * Snowball's binary search finds the same entry (none of ours has a
     * condition routine). Returns its value, or 0 when nothing matches.
     * @param {readonly Among[]} v
     */
    find_among(v) {
      let best = -1;
      let bestLen = -1;
      for (let k = 0; k < v.length; k++) {
        const s = v[k][0];
        if (s.length <= bestLen || this.cursor + s.length > this.limit) continue;
        let ok = true;
        for (let i = 0; i < s.length; i++) {
          if (this.current[this.cursor + i] !== s[i]) {
            ok = false;
            break;
          }
        }
        if (ok) {
          best = k;
          bestLen = s.length;
        }
      }
      if (best < 0) return 0;
      this.cursor += bestLen;
      return v[best][1];
    }

    /**
     * `among` read backwards: the longest entry that ends at the cursor.
     * @param {readonly Among[]} v
     */
    find_among_b(v) {
      let best = -1;
      let bestLen = -1;
      for (let k = 0; k < v.length; k++) {
        const s = v[k][0];
        if (s.length <= bestLen || this.cursor - s.length < this.limit_backward) continue;
        const start = this.cursor - s.length;
        let ok = true;
        for (let i = 0; i < s.length; i++) {
          if (this.current[start + i] !== s[i]) {
            ok = false;
            break;
          }
        }
        if (ok) {
          best = k;
          bestLen = s.length;
        }
      }
      if (best < 0) return 0;
      this.cursor -= bestLen;
      return v[best][1];
    }

    /**
     * @param {number} c_bra
     * @param {number} c_ket
     * @param {string} s
     */
    replace_s(c_bra, c_ket, s) {
      const chars = Array.from(s);
      const adjustment = chars.length - (c_ket - c_bra);
      this.current.splice(c_bra, c_ket - c_bra, ...chars);
      this.limit += adjustment;
      if (this.cursor >= c_ket) this.cursor += adjustment;
      else if (this.cursor > c_bra) this.cursor = c_bra;
      return adjustment;
    }

    /** Replaces the slice [bra, ket) by `s`. @param {string} s */
    slice_from(s) {
      if (!(0 <= this.bra && this.bra <= this.ket && this.ket <= this.limit)) {
        throw new Error("stemmer: slice out of range");
      }
      this.replace_s(this.bra, this.ket, s);
      this.ket = this.bra + Array.from(s).length;
    }

    slice_del() {
      this.slice_from("");
    }

    // --- english.sbl --------------------------------------------------------

    r_prelude() {
      this.Y_found = false;
      const v_1 = this.cursor;
      this.bra = this.cursor;
      if (this.eq_c("'")) {
        this.ket = this.cursor;
        this.slice_del();
      }
      this.cursor = v_1;
      const v_2 = this.cursor;
      this.bra = this.cursor;
      if (this.eq_c("y")) {
        this.ket = this.cursor;
        this.slice_from("Y");
        this.Y_found = true;
      }
      this.cursor = v_2;
      const v_3 = this.cursor;
      // repeat ( goto ( v ['y'] ) <- 'Y' )
      for (;;) {
        const v_4 = this.cursor;
        let found = false;
        for (;;) {
          const v_5 = this.cursor;
          if (this.in_grouping(G_V)) {
            this.bra = this.cursor;
            if (this.eq_c("y")) {
              this.ket = this.cursor;
              this.cursor = v_5;
              found = true;
              break;
            }
          }
          this.cursor = v_5;
          if (this.cursor >= this.limit) break;
          this.cursor += 1;
        }
        if (!found) {
          this.cursor = v_4;
          break;
        }
        this.slice_from("Y");
        this.Y_found = true;
      }
      this.cursor = v_3;
    }

    r_mark_regions() {
      this.p1 = this.limit;
      this.p2 = this.limit;
      const v_1 = this.cursor;
      regions: {
        const v_2 = this.cursor;
        if (this.find_among(A_0) === 0) {
          this.cursor = v_2;
          // gopast v  gopast non-v
          if (!this.go_out_grouping(G_V)) break regions;
          this.cursor += 1;
          if (!this.go_in_grouping(G_V)) break regions;
          this.cursor += 1;
        }
        this.p1 = this.cursor;
        if (!this.go_out_grouping(G_V)) break regions;
        this.cursor += 1;
        if (!this.go_in_grouping(G_V)) break regions;
        this.cursor += 1;
        this.p2 = this.cursor;
      }
      this.cursor = v_1;
    }

    /** A short syllable ends at the cursor. */
    r_shortv() {
      const v_1 = this.limit - this.cursor;
      if (this.out_grouping_b(G_V_WXY) && this.in_grouping_b(G_V) && this.out_grouping_b(G_V)) {
        return true;
      }
      this.cursor = this.limit - v_1;
      if (
        this.out_grouping_b(G_V) &&
        this.in_grouping_b(G_V) &&
        this.cursor <= this.limit_backward
      ) {
        return true;
      }
      this.cursor = this.limit - v_1;
      return this.eq_s_b("past");
    }

    r_R1() {
      return this.p1 <= this.cursor;
    }

    r_R2() {
      return this.p2 <= this.cursor;
    }

    r_Step_1a() {
      const v_1 = this.limit - this.cursor;
      this.ket = this.cursor;
      if (this.find_among_b(A_1) === 0) {
        this.cursor = this.limit - v_1;
      } else {
        this.bra = this.cursor;
        this.slice_del();
      }
      this.ket = this.cursor;
      const among_var = this.find_among_b(A_2);
      if (among_var === 0) return false;
      this.bra = this.cursor;
      if (among_var === 1) {
        this.slice_from("ss");
      } else if (among_var === 2) {
        // (hop 2 <- 'i') or <- 'ie'
        const v_2 = this.limit - this.cursor;
        if (this.cursor - 2 >= this.limit_backward) {
          this.cursor -= 2;
          this.slice_from("i");
        } else {
          this.cursor = this.limit - v_2;
          this.slice_from("ie");
        }
      } else if (among_var === 3) {
        // next gopast v delete
        if (this.cursor <= this.limit_backward) return false;
        this.cursor -= 1;
        if (!this.go_out_grouping_b(G_V)) return false;
        this.cursor -= 1;
        this.slice_del();
      }
      return true;
    }

    r_Step_1b() {
      this.ket = this.cursor;
      let among_var = this.find_among_b(A_5);
      this.bra = this.cursor;
      const v_1 = this.limit - this.cursor;
      // Each case either finishes the step (return) or falls through to the
      // generic removal of "ed"/"ing" below.
      generic: {
        if (among_var === 1) {
          // 'eed' 'eedly': R1 (succ/proc/exc at the start: keep) or <- 'ee'
          const v_2 = this.limit - this.cursor;
          if (this.r_R1()) {
            const v_3 = this.limit - this.cursor;
            const keep =
              this.find_among_b(A_3) !== 0 && this.cursor <= this.limit_backward;
            if (!keep) {
              this.cursor = this.limit - v_3;
              this.slice_from("ee");
            }
          }
          this.cursor = this.limit - v_2;
          return true;
        } else if (among_var === 2) {
          break generic;
        } else if (among_var === 3) {
          among_var = this.find_among_b(A_4);
          if (among_var === 0) break generic;
          if (among_var === 1) {
            // 'dying' -> 'die': a lone non-vowel before "ying"
            const v_4 = this.limit - this.cursor;
            if (!this.out_grouping_b(G_V)) break generic;
            if (this.cursor > this.limit_backward) break generic;
            this.cursor = this.limit - v_4;
            this.bra = this.cursor;
            this.slice_from("ie");
          } else if (this.cursor > this.limit_backward) {
            // "inning", "outing", ... only as whole words
            break generic;
          }
          return true;
        }
        return true;
      }
      this.cursor = this.limit - v_1;
      // test gopast v  delete
      const v_5 = this.limit - this.cursor;
      if (!this.go_out_grouping_b(G_V)) return false;
      this.cursor -= 1;
      this.cursor = this.limit - v_5;
      this.slice_del();
      this.ket = this.cursor;
      this.bra = this.cursor;
      const v_6 = this.limit - this.cursor;
      among_var = this.find_among_b(A_6);
      if (among_var === 1) {
        this.slice_from("e");
        return false;
      } else if (among_var === 2) {
        const v_7 = this.limit - this.cursor;
        if (this.in_grouping_b(G_AEO) && this.cursor <= this.limit_backward) return false;
        this.cursor = this.limit - v_7;
      } else {
        if (this.cursor !== this.p1) return false;
        const v_8 = this.limit - this.cursor;
        if (!this.r_shortv()) return false;
        this.cursor = this.limit - v_8;
        this.slice_from("e");
        return false;
      }
      // Undouble: delete the last letter.
      this.cursor = this.limit - v_6;
      this.ket = this.cursor;
      if (this.cursor <= this.limit_backward) return false;
      this.cursor -= 1;
      this.bra = this.cursor;
      this.slice_del();
      return true;
    }

    r_Step_1c() {
      this.ket = this.cursor;
      if (!this.eq_c_b("y") && !this.eq_c_b("Y")) return false;
      this.bra = this.cursor;
      if (!this.out_grouping_b(G_V)) return false;
      if (this.cursor <= this.limit_backward) return false;
      this.slice_from("i");
      return true;
    }

    r_Step_2() {
      this.ket = this.cursor;
      const among_var = this.find_among_b(A_7);
      if (among_var === 0) return false;
      this.bra = this.cursor;
      if (!this.r_R1()) return false;
      switch (among_var) {
        case 1:
          this.slice_from("tion");
          break;
        case 2:
          this.slice_from("ence");
          break;
        case 3:
          this.slice_from("ance");
          break;
        case 4:
          this.slice_from("able");
          break;
        case 5:
          this.slice_from("ent");
          break;
        case 6:
          this.slice_from("ize");
          break;
        case 7:
          this.slice_from("ate");
          break;
        case 8:
          this.slice_from("al");
          break;
        case 9:
          this.slice_from("ful");
          break;
        case 10:
          this.slice_from("ous");
          break;
        case 11:
          this.slice_from("ive");
          break;
        case 12:
          this.slice_from("ble");
          break;
        case 13:
          this.slice_from("og");
          break;
        case 14:
          if (!this.eq_c_b("l")) return false;
          this.slice_from("og");
          break;
        case 15:
          this.slice_from("less");
          break;
        default:
          if (!this.in_grouping_b(G_VALID_LI)) return false;
          this.slice_del();
      }
      return true;
    }

    r_Step_3() {
      this.ket = this.cursor;
      const among_var = this.find_among_b(A_8);
      if (among_var === 0) return false;
      this.bra = this.cursor;
      if (!this.r_R1()) return false;
      switch (among_var) {
        case 1:
          this.slice_from("tion");
          break;
        case 2:
          this.slice_from("ate");
          break;
        case 3:
          this.slice_from("al");
          break;
        case 4:
          this.slice_from("ic");
          break;
        case 5:
          this.slice_del();
          break;
        default:
          if (!this.r_R2()) return false;
          this.slice_del();
      }
      return true;
    }

    r_Step_4() {
      this.ket = this.cursor;
      const among_var = this.find_among_b(A_9);
      if (among_var === 0) return false;
      this.bra = this.cursor;
      if (!this.r_R2()) return false;
      if (among_var === 1) {
        this.slice_del();
      } else {
        // 'ion' after 's' or 't'
        if (!this.eq_c_b("s") && !this.eq_c_b("t")) return false;
        this.slice_del();
      }
      return true;
    }

    r_Step_5() {
      this.ket = this.cursor;
      const among_var = this.find_among_b(A_10);
      if (among_var === 0) return false;
      this.bra = this.cursor;
      if (among_var === 1) {
        // 'e': R2 or (R1 not shortv)
        if (!this.r_R2()) {
          if (!this.r_R1()) return false;
          const v_1 = this.limit - this.cursor;
          if (this.r_shortv()) return false;
          this.cursor = this.limit - v_1;
        }
        this.slice_del();
      } else {
        // 'l': R2 'l'
        if (!this.r_R2()) return false;
        if (!this.eq_c_b("l")) return false;
        this.slice_del();
      }
      return true;
    }

    r_exception1() {
      this.bra = this.cursor;
      const among_var = this.find_among(A_11);
      if (among_var === 0) return false;
      this.ket = this.cursor;
      if (this.cursor < this.limit) return false;
      if (among_var > 0) this.slice_from(AS_11[among_var - 1]);
      return true;
    }

    r_postlude() {
      if (!this.Y_found) return false;
      // repeat ( goto ( ['Y'] ) <- 'y' )
      for (;;) {
        const v_1 = this.cursor;
        let found = false;
        for (;;) {
          const v_2 = this.cursor;
          this.bra = this.cursor;
          if (this.eq_c("Y")) {
            this.ket = this.cursor;
            this.cursor = v_2;
            found = true;
            break;
          }
          this.cursor = v_2;
          if (this.cursor >= this.limit) break;
          this.cursor += 1;
        }
        if (!found) {
          this.cursor = v_1;
          break;
        }
        this.slice_from("y");
      }
      return true;
    }

    /** @returns {string} */
    stem() {
      const v_1 = this.cursor;
      if (this.r_exception1()) return this.result();
      this.cursor = v_1;
      // not hop 3: words of fewer than three characters are left alone.
      if (this.cursor + 3 > this.limit) return this.result();
      this.r_prelude();
      this.r_mark_regions();
      this.limit_backward = this.cursor;
      this.cursor = this.limit;
      /** @type {Array<() => unknown>} */
      const steps = [
        () => this.r_Step_1a(),
        () => this.r_Step_1b(),
        () => this.r_Step_1c(),
        () => this.r_Step_2(),
        () => this.r_Step_3(),
        () => this.r_Step_4(),
        () => this.r_Step_5(),
      ];
      for (const step of steps) {
        const v = this.limit - this.cursor;
        step();
        this.cursor = this.limit - v;
      }
      this.cursor = this.limit_backward;
      const v_9 = this.cursor;
      this.r_postlude();
      this.cursor = v_9;
      return this.result();
    }

    result() {
      return this.current.slice(0, this.limit).join("");
    }
  }

  /**
   * Stem one lower-cased word, exactly like PyStemmer's English stemmer.
   * @param {string} word
   * @returns {string}
   */
  function stem(word) {
    if (typeof word !== "string") throw new TypeError("stem: word must be a string");
    return new EnglishStemmer(word).stem();
  }

  const api = { stem };
  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  lib.provide("stemmer", api);
  if (typeof module === "object") module.exports = api;
})();
