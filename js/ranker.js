// @ts-check
/**
 * Answer units -> the one that answers, and whether the book answers at all:
 * the JS twin of `sphinx_ragcite/answer/ranker.py`.
 *
 * Every number that decides comes from the parsed `ranker.json` (the file
 * the Python engine reads): the unit model, the gate and its unit model,
 * the calibration map, the thresholds. A ranker trained on other features
 * than this script computes is refused, as Python refuses it.
 *
 * Classic script: provides `ranker` (see `lib.js`).
 */

/** @typedef {import("./types").EngineEvidence} Evidence */
/** @typedef {import("./types").EngineCandidate} Candidate */

/** @typedef {import("./types").Logistic} Logistic */
/** @typedef {import("./types").Ranker} Ranker the parsed ranker (`ranker.Ranker`) */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const S = lib.need("sentences");
  const U = lib.need("units");
  const E = lib.need("evidence");
  const spec = lib.need("spec");
  const { SECOND_CANDIDATES, SHOWN_PASSAGES } = spec;

  /**
   * `value[key]` of a JSON value, as `value.key` reads it (null and
   * undefined have none).
   * @param {unknown} value
   * @param {string} key
   * @returns {unknown}
   */
  const field = (value, key) =>
    value === null || value === undefined ? undefined : /** @type {Record<string, unknown>} */ (Object(value))[key];

  /**
   * A logistic model of `ranker.json` (`LogisticJson`), checked.
   * @param {unknown} data
   * @param {number} size
   * @param {string} where
   * @returns {Logistic}
   */
  function logistic(data, size, where) {
    /** @type {(v: unknown) => v is number[]} */
    const numbers = (v) => Array.isArray(v) && v.length === size && v.every((x) => typeof x === "number" && Number.isFinite(x));
    const [weights, mean, scale, bias] = ["weights", "mean", "scale", "bias"].map((key) => field(data, key));
    if (!data || !numbers(weights) || !numbers(mean) || !numbers(scale) || typeof bias !== "number") {
      throw new Error(`the answer ranker's ${where} must have ${size} weights, means and scales`);
    }
    return { weights, bias, mean, scale };
  }

  /**
   * `Ranker.from_json`: the parsed ranker.json (`RankerJson`), checked.
   * @param {unknown} data
   * @returns {Ranker}
   */
  function parseRanker(data) {
    if (data === null || typeof data !== "object") throw new Error("the answer ranker is not a JSON object");
    const file = /** @type {Record<string, unknown>} */ (data);
    const names = Array.isArray(file.features) ? file.features : [];
    if (names.join(",") !== U.FEATURES.join(",")) {
      throw new Error(
        `the answer ranker was trained on features ${JSON.stringify(names)}, this ` +
          `engine computes ${JSON.stringify(U.FEATURES)}: rebuild the site with a matching sphinx-ragcite`,
      );
    }
    const calibration = file.calibration || { x: [], y: [] };
    const x = field(calibration, "x");
    const y = field(calibration, "y");
    if (
      !Array.isArray(x) ||
      !Array.isArray(y) ||
      x.length !== y.length ||
      x.some((v, i) => typeof v !== "number" || (i > 0 && v < x[i - 1])) ||
      y.some((v) => typeof v !== "number")
    ) {
      throw new Error("the answer ranker's calibration: x and y must be sorted lists of one length");
    }
    const { threshold, second } = file;
    if (typeof threshold !== "number" || typeof second !== "number") {
      throw new Error("the answer ranker has no threshold or second");
    }
    const outcomes = file.outcomes || {};
    const gateSize = U.UNIT_FEATURES.length;
    return {
      units: logistic(file, U.FEATURES.length, "unit model"),
      gateUnits: logistic(file.gate_units, gateSize, "gate_units"),
      gate: logistic(file.gate, gateSize + 1, "gate"),
      second,
      calibration: { x, y },
      answerAt: Number(field(outcomes, "answer") ?? threshold),
      passagesAt: Number(field(outcomes, "passages") ?? threshold / 2),
    };
  }

  /**
   * The model's probability for one row.
   * @param {Logistic} model
   * @param {number[]} row
   */
  function predict(model, row) {
    let z = model.bias;
    for (let i = 0; i < row.length; i++) z += ((row[i] - model.mean[i]) / model.scale[i]) * model.weights[i];
    return 1.0 / (1.0 + Math.exp(-Math.min(Math.max(z, -30), 30)));
  }

  /**
   * numpy's `interp(x, xp, fp)` for one x.
   * @param {number} x
   * @param {number[]} xp
   * @param {number[]} fp
   */
  function interp(x, xp, fp) {
    const n = xp.length;
    if (x > xp[n - 1]) return fp[n - 1];
    if (x < xp[0]) return fp[0];
    if (x === xp[n - 1]) return fp[n - 1];
    let j = 0; // the last index with xp[j] <= x
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xp[mid] <= x) lo = mid + 1;
      else hi = mid;
    }
    j = lo - 1;
    if (j === n - 1 || xp[j] === x) return fp[j];
    const slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    let value = slope * (x - xp[j]) + fp[j];
    if (Number.isNaN(value)) {
      value = slope * (x - xp[j + 1]) + fp[j + 1];
      if (Number.isNaN(value) && fp[j] === fp[j + 1]) value = fp[j];
    }
    return value;
  }

  /**
   * Python's `round(value, digits)`: the nearest, ties (of the exact binary
   * value) to even.
   * @param {number} value
   * @param {number} digits
   */
  function pyRound(value, digits) {
    if (!Number.isFinite(value)) return value;
    const exact = Math.abs(value).toFixed(Math.min(100, digits + 40));
    const cut = exact.indexOf(".") + 1 + digits;
    const rest = exact.slice(cut);
    let kept = exact.slice(0, cut);
    const up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || odd(kept)));
    let result = Number(kept);
    if (up) result = Number((result + Math.pow(10, -digits)).toFixed(digits));
    return value < 0 ? -result : result;
  }

  /** @param {string} digits a decimal's text: is its last digit odd? */
  const odd = (digits) => Number(digits.replace(/\.$/, "").slice(-1)) % 2 === 1;

  /**
   * `Ranker.calibrate`: the gate's output as a measured probability, 4 decimals.
   * @param {Ranker} ranker
   * @param {number} answerable
   */
  function calibrate(ranker, answerable) {
    const { x, y } = ranker.calibration;
    const value = x.length ? interp(answerable, x, y) : answerable;
    return pyRound(Math.min(Math.max(value, 0.0), 1.0), 4);
  }

  /**
   * `ranker.unit_rows` + `rank_units`: every unit of the evidence with its
   * signals and probability, most likely first.
   * @param {string} question
   * @param {Float32Array | null} qvec
   * @param {Evidence[]} evidence
   * @param {number[]} bm25 each evidence item's BM25 score (0 when none)
   * @param {(term: string) => number} idf
   * @param {Ranker} ranker
   * @returns {Candidate[]}
   */
  function rankUnits(question, qvec, evidence, bm25, idf, ranker) {
    /** @type {Array<[string, number]>} */
    const asked = [...S.contentWords(question)].sort(S.compareStrings).map((t) => [t, idf(t)]);
    const kind = U.questionKind(question);
    const best = Math.max(0.0, ...bm25.filter((b) => b > 0));
    /** @type {import("./types").EngineUnit[]} */
    const units = [];
    /** @type {number[][]} */
    const own = [];
    evidence.forEach((item, e) => {
      if (!item.sentences.length) return;
      const sims = E.sentenceSims(item, qvec);
      const share = best > 0 && e < bm25.length ? bm25[e] / best : 0.0;
      for (const unit of U.unitsOf(e, item)) {
        units.push(unit);
        own.push(U.features(unit, item, sims, asked, kind, share, question));
      }
    });
    const rows = U.listwise(own);
    const ranked = units.map((unit, i) => ({ unit, probability: predict(ranker.units, rows[i]), row: rows[i] }));
    ranked.sort(
      (a, b) =>
        b.probability - a.probability || a.unit.evidence - b.unit.evidence || a.unit.first - b.unit.first,
    );
    return ranked;
  }

  /**
   * `ranker.answerability`: how likely the best unit's passage answers.
   * @param {Candidate[]} candidates
   * @param {Ranker} ranker
   */
  function answerability(candidates, ranker) {
    if (!candidates.length) return 0.0;
    const size = U.UNIT_FEATURES.length;
    let top = 0;
    let peak = -Infinity;
    const own = candidates.map((c) => c.row.slice(0, size));
    own.forEach((row, i) => {
      const p = predict(ranker.gateUnits, row);
      if (p > peak) {
        peak = p;
        top = i;
      }
    });
    return predict(ranker.gate, [peak, ...own[top]]);
  }

  /** `spec.STRICT_KINDS`: kinds no unit lacking their kind may answer. */
  const STRICT_KINDS = /** @type {Set<string>} */ (new Set(spec.STRICT_KINDS));
  const KIND_MISMATCH = U.FEATURES.indexOf("kind_mismatch");

  /**
   * `ranker.choose`: the best unit, and a second only when nearly as likely;
   * nothing below the answer threshold or for a strict kind the best lacks.
   * @param {Candidate[]} candidates
   * @param {Ranker} ranker
   * @param {number} confidence calibrated
   * @param {string} kind
   * @returns {Candidate[]}
   */
  function choose(candidates, ranker, confidence, kind) {
    if (!candidates.length || confidence < ranker.answerAt) return [];
    const best = candidates[0];
    if (STRICT_KINDS.has(kind) && best.row[KIND_MISMATCH] === 1.0) return [];
    const chosen = [best];
    for (const other of candidates.slice(1, 1 + SECOND_CANDIDATES)) {
      if (other.probability < ranker.second * best.probability) break;
      if (
        other.unit.evidence === best.unit.evidence &&
        other.unit.start < best.unit.end &&
        best.unit.start < other.unit.end
      ) {
        continue;
      }
      chosen.push(other);
      break;
    }
    return chosen;
  }

  /**
   * `ranker.passage_confidences`: each passage's calibrated confidence (the
   * gate over its own units) and its best unit, most likely first.
   * @param {Candidate[]} candidates
   * @param {Ranker} ranker
   * @returns {Array<[number, Candidate]>}
   */
  function passageConfidences(candidates, ranker) {
    /** @type {Map<number, Candidate[]>} */
    const byPassage = new Map();
    for (const c of candidates) {
      const list = byPassage.get(c.unit.evidence) || [];
      list.push(c);
      byPassage.set(c.unit.evidence, list);
    }
    /** @type {Array<[number, Candidate]>} */
    const scored = [...byPassage.values()].map((units) => [calibrate(ranker, answerability(units, ranker)), units[0]]);
    scored.sort((a, b) => b[0] - a[0] || a[1].unit.evidence - b[1].unit.evidence);
    return scored.slice(0, SHOWN_PASSAGES);
  }

  const api = {
    parseRanker,
    predict,
    interp,
    pyRound,
    calibrate,
    rankUnits,
    answerability,
    choose,
    passageConfidences,
  };
  lib.provide("ranker", api);
  if (typeof module === "object") module.exports = api;
})();
