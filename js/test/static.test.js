// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { parseStaticFile } = require("../static.js");
const { STATIC_PREFIX } = require("../spec.js");
const { WidgetError } = require("../client.js");

test("the static index file is one JSON object behind the prefix", () => {
  assert.equal(STATIC_PREFIX, "globalThis.ragcite_static_index=");
  assert.deepEqual(parseStaticFile(`${STATIC_PREFIX}{"format_version": 1, "docs": []};\n`), {
    format_version: 1,
    docs: [],
  });
});

test("a damaged or foreign file is a clear error, never run", () => {
  for (const [text, message] of [
    ["alert(1);", /damaged/],
    [`${STATIC_PREFIX}{"a": 1}`, /damaged/],
    [`${STATIC_PREFIX}{"a": ;`, /not valid JSON/],
    ["", /damaged/],
  ]) {
    assert.throws(
      () => parseStaticFile(/** @type {string} */ (text)),
      (/** @type {any} */ e) => e instanceof WidgetError && e.kind === "static" && /** @type {RegExp} */ (message).test(e.message),
    );
  }
});
