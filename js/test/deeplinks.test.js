// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { canonicalKey, idOf, linkKey, movedTarget, squash } = require("../deeplinks.js");

/** The cases Python's `link_key` is tested on too (tests/test_link_keys.py). */
const GOLDEN = JSON.parse(
  fs.readFileSync(path.join(__dirname, "..", "..", "tests", "golden", "link_keys.json"), "utf-8"),
);
const ROOT = GOLDEN.root;

/**
 * The key the widget computes on the page at `address`.
 * @param {string} address relative to the root, or absolute
 */
function keyAt(address) {
  const href = new URL(address, ROOT).href;
  return linkKey(href, idOf(href), ROOT);
}

test("the golden cases cover what the moved map must agree on", () => {
  const urls = GOLDEN.cases.map((/** @type {any} */ c) => c.url);
  assert.ok(urls.some((/** @type {string} */ u) => u.startsWith("index.html#")), "root page");
  assert.ok(urls.some((/** @type {string} */ u) => u.includes("/index.html#")), "dirhtml index");
  assert.ok(urls.some((/** @type {string} */ u) => u.includes("%")), "percent-encoding");
  assert.ok(urls.some((/** @type {string} */ u) => /[^\x00-\x7f]/.test(u)), "dirhtml's raw names");
  const opened = GOLDEN.cases.flatMap((/** @type {any} */ c) => c.opened);
  assert.ok(opened.some((/** @type {string} */ u) => u.includes("?")), "query strings");
  assert.ok(GOLDEN.outside.length > 0);
});

for (const c of GOLDEN.cases) {
  test(`linkKey agrees with link_key: ${c.why}`, () => {
    const want = canonicalKey(c.key);
    for (const address of [c.url, ...c.opened]) {
      const got = keyAt(address);
      assert.ok(got !== null, address);
      assert.equal(canonicalKey(got), want, address);
    }
  });
}

test("html's percent-encoded keys are what the browser has, as they are", () => {
  for (const c of GOLDEN.cases.filter((/** @type {any} */ c) => /%[0-9A-F]{2}/.test(c.key))) {
    assert.equal(keyAt(c.url), c.key);
  }
});

test("canonicalKey decodes the page only, and keeps what does not decode", () => {
  assert.equal(canonicalKey("caf%C3%A9/#ch1-sec1-p1"), "café/#ch1-sec1-p1");
  assert.equal(canonicalKey("café/#ch1-sec1-p1"), "café/#ch1-sec1-p1");
  assert.equal(canonicalKey("50%-rule/#ch8-sec0-p1"), "50%-rule/#ch8-sec0-p1");
  assert.equal(canonicalKey("a%20b.html#x%20y"), "a b.html#x%20y");
  assert.equal(canonicalKey("#ch0-sec0-p1"), "#ch0-sec0-p1");
});

test("pages outside the site root have no key", () => {
  for (const href of GOLDEN.outside) assert.equal(linkKey(href, idOf(href), ROOT), null, href);
  assert.equal(linkKey("not a url", "ch1-sec1-p1", ROOT), null);
  assert.equal(linkKey("https://docs.example.org/my%20book/a.html", "x", "not a root"), null);
});

test("the key is the same on file:// pages", () => {
  const root = "file:///home/reader/book/_build/html/";
  assert.equal(linkKey(`${root}part/index.html#ch2-sec0-p1`, "ch2-sec0-p1", root), "part/#ch2-sec0-p1");
  assert.equal(linkKey(`${root}index.html#ch0-sec0-p1`, "ch0-sec0-p1", root), "#ch0-sec0-p1");
});

test("idOf decodes the anchor and survives junk", () => {
  assert.equal(idOf("https://x.org/a.html#ch1-sec2-p3"), "ch1-sec2-p3");
  assert.equal(idOf("https://x.org/a.html#caf%C3%A9"), "café");
  assert.equal(idOf("https://x.org/a.html#%E0%A4%A"), ""); // a broken escape
  assert.equal(idOf("https://x.org/a.html"), "");
  assert.equal(idOf("no url"), "");
});

test("movedTarget follows a map entry to a passage of the site only", () => {
  const root = "https://docs.example.org/book/";
  assert.deepEqual(movedTarget("kettles.html#ch1-sec1-p2", root), {
    url: "https://docs.example.org/book/kettles.html#ch1-sec1-p2",
    start: "",
  });
  assert.deepEqual(movedTarget(["grinders.html#ch2-sec1-p3", "Scale builds up"], root), {
    url: "https://docs.example.org/book/grinders.html#ch2-sec1-p3",
    start: "Scale builds up",
  });
  assert.deepEqual(movedTarget(["a.html#ch1-sec1-p1", 7], root), {
    url: "https://docs.example.org/book/a.html#ch1-sec1-p1",
    start: "",
  });
  for (const bad of [
    null,
    7,
    [],
    ["javascript:alert(1)//#ch1-sec1-p1"],
    "https://evil.example/a.html#ch1-sec1-p1",
    "kettles.html#top", // not a passage anchor
    "kettles.html",
  ]) {
    assert.equal(movedTarget(bad, root), null, JSON.stringify(bad));
  }
});

test("squash compares opening words loosely", () => {
  assert.equal(squash("  Scale\n builds   UP "), "scale builds up");
});
