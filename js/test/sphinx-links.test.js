// @ts-check
"use strict";

/**
 * The widget's deep links as Sphinx 9 keeps them: Sphinx's
 * `sphinx_highlight.js` rewrites the address (and drops a `#:~:text=` text
 * fragment) only when the URL has `?highlight=`. Citation and see-also links
 * are the index's `page.html#passage-id`, resolved against the site root:
 * no query, no text fragment (the quote travels in sessionStorage).
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { buildSeeAlso, buildSources, isPassageHash } = require("../citations.js");
const { idOf } = require("../deeplinks.js");

const GOLDEN = JSON.parse(
  fs.readFileSync(path.join(__dirname, "..", "..", "tests", "golden", "link_keys.json"), "utf-8"),
);
const ROOT = GOLDEN.root;
/** @type {string[]} */
const URLS = GOLDEN.cases.map((/** @type {any} */ c) => c.url);

/** @param {string | null} href */
function assertDeepLink(href) {
  assert.ok(href, "a link");
  const url = new URL(/** @type {string} */ (href));
  assert.equal(url.search, "", href);
  assert.ok(!url.searchParams.has("highlight"), href);
  assert.ok(!url.hash.includes(":~:"), href);
  assert.ok(isPassageHash(url.hash), href);
  assert.equal(idOf(url.href), url.hash.slice(1), href);
}

test("citation links carry the passage anchor and no ?highlight=", () => {
  const citations = URLS.map((url, i) => ({
    n: i + 1,
    passage_id: url.split("#")[1],
    url,
    chapter: "C",
    section: "S",
    snippet: "",
  }));
  const sources = buildSources(/** @type {any} */ ({ citations }), ROOT);
  assert.equal(sources.length, URLS.length);
  for (const s of sources) assertDeepLink(s.href);
});

test("see-also links and links into another site of the server too", () => {
  const seeAlso = URLS.map((url) => ({ passage_id: url.split("#")[1], url: `v2/${url}`, site: "v2" }));
  const place = { root: `${ROOT}v1/`, apiBase: new URL(ROOT), site: "v1" };
  const links = buildSeeAlso(/** @type {any} */ ({ metadata: { see_also: seeAlso } }), place);
  assert.equal(links.length, URLS.length);
  for (const link of links) {
    assertDeepLink(link.href);
    assert.ok(String(link.href).startsWith(`${ROOT}v2/`), String(link.href));
  }
});

test("a text fragment never reaches the passage hash the widget reads", () => {
  // browsers strip the fragment directive from location.hash; a hash that
  // still has one is not a passage anchor the widget acts on
  assert.ok(isPassageHash("#ch6-sec4-p2"));
  assert.ok(!isPassageHash("#ch6-sec4-p2:~:text=twice"));
});
