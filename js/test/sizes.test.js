// @ts-check
"use strict";

/**
 * No JS file over 700 lines, no function over 300, none nested in another
 * over 150 (the Snowball port exempt): see `sizes.js` for how they are
 * counted, and why a file's `(function () { ... })();` wrapper is not.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");

const { FILE_LINES, checkedFiles, measureSource, offenders } = require("./sizes.js");

const JS = path.join(__dirname, "..");
const REPO = path.join(JS, "..");

/**
 * The lines of a function `name` of `n` lines in all, with `inner` first
 * in its body (counted in `n`).
 * @param {string} name
 * @param {number} n
 * @param {string[]} [inner]
 * @returns {string[]}
 */
function fn(name, n, inner = []) {
  const body = Array.from({ length: n - 2 - inner.length }, (_, i) => `  x += ${i}; // "}" and /}/ fool no parser`);
  return [`function ${name}() {`, ...inner, ...body, "}"];
}

/**
 * A classic script: its lines inside the file's wrapper (which takes two
 * lines before them).
 * @param {string[]} lines
 */
const wrapped = (lines) => ["(function () {", '  "use strict";', ...lines, "})();", ""].join("\n");

test("every js/*.js keeps the size limits", () => {
  const files = checkedFiles(JS);
  assert.ok(files.some((f) => f.endsWith("panel.js")), "panel.js is checked");
  assert.ok(!files.some((f) => f.endsWith("stemmer.js")), "the Snowball port is not");
  const found = files.flatMap((file) => offenders(fs.readFileSync(file, "utf8"), path.relative(REPO, file)));
  assert.deepEqual(found, [], `over the limits:\n  ${found.join("\n  ")}`);
});

test("the file's wrapper is module scope, not a function", () => {
  const scope = wrapped(Array.from({ length: 400 }, (_, i) => `  const a${i} = ${i};`));
  assert.deepEqual(measureSource(scope, "scope.js"), []);
  assert.deepEqual(offenders(scope, "scope.js"), []);
});

test("a top-level function may have 300 lines, not 301, with or without the wrapper", () => {
  assert.deepEqual(offenders(wrapped(fn("big", 300)), "a.js"), []);
  assert.deepEqual(offenders(wrapped(fn("big", 301)), "a.js"), ["a.js:3 big (301 lines, limit 300)"]);
  assert.deepEqual(offenders(fn("big", 301).join("\n"), "b.js"), ["b.js:1 big (301 lines, limit 300)"]);
  // an arrow function is named by what it is assigned to
  const factory = ["const make = () => {", ...fn("x", 301).slice(1)].join("\n");
  assert.deepEqual(offenders(factory, "c.js"), ["c.js:1 make (301 lines, limit 300)"]);
});

test("a nested function may have 150 lines, not 151; an inner wrapper counts", () => {
  const ok = fn("outer", 200, fn("inner", 150));
  assert.deepEqual(offenders(wrapped(ok), "a.js"), []);
  const over = fn("outer", 200, fn("inner", 151));
  assert.deepEqual(offenders(wrapped(over), "a.js"), ["a.js:4 inner (151 lines, limit 150, nested)"]);
  // only the file's own wrapper is exempt: one inside a function is a function
  const iife = ["(function () {", ...fn("y", 151).slice(1, -1), "})();"];
  assert.deepEqual(offenders(wrapped(fn("outer", 200, iife)), "b.js"), [
    "b.js:4 (called at once) (151 lines, limit 150, nested)",
  ]);
  // a method of a class, too
  const cls = ["class A {", "  m() {", ...fn("", 151).slice(1), "}"];
  assert.deepEqual(offenders(cls.join("\n"), "c.js"), ["c.js:2 m (151 lines, limit 150, nested)"]);
});

test("a file may have 700 lines, not 701", () => {
  const lines = (/** @type {number} */ n) => Array.from({ length: n }, (_, i) => `const a${i} = ${i};`).join("\n") + "\n";
  assert.deepEqual(offenders(lines(FILE_LINES), "a.js"), []);
  assert.deepEqual(offenders(lines(FILE_LINES + 1), "a.js"), ["a.js (701 lines, limit 700)"]);
});
