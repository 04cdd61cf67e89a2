// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { locateQuote, quoteSentences } = require("../quotes.js");
const { buildSources, quoteSpans } = require("../citations.js");

/**
 * The text each range covers, read back from the text nodes.
 * @param {string[]} texts
 * @param {import("../quotes.js").NodeRange[]} ranges
 */
function covered(texts, ranges) {
  return ranges.map(({ start, end }) => {
    let out = "";
    for (let n = start[0]; n <= end[0]; n++) {
      out += texts[n].slice(n === start[0] ? start[1] : 0, n === end[0] ? end[1] : undefined);
    }
    return out;
  });
}

/** The engine's quote and spans for sentences of a passage text. */
function cite(/** @type {string} */ passage, /** @type {string[]} */ sentences) {
  /** @type {[number, number][]} */
  const spans = sentences.map((s) => {
    const at = passage.indexOf(s);
    assert.ok(at >= 0, s);
    return [at, at + s.length];
  });
  return { quote: sentences.join(" … "), spans };
}

test("a sentence across inline elements and re-wrapped lines", () => {
  // <p>Use about twice the dose in water for the <em>bloom</em>, so 30 g\nof coffee ...</p>
  const texts = [
    "Use about twice the dose in water for the ",
    "bloom",
    ", so 30 g of water for 15 g\nof coffee, and wait 30 to 45 seconds. Gently swirling the brewer.",
  ];
  const passage =
    "Use about twice the dose in water for the bloom, so 30 g of water for 15 g of coffee, " +
    "and wait 30 to 45 seconds. Gently swirling the brewer.";
  const sentence = "Use about twice the dose in water for the bloom, so 30 g of water for 15 g of coffee, and wait 30 to 45 seconds.";
  const { quote, spans } = cite(passage, [sentence]);
  const found = locateQuote(texts, quote, spans);
  assert.deepEqual(found, [{ start: [0, 0], end: [2, 65] }]);
  assert.equal(covered(texts, found)[0].replace(/\s+/g, " "), sentence);
});

test("the span picks which of two equal sentences is quoted", () => {
  const texts = ["Stir once. Wait a minute. ", "Pour the rest. Stir once. Serve."];
  const passage = "Stir once. Wait a minute. Pour the rest. Stir once. Serve.";
  const second = passage.lastIndexOf("Stir once.");
  const found = locateQuote(texts, "Stir once.", [[second, second + 10]]);
  assert.deepEqual(found, [{ start: [1, 15], end: [1, 25] }]);
  const first = locateQuote(texts, "Stir once.", [[0, 10]]);
  assert.deepEqual(first, [{ start: [0, 0], end: [0, 10] }]);
});

test("several sentences, in the quote's order, none overlapping", () => {
  const passage = "Alpha one. Beta two. Gamma three. Beta two.";
  const texts = [passage];
  const { quote, spans } = cite(passage, ["Gamma three.", "Alpha one."]);
  const found = locateQuote(texts, quote, spans);
  assert.deepEqual(covered(texts, found), ["Gamma three.", "Alpha one."]);
  // without spans, the same sentence twice takes both occurrences in turn
  const twice = locateQuote(texts, "Beta two. … Beta two.", []);
  assert.deepEqual(twice, [
    { start: [0, 11], end: [0, 20] },
    { start: [0, 34], end: [0, 43] },
  ]);
});

test("a table row of the index (a | b) is found across the page's cells", () => {
  // <tr><td><p>Espresso</p></td>\n<td><p>Fine, like fine sand</p></td>...
  const texts = ["Espresso", "\n", "Fine, like fine sand", "\n", "200 to 300 µm", "\n"];
  const passage = "Brew method | Description | Approximate particle size\nEspresso | Fine, like fine sand | 200 to 300 µm";
  const { quote, spans } = cite(passage, ["Espresso | Fine, like fine sand | 200 to 300 µm"]);
  const found = locateQuote(texts, quote, spans);
  assert.deepEqual(found, [{ start: [0, 0], end: [4, 13] }]);
});

test("code keeps its lines and its own bars", () => {
  const texts = ['print(f"{a:>6} | {b:>7}")\n', "x = 1 | 2\n"];
  const found = locateQuote(texts, "x = 1 | 2", [[26, 35]]);
  assert.deepEqual(covered(texts, found), ["x = 1 | 2"]);
});

test("what the page adds to the text, the index lacks, does not match", () => {
  // soft hyphens and no-break spaces of the page are ignored
  const texts = ["Extrac\u00adtion yield is 18\u00a0to 22 percent."];
  const found = locateQuote(texts, "Extraction yield is 18 to 22 percent.", [[0, 37]]);
  assert.deepEqual(covered(texts, found), ["Extrac\u00adtion yield is 18\u00a0to 22 percent."]);
});

test("a sentence that is not there is skipped, the others are still found", () => {
  const texts = ["The bloom takes 30 to 45 seconds."];
  const quote = "Something the page does not say. … The bloom takes 30 to 45 seconds.";
  const found = locateQuote(texts, quote, [[100, 132], [0, 33]]);
  assert.deepEqual(covered(texts, found), ["The bloom takes 30 to 45 seconds."]);
  assert.deepEqual(locateQuote(texts, "Not here.", [[0, 9]]), []);
  assert.deepEqual(locateQuote([], "The bloom.", []), []);
  assert.deepEqual(locateQuote(texts, "", []), []);
  assert.deepEqual(locateQuote(texts, "   ", [[0, 3]]), []);
});

test("quoteSentences cuts by the spans, so a sentence may contain the joiner", () => {
  const a = "Wait … then pour.";
  const b = "Serve hot.";
  const quote = `${a} … ${b}`;
  assert.deepEqual(quoteSentences(quote, [[10, 10 + a.length], [40, 40 + b.length]]), [
    { text: a, at: 10 },
    { text: b, at: 40 },
  ]);
  // spans that do not fit the quote: split on the joiner, no positions
  const loose = quoteSentences("One. … Two.", [[0, 99]]);
  assert.deepEqual(loose.map((s) => s.text), ["One.", "Two."]);
  assert.ok(loose.every((s) => Number.isNaN(s.at)));
  assert.deepEqual(quoteSentences("One. … Two.", [[0, 4], [9, 13]]), [
    { text: "One.", at: 0 },
    { text: "Two.", at: 9 },
  ]);
  assert.deepEqual(quoteSentences("", []), []);
});

test("quoteSpans keeps only well-formed spans", () => {
  assert.deepEqual(quoteSpans([[0, 5], [7, 9]]), [[0, 5], [7, 9]]);
  for (const bad of [null, "0,5", [[5, 5]], [[-1, 3]], [[0, 1.5]], [[0, 3, 4]], [["0", 3]], [[0, 3], null]]) {
    assert.deepEqual(quoteSpans(bad), [], JSON.stringify(bad));
  }
  assert.deepEqual(quoteSpans([]), []);
});

test("surrogate pairs and non-Latin text map to UTF-16 offsets", () => {
  const texts = ["Café ☕ 𝄞 notes. ", "Другое предложение."];
  const found = locateQuote(texts, "Café ☕ 𝄞 notes.", [[0, 15]]);
  assert.deepEqual(found, [{ start: [0, 0], end: [0, 16] }]); // 𝄞 is two UTF-16 units
  // the engine's spans count code points: they still cut the quote right
  assert.deepEqual(quoteSentences("𝄞 clef. … Next.", [[0, 7], [9, 14]]), [
    { text: "𝄞 clef.", at: 0 },
    { text: "Next.", at: 9 },
  ]);
  assert.deepEqual(covered(texts, locateQuote(texts, "Другое предложение.", [[16, 35]])), ["Другое предложение."]);
});

test("a source marks its own quote, never the snippet or the selection", () => {
  const base = { url: "a.html#ch1-sec1-p1", chapter: "c", section: "s", snippet: "Snip", confidence_score: 0.9 };
  const sources = buildSources(
    /** @type {any} */ ({
      citations: [
        { ...base, n: 1, passage_id: "ch1-sec1-p1", quote: "Q one.", quote_spans: [[4, 10]] },
        { ...base, n: 2, passage_id: "ch1-sec1-p2", quote: "Q two." },
        { ...base, n: 3, passage_id: "ch1-sec1-p3", quote: "", quote_spans: [[0, 4]] },
        { ...base, n: 4, passage_id: "user-selection", source_type: "selection", url: null, quote: "Sel." },
      ],
    }),
    "http://127.0.0.1/",
  );
  assert.deepEqual(
    sources.map((s) => s.marked),
    [{ text: "Q one.", spans: [[4, 10]] }, { text: "Q two.", spans: [] }, null, null],
  );
});
