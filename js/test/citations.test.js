// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const {
  bidiPieces,
  buildLinks,
  buildSeeAlso,
  buildShown,
  buildSources,
  clip,
  confidenceLevel,
  isPassageHash,
  outcomeOf,
  parseAnswer,
  quoteContext,
  resolveUrl,
  samePage,
  sourceTitle,
  titleParts,
} = require("../citations.js");

const ROOT = "http://127.0.0.1:8000/book/";

/**
 * @param {number} n
 * @returns {any}
 */
function citation(n, extra = {}) {
  return {
    n,
    passage_id: `ch1-sec1-p${n}`,
    url: `brewing/espresso.html#ch1-sec1-p${n}`,
    chapter: "5. Brewing",
    section: "5.3. Espresso",
    heading_path: ["Brewing", "Espresso"],
    page: null,
    snippet: `Snippet ${n}`,
    quote: `Quote ${n}.`,
    similarity_score: 0.8,
    confidence_score: 0.75,
    grounded: true,
    source_type: "book",
    citation_date: "2026-11-21T10:30:45Z",
    ...extra,
  };
}

test("markers become marker segments, text around them stays text", () => {
  assert.deepEqual(parseAnswer("Bloom for 30 s [1]. Then pour [2].", [1, 2]), [
    { text: "Bloom for 30 s " },
    { marker: 1 },
    { text: ". Then pour " },
    { marker: 2 },
    { text: "." },
  ]);
});

test("adjacent and grouped markers", () => {
  assert.deepEqual(parseAnswer("A [1][2] B [1, 2]", [1, 2]), [
    { text: "A " },
    { marker: 1 },
    { marker: 2 },
    { text: " B " },
    { marker: 1 },
    { marker: 2 },
  ]);
});

test("unknown markers and look-alikes are shown as text", () => {
  assert.deepEqual(parseAnswer("See [3] and [1] and [x] and [1, 9].", [1]), [
    { text: "See [3] and " },
    { marker: 1 },
    { text: " and [x] and [1, 9]." },
  ]);
  assert.deepEqual(parseAnswer("", [1]), []);
  assert.deepEqual(parseAnswer(/** @type {any} */ (null), [1]), []);
  assert.deepEqual(parseAnswer("no markers", []), [{ text: "no markers" }]);
});

test("hostile answer text stays a text segment", () => {
  const hostile = '<img src=x onerror=alert(1)> [1](javascript:alert(1)) </script><script>x()</script>';
  const segments = parseAnswer(hostile, [1]);
  assert.deepEqual(segments, [
    { text: "<img src=x onerror=alert(1)> " },
    { marker: 1 },
    { text: "(javascript:alert(1)) </script><script>x()</script>" },
  ]);
  // no segment carries a URL: links never come from the answer text
  for (const s of segments) assert.deepEqual(Object.keys(s).sort(), "text" in s ? ["text"] : ["marker"]);
});

test("relative citation URLs resolve against the site root", () => {
  assert.equal(
    resolveUrl("brewing/espresso.html#ch8-sec1-p1", ROOT),
    "http://127.0.0.1:8000/book/brewing/espresso.html#ch8-sec1-p1",
  );
  assert.equal(resolveUrl("brewing/espresso/#ch8-sec1-p1", ROOT), "http://127.0.0.1:8000/book/brewing/espresso/#ch8-sec1-p1");
  assert.equal(resolveUrl("index.html#ch0-sec0-p1", "file:///tmp/site/"), "file:///tmp/site/index.html#ch0-sec0-p1");
  assert.equal(resolveUrl("/other/page.html", ROOT), "http://127.0.0.1:8000/other/page.html");
  assert.equal(resolveUrl("http://127.0.0.1:8000/book/a.html", ROOT), "http://127.0.0.1:8000/book/a.html");
});

test("script, data and foreign URLs are rejected", () => {
  for (const bad of [
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "java\nscript:alert(1)",
    "\u0000javascript:alert(1)",
    "jav&#x61;script:alert(1)#", // stays relative: resolved harmlessly below
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "blob:http://127.0.0.1:8000/x",
    "//evil.example/x.html",
    "\\\\evil.example/x.html",
    "/\\evil.example/x.html",
    "https://evil.example/x.html",
    "http://127.0.0.1:9999/book/a.html",
    "https://127.0.0.1:8000/book/a.html",
    "http://user:pw@127.0.0.1:8000/book/a.html",
    "",
    null,
    undefined,
    42,
    { toString: () => "a.html" },
  ]) {
    const got = resolveUrl(bad, ROOT);
    if (bad === "jav&#x61;script:alert(1)#") {
      // not a scheme (the "&#x61;" is literal text): a same-origin relative path
      assert.ok(got && got.startsWith(ROOT), String(got));
      continue;
    }
    assert.equal(got, null, `accepted ${JSON.stringify(String(bad))}: ${got}`);
  }
  assert.equal(resolveUrl("a.html", "not a url"), null);
  assert.equal(resolveUrl("http://127.0.0.1:8000/a.html", "file:///tmp/site/"), null);
});

test("sources: ordered by n, hrefs only from citation.url, selection has none", () => {
  const answer = {
    answer: "x [2] y [1]",
    citations: [
      citation(2, { url: "javascript:alert(1)", confidence_score: 0.3 }),
      citation(1, { confidence_score: 0.92 }),
      {
        ...citation(3),
        passage_id: "user-selection",
        url: null,
        chapter: "User Selection",
        section: "Selected Text",
        source_type: "selection",
        confidence_score: 0.75,
      },
    ],
  };
  const sources = buildSources(answer, ROOT);
  assert.deepEqual(
    sources.map((s) => [s.n, s.href, s.level, s.selection]),
    [
      [1, `${ROOT}brewing/espresso.html#ch1-sec1-p1`, "high", false],
      [2, null, "low", false],
      [3, null, "medium", true],
    ],
  );
  assert.equal(sources[2].chapter, "User Selection");
  assert.equal(sources[0].quote, "Quote 1.");
});

test("sources: a selection citation never links, even with a url", () => {
  const [s] = buildSources({ citations: [citation(1, { source_type: "selection", url: "index.html" })] }, ROOT);
  assert.equal(s.href, null);
  assert.equal(s.selection, true);
});

test("sources: malformed citations are skipped, duplicates keep the first", () => {
  const sources = buildSources(
    /** @type {any} */ ({
      citations: [null, "x", { n: "1" }, { n: 0 }, { n: 1.5 }, citation(1), citation(1, { chapter: "Dup" })],
    }),
    ROOT,
  );
  assert.equal(sources.length, 1);
  assert.equal(sources[0].chapter, "5. Brewing");
  assert.deepEqual(buildSources(null, ROOT), []);
  assert.deepEqual(buildSources(/** @type {any} */ ({ citations: "nope" }), ROOT), []);
});

test("sources: hostile strings pass through as data, not markup", () => {
  const evil = "<img src=x onerror=alert(1)>";
  const [s] = buildSources({ citations: [citation(1, { chapter: evil, quote: "", snippet: evil })] }, ROOT);
  assert.equal(s.chapter, evil);
  assert.equal(s.quote, evil, "an empty quote falls back to the snippet");
});

test("see-also and static hits become links through the same gate", () => {
  const seeAlso = buildSeeAlso(
    {
      metadata: {
        see_also: [
          { passage_id: "ch2-sec0-p1", url: "beans.html#ch2-sec0-p1", chapter: "2. Beans", section: "", snippet: "s" },
          { passage_id: "ch2-sec0-p2", url: "javascript:alert(1)", chapter: "x", section: "y", snippet: "z" },
        ],
      },
    },
    ROOT,
  );
  assert.deepEqual(
    seeAlso.map((l) => l.href),
    [`${ROOT}beans.html#ch2-sec0-p1`, null],
  );
  assert.deepEqual(buildSeeAlso({ metadata: {} }, ROOT), []);
  assert.deepEqual(buildSeeAlso(undefined, ROOT), []);
  const hits = buildLinks([{ passage_id: "ch1-sec0-p1", url: "a.html#ch1-sec0-p1", chapter: "A", section: "B", snippet: "C", score: 1 }], ROOT);
  assert.equal(hits[0].href, `${ROOT}a.html#ch1-sec0-p1`);
});

test("confidence bands of a calibrated probability, as contracts.confidence_level", () => {
  assert.equal(confidenceLevel(0.9), "high");
  assert.equal(confidenceLevel(0.89), "medium");
  assert.equal(confidenceLevel(0.7), "medium");
  assert.equal(confidenceLevel(0.69), "low");
  assert.equal(confidenceLevel(0), "low");
  assert.equal(confidenceLevel(NaN), null);
  assert.equal(confidenceLevel("0.9"), null);
});

test("passage hashes follow the anchor grammar", () => {
  assert.ok(isPassageHash("#ch3-sec2-p4"));
  assert.ok(isPassageHash("#ch0-sec0-p1"));
  for (const bad of ["ch3-sec2-p4", "#ch3-sec2", "#ch3-sec2-p4x", "#x-ch3-sec2-p4", "", null]) {
    assert.equal(isPassageHash(bad), false, String(bad));
  }
});

test("clip cuts at a word and marks the cut", () => {
  assert.equal(clip("short", 10), "short");
  assert.equal(clip("  many   spaces  ", 20), "many spaces");
  assert.equal(clip("one two three four five", 12), "one two…");
  assert.equal(clip(null, 5), "");
});

test("samePage ignores the hash and index.html", () => {
  assert.ok(samePage("http://h/a/b.html#ch1-sec0-p1", "http://h/a/b.html"));
  assert.ok(samePage("http://h/a/index.html#x", "http://h/a/"));
  assert.ok(!samePage("http://h/a/b.html", "http://h/a/c.html"));
  assert.ok(!samePage("http://h/a/b.html", "http://other/a/b.html"));
  assert.ok(!samePage("nope", "http://h/"));
});

test("titleParts: chapter and section, the section alone when it repeats", () => {
  assert.deepEqual(titleParts({ chapter: "5. Brewing", section: "5.3. Espresso" }), ["5. Brewing", "5.3. Espresso"]);
  assert.deepEqual(titleParts({ chapter: " 5. Brewing ", section: "5. Brewing" }), ["5. Brewing"]);
  assert.deepEqual(titleParts({ chapter: "", section: "Espresso" }), ["Espresso"]);
  assert.deepEqual(titleParts({ chapter: "", section: "" }), ["Untitled passage"]);
  assert.deepEqual(titleParts(/** @type {any} */ ({ chapter: null, section: 3 })), ["Untitled passage"]);
  assert.equal(sourceTitle({ chapter: "5. Brewing", section: "5.3. Espresso" }), "5. Brewing › 5.3. Espresso");
});

test("bidiPieces: sentences at even places, the spaces between at odd ones", () => {
  const text = "The bloom takes 30 s. Then pour!  Why? Because: gas.\nDone";
  const pieces = bidiPieces(text);
  assert.equal(pieces.join(""), text);
  assert.deepEqual(pieces, ["The bloom takes 30 s.", " ", "Then pour!", "  ", "Why?", " ", "Because:", " ", "gas.", "\n", "Done"]);
  pieces.forEach((p, i) => assert.equal(/^\s+$/.test(p), i % 2 === 1, JSON.stringify(p)));
});

test("bidiPieces keeps an unclosed override inside its own sentence", () => {
  const rlo = "\u202e";
  const pieces = bidiPieces(`Grind fine ${rlo}for espresso. Pour at 93 degrees [1].`);
  assert.deepEqual(pieces, [`Grind fine ${rlo}for espresso.`, " ", "Pour at 93 degrees [1]."]);
  assert.deepEqual(bidiPieces("3.5 bars, v1.2 and e.g.x stay whole"), ["3.5 bars, v1.2 and e.g.x stay whole"]);
  assert.deepEqual(bidiPieces("末尾。次の文"), ["末尾。次の文"]);
  assert.deepEqual(bidiPieces(""), []);
  assert.deepEqual(bidiPieces(/** @type {any} */ (null)), []);
});

test("several sites: a citation into this site resolves against its root, others against the server", () => {
  const place = { root: "https://docs.x.org/en/v1/", apiBase: new URL("https://api.x.org/"), site: "v1" };
  const answer = {
    citations: [
      { n: 1, passage_id: "ch1-sec0-p1", url: "v1/a.html#ch1-sec0-p1", site: "v1", source_type: "book" },
      { n: 2, passage_id: "ch1-sec0-p1", url: "v2/a.html#ch1-sec0-p1", site: "v2", source_type: "book" },
      { n: 3, passage_id: "ch2-sec0-p1", url: "b.html#ch2-sec0-p1", source_type: "book" },
    ],
    metadata: { see_also: [{ passage_id: "ch3-sec0-p1", url: "v2/c.html#ch3-sec0-p1", site: "v2" }] },
  };
  const hrefs = buildSources(/** @type {any} */ (answer), place).map((s) => s.href);
  assert.deepEqual(hrefs, [
    "https://docs.x.org/en/v1/a.html#ch1-sec0-p1",
    "https://api.x.org/v2/a.html#ch1-sec0-p1",
    "https://docs.x.org/en/v1/b.html#ch2-sec0-p1",
  ]);
  assert.equal(buildSeeAlso(/** @type {any} */ (answer), place)[0].href, "https://api.x.org/v2/c.html#ch3-sec0-p1");
  // a plain root (one site) reads the URL as it always did
  assert.equal(buildSources(/** @type {any} */ (answer), "https://x.org/")[1].href, "https://x.org/v2/a.html#ch1-sec0-p1");
  // a site name cannot smuggle a link off the server
  const evil = { citations: [{ n: 1, url: "//evil.org/x", site: "/", source_type: "book" }] };
  assert.equal(buildSources(/** @type {any} */ (evil), place)[0].href, null);
});

// -- the three outcomes -------------------------------------------------------

/** @returns {any} */
function shownPassage(extra = {}) {
  return {
    passage_id: "ch7-sec1-p1",
    url: "brewing/immersion.html#ch7-sec1-p1",
    chapter: "5.2. Immersion",
    section: "5.2.1. French press",
    heading_path: ["Immersion", "French press"],
    snippet: "The French press is a jug with a plunger. Despite its name, the design in use today was patented in 1929",
    quote: "Despite its name, the design in use today was patented in 1929 by the Italian Attilio Calimani.",
    quote_spans: [[42, 137]],
    confidence: 0.47,
    ...extra,
  };
}

test("the outcome: as the answer says, else from grounded (old servers)", () => {
  assert.equal(outcomeOf({ outcome: "answer", grounded: true }), "answer");
  assert.equal(outcomeOf({ outcome: "passages", grounded: false, passages: [shownPassage()] }), "passages");
  assert.equal(outcomeOf({ outcome: "not_found", grounded: false }), "not_found");
  // a server from before `outcome`
  assert.equal(outcomeOf({ grounded: true }), "answer");
  assert.equal(outcomeOf({ grounded: false }), "not_found");
  // never an unchecked answer, never an empty list of passages
  assert.equal(outcomeOf({ outcome: "answer", grounded: false }), "not_found");
  assert.equal(outcomeOf({ outcome: "passages", grounded: false, passages: [] }), "not_found");
  assert.equal(outcomeOf({ outcome: "passages", grounded: false }), "not_found");
  // an outcome this widget does not know: read grounded
  assert.equal(outcomeOf(/** @type {any} */ ({ outcome: "later", grounded: false })), "not_found");
  assert.equal(outcomeOf(/** @type {any} */ ({ outcome: "later", grounded: true })), "answer");
  assert.equal(outcomeOf(null), "not_found");
  assert.equal(outcomeOf(undefined), "not_found");
});

test("shown passages link through the gate and carry their best sentence to mark", () => {
  const answer = {
    outcome: "passages",
    grounded: false,
    passages: [
      shownPassage(),
      shownPassage({ passage_id: "ch7-sec2-p1", url: "javascript:alert(1)", confidence: 0.35 }),
      shownPassage({ passage_id: "ch5-sec3-p1", url: "https://evil.example/x.html#ch5-sec3-p1", quote: "", quote_spans: [] }),
      null,
    ],
  };
  const shown = buildShown(/** @type {any} */ (answer), ROOT);
  assert.deepEqual(
    shown.map((p) => [p.rank, p.passageId, p.href, p.level]),
    [
      [1, "ch7-sec1-p1", `${ROOT}brewing/immersion.html#ch7-sec1-p1`, "low"],
      [2, "ch7-sec2-p1", null, "low"],
      [3, "ch5-sec3-p1", null, "low"],
    ],
  );
  assert.deepEqual(shown[0].marked, { text: answer.passages[0].quote, spans: [[42, 137]] });
  assert.equal(shown[0].confidence, 0.47);
  assert.equal(shown[0].chapter, "5.2. Immersion");
  assert.equal(sourceTitle(shown[0]), "5.2. Immersion › 5.2.1. French press");
  // no sentence of its own: the snippet is shown, nothing is marked
  assert.equal(shown[2].marked, null);
  assert.equal(shown[2].quote, answer.passages[2].snippet);
  assert.deepEqual(buildShown({ outcome: "not_found", grounded: false }, ROOT), []);
  assert.deepEqual(buildShown(/** @type {any} */ ({ passages: "x" }), ROOT), []);
  // malformed spans: the sentence is still marked, found by its words
  const odd = buildShown(/** @type {any} */ ({ passages: [shownPassage({ quote_spans: [[5, 2]], confidence: "x" })] }), ROOT);
  assert.deepEqual(odd[0].marked && odd[0].marked.spans, []);
  assert.equal(odd[0].confidence, null);
  assert.equal(odd[0].level, null);
});

test("the best sentence among the snippet's words", () => {
  // the snippet holds the sentence: split around it
  assert.deepEqual(quoteContext("One two. Three four. Five six.", "Three four."), {
    before: "One two. ",
    quote: "Three four.",
    after: " Five six.",
  });
  // the snippet stops mid-sentence after it: "…" says the text goes on
  assert.deepEqual(quoteContext("Heat the water. Then pour it over the", "Heat the water."), {
    before: "",
    quote: "Heat the water.",
    after: " Then pour it over the…",
  });
  // the snippet ends inside the sentence, or never reaches it: the sentence alone
  const p = shownPassage();
  assert.deepEqual(quoteContext(p.snippet, p.quote), { before: "", quote: p.quote, after: "" });
  // white space is compared collapsed
  assert.deepEqual(quoteContext("A  b.\nC d.", "C\td."), { before: "A b. ", quote: "C d.", after: "" });
  // long context is cut at a word on either side
  const long = `${"word ".repeat(60)}The answer. ${"more ".repeat(60)}`;
  const cut = quoteContext(long, "The answer.", 40);
  assert.ok(cut.before.startsWith("…word") && cut.before.endsWith("word "), cut.before);
  assert.ok(cut.before.length <= 41, cut.before);
  assert.ok(cut.after.startsWith(" more") && cut.after.endsWith("…"), cut.after);
  assert.ok(cut.after.length <= 41, cut.after);
  // no sentence: the snippet
  assert.deepEqual(quoteContext("Only a snippet.", ""), { before: "", quote: "Only a snippet.", after: "" });
  assert.deepEqual(quoteContext(undefined, undefined), { before: "", quote: "", after: "" });
});
