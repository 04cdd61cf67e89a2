// @ts-check
/**
 * Selection mode in the browser: the passages a reader's selection lies in,
 * the selection as evidence, and the sentences to quote. The JS twin of
 * `sphinx_ragcite/answer/selection.py` and of the selection's part of
 * `evidence.build_evidence`; the path `POST /api/ask` takes with
 * `mode: "selection"` and the extractive generator.
 *
 * The answer ranker is not asked (a question about a selection says little
 * of its own): sentences are ranked against question and selection together
 * and the best one or two quoted; selection mode never abstains while a
 * sentence is worth quoting. Unlike book mode it embeds more than the
 * question: the selection's sentences, the selection, the question with it,
 * and the sentences quoted, through the caller's `embed`.
 *
 * Classic script: provides `selection_answer` (see `lib.js`).
 */

/** @typedef {import("./types").EngineEvidence} Evidence */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const U = lib.need("units");
  const E = lib.need("evidence");
  const A = lib.need("answer");

  // selection mode's numbers (`answer/spec.py` says where each comes from)
  const spec = lib.need("spec");
  const { SELECTION_CONTEXT, HOLDING_SEARCH, HOLDING_WORDS, PASSAGE_WEIGHT, RANK_BONUS } = spec;
  const { SECOND_FLOOR, SECOND_SHARE, OTHER_PASSAGE_SHARE, REDUNDANT, USER_SELECTION } = spec;
  const { SELECTION_MIN_WORDS, SELECTION_MAX_SENTENCES, SELECTION_MAX_WORDS } = spec;

  /**
   * @typedef {object} RankedSentence
   * @property {number} score fit plus the passage's relevance: the order
   * @property {number} standing fit plus a bonus for the passage's rank
   * @property {number} evidence
   * @property {number} sentence
   * @property {string} text
   */

  /**
   * The first `n` code points of `text` (Python's `text[:n]`).
   * @param {string} text
   * @param {number} n
   */
  function head(text, n) {
    return S.codePoints(text) <= n ? text : Array.from(text).slice(0, n).join("");
  }

  /**
   * `selection.passages_holding`: of the passages BM25 finds for the
   * selection, those holding a run of five of its words.
   * @param {string} selection
   * @param {(query: string, k: number) => Promise<number[]>} bm25 the rows BM25 ranks first
   * @param {(rows: number[]) => Promise<Array<{row: number, record: any}>>} passages their records
   * @returns {Promise<number[]>}
   */
  async function passagesHolding(selection, bm25, passages) {
    const words = S.pySplit(selection.toLowerCase());
    const n = HOLDING_WORDS;
    const grams = new Set();
    for (let i = 0; i < Math.max(1, words.length - n + 1); i++) grams.add(words.slice(i, i + n).join(" "));
    const rows = await bm25(selection, HOLDING_SEARCH);
    const found = await passages(rows);
    return found
      .filter((p) => {
        const text = S.pySplit(String(p.record.text).toLowerCase()).join(" ");
        for (const gram of grams) if (text.includes(gram)) return true;
        return false;
      })
      .map((p) => p.row);
  }

  /**
   * The selection as evidence (`evidence.build_evidence`'s first item).
   * @param {string} selection
   * @param {Float32Array | null} qvec
   * @param {number} dim
   * @param {(texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]>} embed
   * @returns {Promise<Evidence>}
   */
  async function selectionEvidence(selection, qvec, dim, embed) {
    const sentences = S.splitSentences(selection);
    const embedded = sentences.length ? await embed(sentences.map((s) => s.text)) : [];
    const vectors = new Float32Array(sentences.length * dim);
    embedded.forEach((v, i) => vectors.set(v, i * dim));
    const [whole] = await embed([selection]);
    return {
      key: USER_SELECTION,
      record: null,
      text: selection,
      sentences,
      vectors,
      dim,
      words: S.contentWords(selection),
      numbers: S.numbers(selection),
      relevance: qvec ? E.dot(whole, 0, qvec) : 0.0,
      rank: 0,
      problem: null,
    };
  }

  /**
   * `selection.rank_sentences`: every sentence of the evidence worth
   * quoting, best first.
   * @param {string} question
   * @param {string} selection
   * @param {Evidence[]} evidence
   * @param {(texts: string[], kind?: "query" | "passage") => Promise<Float32Array[]>} embed
   * @returns {Promise<RankedSentence[]>}
   */
  async function rankSentences(question, selection, evidence, embed) {
    const about = `${question}\n${head(selection, SELECTION_CONTEXT)}`;
    const [vector] = await embed([about], "query"); // Python: kind="query"
    const asked = S.contentWords(about);
    /** @type {RankedSentence[]} */
    const out = [];
    evidence.forEach((item, e) => {
      if (!item.sentences.length) return;
      const sims = E.sentenceSims(item, vector);
      const prior = PASSAGE_WEIGHT * item.relevance;
      item.sentences.forEach((sentence, s) => {
        if (S.wordCount(sentence.text) < SELECTION_MIN_WORDS || U.looksLikeCode(sentence.text)) return;
        const value = A.answerFit(asked, sims[s], sentence.text);
        const bonus = RANK_BONUS / Math.max(item.rank, 1);
        out.push({ score: value + prior, standing: value + bonus, evidence: e, sentence: s, text: sentence.text });
      });
    });
    out.sort((a, b) => b.score - a.score || a.evidence - b.evidence || a.sentence - b.sentence);
    return out;
  }

  /**
   * `selection.compose`: the best sentences, each followed by the marker
   * of its evidence.
   * @param {RankedSentence[]} ranked
   * @param {Evidence[]} evidence
   */
  function compose(ranked, evidence) {
    /** @type {RankedSentence[]} */
    const chosen = [];
    let words = 0;
    /** @param {RankedSentence} c */
    const vectorOf = (c) => {
      const item = evidence[c.evidence];
      return item.vectors ? item.vectors.subarray(c.sentence * item.dim, (c.sentence + 1) * item.dim) : null;
    };
    for (const candidate of ranked) {
      if (chosen.length === SELECTION_MAX_SENTENCES) break;
      if (chosen.length && (candidate.score < SECOND_SHARE * chosen[0].score || candidate.standing < SECOND_FLOOR)) break;
      if (chosen.length && candidate.evidence !== chosen[0].evidence && candidate.score < OTHER_PASSAGE_SHARE * chosen[0].score) {
        continue; // another passage must be nearly as good to be cited too
      }
      const size = S.wordCount(candidate.text);
      if (chosen.length && words + size > SELECTION_MAX_WORDS) continue;
      const vector = vectorOf(candidate);
      const redundant = chosen.some((c) => {
        const other = vectorOf(c);
        return vector !== null && other !== null && E.dot(other, 0, vector) > REDUNDANT;
      });
      if (redundant) continue;
      chosen.push(candidate);
      words += size;
    }
    return chosen.map((c) => `${c.text} [${c.evidence + 1}]`).join(" ");
  }

  const api = {
    passagesHolding,
    selectionEvidence,
    rankSentences,
    compose,
  };
  lib.provide("selection_answer", api);
  if (typeof module === "object") module.exports = api;
})();
