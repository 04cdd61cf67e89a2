// @ts-check
/**
 * Verified claims -> the answer JSON of `POST /api/ask`: the JS twin of
 * `AnswerEngine._assemble`, `_abstain`, `_cite`, `_shown` and `_see_also`
 * (`sphinx_ragcite/answer/engine.py`) and of `answer/confidence.py`.
 *
 * Three outcomes: `answer` (the quoted units with their `[n]` markers and
 * citations), `passages` (no claim: the passages most likely to answer,
 * each with its best unit quoted) and `not_found` (the closest passages in
 * `metadata.see_also`). Quote spans are offsets in code points, as Python
 * counts them.
 *
 * Classic script: provides `answer` (see `lib.js`).
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").Citation} Citation */
/** @typedef {import("./types").ShownPassage} ShownPassage */
/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").EngineCandidate} Candidate */
/** @typedef {import("./types").EngineClaim} Claim */
/** @typedef {import("./types").PassageRecord} PassageRecord */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const R = lib.need("ranker");
  const E = lib.need("evidence");

  const spec = lib.need("spec");
  // the abstentions' texts, what a passage keeps of its record, the
  // confidence bands, `answer_fit`'s weights and the confidence curve
  const { NOT_FOUND, MAYBE_HERE, SEE_ALSO, SHOWN_FIELDS, SEE_ALSO_FIELDS } = spec;
  const { HIGH_CONFIDENCE, MEDIUM_CONFIDENCE, FIT_SIMILARITY, FIT_OVERLAP } = spec;
  const { BIAS, W_FIT, W_RELEVANCE, W_SUPPORT } = spec;

  /** @param {number} value */
  function confidenceLevel(value) {
    if (value >= HIGH_CONFIDENCE) return "high";
    if (value >= MEDIUM_CONFIDENCE) return "medium";
    return "low";
  }

  /**
   * `confidence.answer_fit`: how well a sentence answers a question.
   * @param {Set<string>} asked the question's content words
   * @param {number} similarity their cosine
   * @param {string} sentence
   */
  function answerFit(asked, similarity, sentence) {
    let overlap = 0.0;
    if (asked.size) {
      const words = S.contentWords(sentence);
      let shared = 0;
      for (const w of asked) if (words.has(w)) shared++;
      overlap = shared / asked.size;
    }
    return FIT_SIMILARITY * similarity + FIT_OVERLAP * overlap;
  }

  /**
   * `confidence.citation_confidence`.
   * @param {number} fit
   * @param {number} relevance
   * @param {number} support
   */
  function citationConfidence(fit, relevance, support) {
    const z = BIAS + W_FIT * fit + W_RELEVANCE * relevance + W_SUPPORT * support;
    return R.pyRound(1.0 / (1.0 + Math.exp(-z)), 4);
  }

  /**
   * `confidence.answer_confidence`: mean citation confidence, lowered when
   * verification removed claims.
   * @param {number[]} citations
   * @param {number} kept
   * @param {number} removed
   */
  function answerConfidence(citations, kept, removed) {
    if (!citations.length || !kept) return 0.0;
    const mean = citations.reduce((a, b) => a + b, 0) / citations.length;
    return R.pyRound(mean * Math.sqrt(kept / (kept + removed)), 4);
  }

  /**
   * A record's fields of `names` that it has.
   * @param {Record<string, any>} record
   * @param {readonly string[]} names
   */
  function pick(record, names) {
    /** @type {Record<string, any>} */
    const out = {};
    for (const name of names) if (name in record && record[name] !== undefined) out[name] = record[name];
    return out;
  }

  /**
   * [start, end) of a span of `text` in Python's offsets (code points).
   * @param {string} text
   * @param {number} start
   * @param {number} end
   * @returns {[number, number]}
   */
  function span(text, start, end) {
    const from = S.pythonOffset(text, start);
    return [from, from + S.codePoints(text.slice(start, end))];
  }

  /**
   * `contracts.make_snippet`: a prefix of a text cut at a word boundary
   * (next to a CJK character, every character boundary is one).
   * @param {string} text
   * @param {number} [limit]
   * @param {number} [minimum]
   */
  function makeSnippet(text, limit = spec.SNIPPET_CHARS, minimum = spec.SNIPPET_MIN_CHARS) {
    const flat = Array.from(S.pyStrip(text.replace(S.pyPattern(spec.SNIPPET_SPACES, "g"), " ")));
    const rstrip = (/** @type {string[]} */ chars) => S.pyStrip(chars.join(""), "right");
    if (flat.length <= limit) return flat.join("");
    let cut = flat.lastIndexOf(" ", limit);
    if (!flat.slice(Math.max(cut, minimum - 1), limit + 1).some(S.isCjk)) {
      return rstrip(flat.slice(0, cut >= minimum ? cut : limit));
    }
    cut = limit;
    for (let i = limit; i >= minimum; i--) {
      if (flat[i] === " " || S.isCjk(flat[i - 1]) || S.isCjk(flat[i])) {
        cut = i;
        break;
      }
    }
    return rstrip(flat.slice(0, cut));
  }

  /**
   * `engine._cite`: the claims with their markers, numbered in order of
   * first use, and the citations the markers name.
   * @param {string} question
   * @param {Float32Array | null} qvec
   * @param {Evidence[]} evidence
   * @param {Claim[]} claims
   * @param {string} stamp the citation date
   * @returns {{text: string, citations: Citation[]}}
   */
  function cite(question, qvec, evidence, claims, stamp) {
    /** @type {Map<number, number>} */
    const numbers = new Map();
    /** @type {Map<number, Array<{text: string, start: number, end: number}>>} */
    const quotes = new Map();
    /** @type {Map<number, number>} */
    const supports = new Map();
    /** @type {Map<number, number>} */
    const fits = new Map();
    const asked = S.contentWords(question);
    /** @type {string[]} */
    const parts = [];
    for (const claim of claims) {
      const similarity = claim.vector && qvec ? E.dot(claim.vector, 0, qvec) : 0;
      const claimFit = answerFit(asked, similarity, claim.text);
      const marks = [];
      for (const source of claim.sources) {
        if (!numbers.has(source)) numbers.set(source, numbers.size + 1);
        marks.push(`[${numbers.get(source)}]`);
        const support = claim.supports[source];
        const sentence = claim.quote || evidence[source].sentences[support.sentence];
        const list = quotes.get(source) || [];
        if (!list.some((q) => q.text === sentence.text && q.start === sentence.start && q.end === sentence.end)) {
          list.push(sentence);
        }
        quotes.set(source, list);
        supports.set(source, Math.max(supports.get(source) ?? 0.0, support.score));
        fits.set(source, Math.max(fits.get(source) ?? 0.0, claimFit));
      }
      parts.push(`${claim.text} ${marks.join("")}`);
    }
    const citations = [...numbers]
      .sort((a, b) => a[1] - b[1])
      .map(([source, n]) =>
        citation(
          n,
          evidence[source],
          /** @type {Array<{text: string, start: number, end: number}>} */ (quotes.get(source)),
          /** @type {number} */ (fits.get(source)),
          /** @type {number} */ (supports.get(source)),
          stamp,
        ),
      );
    return { text: parts.join(" "), citations };
  }

  /**
   * `engine._citation`: a book passage, or the reader's selection (no page
   * to link to).
   * @param {number} n
   * @param {Evidence} item
   * @param {Array<{text: string, start: number, end: number}>} quotes
   * @param {number} fit
   * @param {number} support
   * @param {string} stamp
   * @returns {Citation}
   */
  function citation(n, item, quotes, fit, support, stamp) {
    const relevance = Math.min(Math.max(item.relevance, 0.0), 1.0);
    const record = item.record;
    const source =
      record === null
        ? {
            passage_id: item.key,
            url: null,
            chapter: "User Selection",
            section: "Selected Text",
            heading_path: [],
            snippet: makeSnippet(item.text),
            source_type: "selection",
          }
        : {
            passage_id: record.passage_id,
            url: record.url,
            chapter: record.chapter,
            section: record.section,
            heading_path: record.heading_path,
            snippet: record.snippet,
            source_type: "book",
            ...pick(record, ["site", "version"]),
          };
    return /** @type {Citation} */ ({
      n,
      ...source,
      page: null,
      quote: quotes.map((q) => q.text).join(" … "),
      quote_spans: quotes.map((q) => span(item.text, q.start, q.end)),
      similarity_score: R.pyRound(relevance, 4),
      confidence_score: citationConfidence(fit, relevance, support),
      grounded: true,
      citation_date: stamp,
    });
  }

  /**
   * `engine._shown`: the passages most likely to answer, each with its best unit.
   * @param {Candidate[]} candidates
   * @param {Evidence[]} evidence
   * @param {import("./ranker.js").Ranker} ranker
   * @returns {ShownPassage[]}
   */
  function shown(candidates, evidence, ranker) {
    return R.passageConfidences(candidates, ranker).map(([confidence, best]) => {
      const item = evidence[best.unit.evidence];
      return /** @type {ShownPassage} */ ({
        ...pick(/** @type {PassageRecord} */ (item.record), SHOWN_FIELDS), // a book passage's
        quote: item.text.slice(best.unit.start, best.unit.end),
        quote_spans: [span(item.text, best.unit.start, best.unit.end)],
        confidence,
      });
    });
  }

  /**
   * `engine._see_also`: the nearest passages, for an answer that abstains.
   * @param {Evidence[]} evidence
   */
  function seeAlso(evidence) {
    return evidence.slice(0, SEE_ALSO).map((e) => pick(/** @type {PassageRecord} */ (e.record), SEE_ALSO_FIELDS));
  }

  /**
   * The answer JSON of a cited answer (`engine._assemble`, extractive).
   * @param {object} a
   * @param {string} a.question
   * @param {Float32Array | null} a.qvec
   * @param {Evidence[]} a.evidence
   * @param {{claims: Claim[], removed: object[], reattributed: object[], unknown_markers: string[]}} a.verified
   * @param {number} a.confidence the calibrated gate
   * @param {Record<string, unknown>} a.meta
   * @param {string} a.stamp
   * @param {"book" | "selection"} [a.mode]
   * @param {number} [a.removed] claims verification removed from the answer
   *   shown (default: all it removed)
   * @returns {Answer}
   */
  function assemble({ question, qvec, evidence, verified, confidence, meta, stamp, mode = "book", removed }) {
    const { text, citations } = cite(question, qvec, evidence, verified.claims, stamp);
    const lost = removed ?? verified.removed.length;
    // book mode: the calibrated gate; about a selection (the reader chose the
    // passage): the citations' own
    const scores = mode === "selection" ? citations.map((c) => c.confidence_score) : [confidence];
    const shownConfidence = answerConfidence(scores, verified.claims.length, lost);
    return {
      question,
      mode,
      answer: text,
      citations,
      confidence: shownConfidence,
      confidence_level: confidenceLevel(shownConfidence),
      grounded: true,
      metadata: {
        ...meta,
        removed: verified.removed,
        reattributed: verified.reattributed,
        unknown_markers: verified.unknown_markers,
      },
      outcome: "answer",
      passages: [],
    };
  }

  /**
   * The answer JSON of an abstention (`engine._abstain`): the passages that
   * most likely hold the answer when the best is likely enough, else word
   * that the book does not cover it.
   * @param {object} a
   * @param {string} a.question
   * @param {Evidence[]} a.evidence
   * @param {Candidate[]} a.candidates every unit, ranked
   * @param {number} a.confidence the calibrated gate (0 without units)
   * @param {import("./ranker.js").Ranker} a.ranker
   * @param {Record<string, unknown>} a.meta
   * @param {"book" | "selection"} [a.mode]
   * @returns {Answer}
   */
  function abstain({ question, evidence, candidates, confidence, ranker, meta, mode = "book" }) {
    const found = shown(candidates, evidence, ranker);
    const passages = found.length && found[0].confidence >= ranker.passagesAt ? found : [];
    const value = passages.length ? passages[0].confidence : confidence;
    return {
      question,
      mode,
      answer: passages.length ? MAYBE_HERE : NOT_FOUND,
      citations: [],
      confidence: value,
      confidence_level: confidenceLevel(value),
      grounded: false,
      metadata: {
        ...meta,
        see_also: /** @type {any} */ (seeAlso(evidence)),
        removed: [],
        reattributed: [],
        unknown_markers: [],
      },
      outcome: passages.length ? "passages" : "not_found",
      passages,
    };
  }

  const api = {
    confidenceLevel,
    answerFit,
    makeSnippet,
    citationConfidence,
    answerConfidence,
    cite,
    shown,
    seeAlso,
    assemble,
    abstain,
  };
  lib.provide("answer", api);
  if (typeof module === "object") module.exports = api;
})();
