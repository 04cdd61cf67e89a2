// @ts-check
/**
 * How every script of the widget and the engine finds its neighbours: one
 * registry, keyed by file name. `need("sentences")` returns what
 * `sentences.js` provides; `need("snowball/german")` what
 * `snowball/german.js` does.
 *
 * In the page and in the worker the scripts are classic scripts, because
 * Chromium refuses module scripts on `file://` pages, where static search
 * must still work. This file loads first; the rest load in the order
 * `SCRIPTS` of `spec.js` gives, which the build writes from
 * `sphinx_ragcite/extension/assets.py`. Under Node (the tests), `need` is
 * `require`. Each script starts and ends the same way:
 *
 *     const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
 *     const S = lib.need("sentences");
 *     ...
 *     lib.provide("engine", api);
 *     if (typeof module === "object") module.exports = api;
 *
 * `types.d.ts` (`RagciteModules`) maps each name to its file's exports, so
 * `tsc --strict` sees real types across files.
 */

/** @typedef {import("./types").RagciteLib} RagciteLib */

(function () {
  "use strict";

  /**
   * A registry of its own: the page's and the worker's, or a test's.
   * @returns {RagciteLib}
   */
  function createRegistry() {
    /** @type {Record<string, unknown>} */
    const modules = {};
    return {
      need(name) {
        if (!(name in modules)) {
          throw new Error(`ragcite: ${name}.js is not loaded; load it before the scripts that need it`);
        }
        return /** @type {any} */ (modules[name]);
      },
      has: (name) => name in modules,
      provide(name, api) {
        modules[name] = api;
      },
    };
  }

  if (typeof module === "object" && module.exports) {
    /** @type {RagciteLib & {createRegistry: typeof createRegistry}} */
    const inNode = {
      need: (name) => require(`./${name}.js`),
      has: () => true,
      provide() {
        // Node's module cache is the registry
      },
      createRegistry,
    };
    module.exports = inNode;
  } else if (!globalThis.ragcite_lib) {
    globalThis.ragcite_lib = createRegistry();
  }
})();
