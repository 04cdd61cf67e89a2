// @ts-check
// Written by tools/write_js_spec.py from sphinx_ragcite: do not edit.
// Change the Python side (answer/spec.py, extension/assets.py), then run
// `python tools/write_js_spec.py`; tests/test_js_spec.py fails when stale.
(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const api = /** @type {const} */ ({
    "SCRIPTS": {
      "page": [
        "lib",
        "spec",
        "citations",
        "sse",
        "settings",
        "dom",
        "client",
        "static",
        "quotes",
        "deeplinks",
        "selection",
        "panel",
        "widget"
      ],
      "search": [
        "stemmer",
        "tokenize",
        "search"
      ],
      "worker": [
        "stemmer",
        "tokenize",
        "search",
        "sentences",
        "fusion",
        "retrieve",
        "units",
        "evidence",
        "ranker",
        "verify",
        "answer",
        "selection_answer",
        "engine",
        "wordpiece",
        "encode",
        "store"
      ]
    }
  });

  lib.provide("spec", api);
  if (typeof module === "object") module.exports = api;
})();
