// @ts-check
/**
 * An incremental parser of server-sent events, for `POST /api/ask/stream`
 * read through `fetch()` (EventSource cannot POST).
 *
 * Feed it decoded text as it arrives; it returns the events completed so far.
 * Follows the HTML standard's rules for the fields used here: `event`,
 * multi-line `data`, comments (`:`), CR/LF/CRLF line ends, an optional space
 * after the colon.
 *
 * Classic script: provides `sse` (see `lib.js`).
 */

/**
 * @typedef {object} SseEvent
 * @property {string} event the event name ("message" when none was given)
 * @property {string} data the data lines joined by "\n"
 */

/**
 * @typedef {object} SseParser
 * @property {(chunk: string) => SseEvent[]} push feed text, get complete events
 * @property {() => SseEvent[]} end the stream closed: flush a last event
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  /** @returns {SseParser} */
  function createSseParser() {
    let buffer = "";
    let name = "";
    /** @type {string[]} */
    let data = [];
    let hasData = false;

    /** @param {SseEvent[]} out */
    function dispatch(out) {
      if (hasData) out.push({ event: name || "message", data: data.join("\n") });
      name = "";
      data = [];
      hasData = false;
    }

    /**
     * @param {string} line
     * @param {SseEvent[]} out
     */
    function line(line, out) {
      if (line === "") {
        dispatch(out);
        return;
      }
      if (line.startsWith(":")) return;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") {
        data.push(value);
        hasData = true;
      }
    }

    /**
     * @param {string} chunk
     * @returns {SseEvent[]}
     */
    function push(chunk) {
      buffer += chunk;
      /** @type {SseEvent[]} */
      const out = [];
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer);
        if (!match) break;
        // A lone CR at the very end may be the first half of CRLF: wait.
        if (match[0] === "\r" && match.index === buffer.length - 1) break;
        line(buffer.slice(0, match.index), out);
        buffer = buffer.slice(match.index + match[0].length);
      }
      return out;
    }

    /** @returns {SseEvent[]} */
    function end() {
      /** @type {SseEvent[]} */
      const out = [];
      if (buffer !== "") {
        line(buffer.replace(/\r$/, ""), out);
        buffer = "";
      }
      dispatch(out);
      return out;
    }

    return { push, end };
  }

  const api = { createSseParser };
  lib.provide("sse", api);
  if (typeof module === "object") module.exports = api;
})();
