// @ts-check
"use strict";

/**
 * The one wiring of the JS (`lib.js`): every list of `SCRIPTS` in `spec.js`
 * loads as classic scripts do in a page or a worker (a fresh context with no
 * `module` and no `require`), in its order, and each script provides its
 * name; a script loaded before a neighbour it needs says which.
 */

const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const { SCRIPTS } = require("../spec.js");
const lib = require("../lib.js");

const JS = path.join(__dirname, "..");

/**
 * A page's or a worker's global scope with `names` run in it, in order.
 * @param {readonly string[]} names module names ("sentences")
 * @param {Record<string, unknown>} [globals]
 */
function classic(names, globals = {}) {
  /** @type {any} */
  const context = vm.createContext({ ...globals });
  for (const name of names) {
    const file = path.join(JS, `${name}.js`);
    vm.runInContext(fs.readFileSync(file, "utf8"), context, { filename: file });
  }
  return context;
}

test("the worker's scripts load in spec order and each provides its name", () => {
  const context = classic(["lib", "spec", ...SCRIPTS.worker]);
  const registry = context.ragcite_lib;
  for (const name of SCRIPTS.worker) assert.ok(registry.has(name), name);
  assert.equal(typeof registry.need("engine").createEngine, "function");
  assert.equal(registry.need("units").questionKind("Why descale?"), "why");
  const searcher = registry.need("search");
  assert.equal(typeof searcher.createStaticSearch, "function");
});

test("static search's scripts load in spec order and search", () => {
  // the page has loaded files.js (the widget's), which store.js reads
  const context = classic(["lib", "spec", "files", ...SCRIPTS.search]);
  const { tokenize } = context.ragcite_lib.need("tokenize");
  const spec = { lowercase: true, normalize: "NFKC", pattern: "[\\p{L}\\p{N}]+", stemmer: "snowball-english", stopwords: ["the"] };
  // (spread: arrays made in the vm context have that context's prototype)
  assert.deepEqual([...tokenize("The grinding beans", spec)], ["grind", "bean"]);
});

test("the page's scripts, but the entry, load in spec order and each provides its name", () => {
  const page = SCRIPTS.page.filter((name) => name !== "widget");
  const context = classic(page);
  for (const name of page) {
    if (name !== "lib") assert.ok(context.ragcite_lib.has(name), name);
  }
});

test("a script loaded before what it needs names the missing file", () => {
  assert.throws(() => classic(["lib", "spec", "engine"]), /ragcite: sentences\.js is not loaded/);
  const context = classic(["lib"]);
  assert.equal(context.ragcite_lib.has("spec"), false);
  assert.throws(() => context.ragcite_lib.need("spec"), /spec\.js is not loaded/);
});

test("lib.js loaded twice keeps the first registry", () => {
  const context = classic(["lib", "spec", "lib"]);
  assert.equal(context.ragcite_lib.has("spec"), true);
});

test("under Node, need is require, and a test may make a registry of its own", () => {
  assert.equal(lib.need("sentences"), require("../sentences.js"));
  const own = lib.createRegistry();
  own.provide("spec", require("../spec.js"));
  assert.equal(own.need("spec").SCRIPTS.worker.at(-1), "encode");
});
