// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { createSseParser } = require("../sse.js");

const STREAM =
  'event: retrieval\ndata: {"retrieved": ["ch1-sec0-p1"]}\n\n' +
  'event: token\ndata: {"text": "Bloom "}\n\n' +
  'event: final\ndata: {"answer": "Bloom [1]."}\n\n';

test("the server's stream, in one piece", () => {
  const p = createSseParser();
  assert.deepEqual(p.push(STREAM), [
    { event: "retrieval", data: '{"retrieved": ["ch1-sec0-p1"]}' },
    { event: "token", data: '{"text": "Bloom "}' },
    { event: "final", data: '{"answer": "Bloom [1]."}' },
  ]);
  assert.deepEqual(p.end(), []);
});

test("split at every possible point, the same events come out", () => {
  const whole = createSseParser().push(STREAM);
  for (let i = 0; i <= STREAM.length; i++) {
    const p = createSseParser();
    const got = [...p.push(STREAM.slice(0, i)), ...p.push(STREAM.slice(i)), ...p.end()];
    assert.deepEqual(got, whole, `split at ${i}`);
  }
});

test("CRLF and CR line ends, split between CR and LF", () => {
  const p = createSseParser();
  const events = [
    ...p.push("event: a\r"),
    ...p.push("\ndata: 1\r\n\r"),
    ...p.push("\nevent: b\rdata: 2\r\r"),
    ...p.end(),
  ];
  assert.deepEqual(events, [
    { event: "a", data: "1" },
    { event: "b", data: "2" },
  ]);
});

test("multi-line data, comments, no space after the colon, default name", () => {
  const p = createSseParser();
  const events = p.push(": keep-alive\n\ndata:line one\ndata: line two\n\nevent: x\n\n");
  assert.deepEqual(events, [{ event: "message", data: "line one\nline two" }]);
});

test("a last event without its blank line is flushed at the end", () => {
  const p = createSseParser();
  assert.deepEqual(p.push("event: final\ndata: {}"), []);
  assert.deepEqual(p.end(), [{ event: "final", data: "{}" }]);
});
