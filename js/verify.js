// @ts-check
/**
 * The chosen units -> verified claims: the JS twin of the extractive path of
 * `sphinx_ragcite/answer/grounding.py` and `engine.quote_units`.
 *
 * An extractive answer quotes the units the ranker chose, so each claim is
 * supported by construction and cites the passage it is quoted from; its
 * support by every passage is still computed, as for any claim, so that the
 * citation's confidence means what it means on the server.
 *
 * Classic script: provides `verify` (see `lib.js`).
 */

/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").EngineCandidate} Candidate */
/** @typedef {import("./types").EngineSupport} Support */
/** @typedef {import("./types").EngineClaim} Claim */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const E = lib.need("evidence");
  const R = lib.need("ranker");
  const spec = lib.need("spec");
  const { SUPPORT_SIMILARITY, SUPPORT_OVERLAP, SUPPORT_THRESHOLD, TWIN_MARGIN, USER_SELECTION } = spec;

  /**
   * `grounding.support`: how well one evidence item supports a claim.
   * @param {string} claim
   * @param {Float32Array | null} vector the claim's
   * @param {Evidence} evidence
   * @returns {Support}
   */
  function support(claim, vector, evidence) {
    const words = S.contentWords(claim);
    let shared = 0;
    for (const w of words) if (evidence.words.has(w)) shared++;
    const overlap = words.size ? shared / words.size : 0.0;
    let numbersOk = true;
    for (const n of S.numbers(claim)) if (!evidence.numbers.has(n)) numbersOk = false;
    let best = -1;
    let similarity = 0.0;
    if (evidence.sentences.length) {
      best = 0;
      similarity = -Infinity;
      for (let s = 0; s < evidence.sentences.length; s++) {
        const sim = vector && evidence.vectors ? E.dot(evidence.vectors, s * evidence.dim, vector) : 0;
        if (sim > similarity) {
          similarity = sim;
          best = s;
        }
      }
    }
    const score = SUPPORT_SIMILARITY * Math.max(similarity, 0.0) + SUPPORT_OVERLAP * overlap;
    return { score: numbersOk ? score : 0.0, similarity, overlap, numbersOk, sentence: best };
  }

  /**
   * `engine.defuse_markers`: `x[0]` in quoted code would read as a citation
   * marker; a word joiner after the bracket keeps it out of the syntax.
   * @param {string} text
   */
  function defuseMarkers(text) {
    return text.replace(S.pyPattern(spec.BRACKETED_NUMBER, "g"), "[\u2060$1]");
  }

  /**
   * The mean of a unit's sentence vectors, normalised (float32).
   * @param {Evidence} item
   * @param {number} first
   * @param {number} last
   * @returns {Float32Array | null}
   */
  function unitVector(item, first, last) {
    if (!item.vectors) return null;
    const dim = item.dim;
    const out = new Float32Array(dim);
    for (let s = first; s <= last; s++) {
      for (let d = 0; d < dim; d++) out[d] = Math.fround(out[d] + item.vectors[s * dim + d]);
    }
    const count = last - first + 1;
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      out[d] = out[d] / count;
      norm += out[d] * out[d];
    }
    const length = Math.max(Math.fround(Math.sqrt(norm)), 1e-12);
    for (let d = 0; d < dim; d++) out[d] = out[d] / length;
    return out;
  }

  /**
   * `engine.quote_units`: the chosen units as claims, each citing the passage
   * it is quoted from.
   * @param {Candidate[]} chosen
   * @param {Evidence[]} evidence
   * @returns {{claims: Claim[], removed: object[], reattributed: object[], unknown_markers: string[]}}
   */
  function quoteUnits(chosen, evidence) {
    const claims = chosen.map(({ unit }) => {
      const item = evidence[unit.evidence];
      const vector = unitVector(item, unit.first, unit.last);
      return {
        text: defuseMarkers(unit.text),
        sources: [unit.evidence],
        supports: evidence.map((e) => support(unit.text, vector, e)),
        vector,
        quote: { text: item.text.slice(unit.start, unit.end), start: unit.start, end: unit.end },
      };
    });
    return { claims, removed: [], reattributed: [], unknown_markers: [] };
  }

  // -- the answer of selection mode: grounding.verify ------------------------


  /**
   * `PurePosixPath(path).stem`.
   * @param {string} path
   */
  function stem(path) {
    const name = path.split("/").filter((part) => part !== "" && part !== ".").pop() || "";
    const dot = name.lastIndexOf(".");
    return dot > 0 && dot < name.length - 1 ? name.slice(0, dot) : name;
  }

  /**
   * `citations.parse_markers`: the evidence a text's markers cite (in
   * order, no repeats) and the markers that name none.
   * @param {string} text
   * @param {Evidence[]} evidence
   * @returns {[number[], string[]]}
   */
  function parseMarkers(text, evidence) {
    /** @type {number[]} */
    const claimed = [];
    /** @type {string[]} */
    const unknown = [];
    /** @param {number | null} index @param {string} marker */
    const add = (index, marker) => {
      if (index === null) unknown.push(marker);
      else if (!claimed.includes(index)) claimed.push(index);
    };
    for (const match of text.matchAll(S.pyPattern(spec.BRACKET, "g"))) {
      const inner = S.pyStrip(match[1]);
      const source = S.pyPattern(spec.SOURCE).exec(inner);
      if (source) {
        const wanted = stem(S.pyStrip(source[1]).split("#")[0]).toLowerCase();
        const found = evidence.findIndex((e) => e.record && stem(String(e.record.docname)).toLowerCase() === wanted);
        add(found < 0 ? null : found, match[0]);
        continue;
      }
      for (const ref of inner.split(S.pyPattern(spec.REFERENCE_SEPARATOR))) add(byReference(ref, evidence), `[${ref}]`);
    }
    for (const match of text.matchAll(S.pyPattern(spec.CHAPTER, "g"))) {
      const [, chapter, section] = match;
      const found = evidence.findIndex(
        (e) =>
          e.record &&
          String(e.record.chapter).startsWith(`${chapter}.`) &&
          (section === undefined || String(e.record.section).startsWith(section)),
      );
      add(found < 0 ? null : found, match[0]);
    }
    return [claimed, unknown];
  }

  /**
   * `citations._by_reference`: `[2]`, `[ch3-sec2-p4]`, `[user-selection]`.
   * @param {string} ref
   * @param {Evidence[]} evidence
   * @returns {number | null}
   */
  function byReference(ref, evidence) {
    if (/^[0-9]+$/.test(ref)) {
      const n = Number(ref);
      return n >= 1 && n <= evidence.length ? n - 1 : null;
    }
    const lower = ref.toLowerCase();
    if (S.pyPattern(spec.PASSAGE_ID).test(ref) || lower === USER_SELECTION || lower === "user selection") {
      const key = lower.startsWith("user") ? USER_SELECTION : ref;
      const found = evidence.findIndex((e) => e.key === key);
      return found < 0 ? null : found;
    }
    return null;
  }

  /**
   * `grounding._selection_twins`: a claim from the reader's selection also
   * cites the book passage holding it (and the other way round), when that
   * supports it as well.
   * @param {number} source
   * @param {Support[]} supports
   * @param {Evidence[]} evidence
   * @returns {number[]}
   */
  function selectionTwins(source, supports, evidence) {
    const isSelection = (/** @type {Evidence} */ e) => e.key === USER_SELECTION;
    if (!evidence.some(isSelection)) return [];
    const best = supports[source].score;
    for (let j = 0; j < evidence.length; j++) {
      if (j !== source && isSelection(evidence[j]) !== isSelection(evidence[source]) && supports[j].score >= best - TWIN_MARGIN) {
        return [j];
      }
    }
    return [];
  }

  /**
   * `grounding.verify`: the sentences of `text` that some evidence supports,
   * each attributed; the rest listed as removed.
   * @param {string} text
   * @param {Evidence[]} evidence
   * @param {(texts: string[]) => Promise<Float32Array[]>} embed
   * @returns {Promise<{claims: Claim[], removed: object[], reattributed: object[], unknown_markers: string[]}>}
   */
  async function verify(text, evidence, embed) {
    const pieces = S.splitClaims(text);
    const parsed = pieces.map((piece) => parseMarkers(piece, evidence));
    const claimsText = pieces.map((piece) => S.stripMarkers(piece));
    const keep = claimsText.flatMap((c, i) => (S.contentWords(c).size ? [i] : []));
    const vectors = keep.length ? await embed(keep.map((i) => claimsText[i])) : [];
    /** @type {{claims: Claim[], removed: object[], reattributed: object[], unknown_markers: string[]}} */
    const result = { claims: [], removed: [], reattributed: [], unknown_markers: [] };
    parsed.forEach(([, unknown], i) => {
      result.unknown_markers.push(...unknown);
      if (!keep.includes(i) && claimsText[i]) {
        result.removed.push({ sentence: claimsText[i], reason: "no content", best_support: 0.0 });
      }
    });
    keep.forEach((i, n) => {
      const claim = claimsText[i];
      const claimed = parsed[i][0];
      const vector = vectors[n];
      const supports = evidence.map((e) => support(claim, vector, e));
      const ranked = evidence.map((_, j) => j).sort((a, b) => supports[b].score - supports[a].score);
      if (!ranked.length || supports[ranked[0]].score < SUPPORT_THRESHOLD) {
        result.removed.push({
          sentence: claim,
          reason: "unsupported",
          best_support: ranked.length ? R.pyRound(supports[ranked[0]].score, 3) : 0.0,
        });
        return;
      }
      const confirmed = claimed.filter((j) => supports[j].score >= SUPPORT_THRESHOLD);
      if (claimed.length && !confirmed.length) {
        result.reattributed.push({ sentence: claim, from: claimed.map((j) => evidence[j].key), to: evidence[ranked[0]].key });
      }
      const sources = confirmed.length ? confirmed : [ranked[0]];
      sources.push(...selectionTwins(sources[0], supports, evidence));
      result.claims.push({ text: claim, sources, supports, vector, quote: null });
    });
    return result;
  }

  const api = {
    support,
    defuseMarkers,
    unitVector,
    quoteUnits,
    parseMarkers,
    verify,
  };
  lib.provide("verify", api);
  if (typeof module === "object") module.exports = api;
})();
