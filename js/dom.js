// @ts-check
/**
 * DOM helpers of the reader widget. There are no HTML strings anywhere:
 * elements are created one by one and every string becomes a text node.
 *
 * Book and model text goes through `isolated`: each sentence in its own
 * `<bdi>` (`unicode-bidi: isolate`, `dir="auto"`), so a stray bidi override
 * in a passage or an answer cannot reorder the widget's markers or other
 * sentences.
 *
 * Classic script: provides `dom` (see `lib.js`); it needs a document.
 */

/** @typedef {Record<string, string | number | boolean | null | undefined>} Attrs */
/** @typedef {Node | string | null | undefined | false} Child */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const C = lib.need("citations");

  /**
   * An element with attributes and children; strings become text nodes.
   * `class` sets the class name, `text` the text content; null, undefined
   * and false leave an attribute out, true sets it empty.
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Attrs} [attrs]
   * @param {...Child} children
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = String(v);
      else if (k === "text") node.textContent = String(v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c !== null && c !== undefined && c !== false) node.append(c);
    }
    return node;
  }

  /**
   * A link to a URL that passed `citations.resolveUrl`, or a span when there
   * is none.
   * @param {string | null} href
   * @param {Attrs} attrs
   * @param {...Child} children
   */
  function link(href, attrs, ...children) {
    if (href === null) return el("span", attrs, ...children);
    return el("a", { ...attrs, href }, ...children);
  }

  /**
   * Book or model text, each sentence isolated in a `<bdi>`; the spaces
   * between sentences stay plain text.
   * @param {unknown} text
   * @returns {DocumentFragment}
   */
  function isolated(text) {
    const out = document.createDocumentFragment();
    C.bidiPieces(text).forEach((piece, i) => {
      if (!piece) return;
      out.append(i % 2 ? document.createTextNode(piece) : el("bdi", { text: piece }));
    });
    return out;
  }

  /**
   * "Chapter › Section", each part isolated.
   * @param {{chapter: string, section: string}} s
   * @returns {DocumentFragment}
   */
  function title(s) {
    const out = document.createDocumentFragment();
    C.titleParts(s).forEach((part, i) => {
      if (i) out.append(" › ");
      out.append(el("bdi", { text: part }));
    });
    return out;
  }

  /** The chat-bubble icon, built node by node. */
  function icon() {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "18");
    svg.setAttribute("height", "18");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    const path = document.createElementNS(ns, "path");
    path.setAttribute("fill", "currentColor");
    path.setAttribute(
      "d",
      "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm3 5v2h10V9H7zm0 4v2h7v-2H7z",
    );
    svg.append(path);
    return svg;
  }

  /**
   * Load a classic script once it is needed (static search, the moved map).
   * @param {string} src
   * @param {(src: string) => Error} failure the error when it does not load
   * @returns {Promise<void>}
   */
  function loadScript(src, failure) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.async = false;
      s.onload = () => resolve();
      s.onerror = () => reject(failure(src));
      document.head.append(s);
    });
  }

  /** Whether the reader asked for less motion. */
  function reducedMotion() {
    return typeof matchMedia === "function" && matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  /** @param {string} s */
  function capital(s) {
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  const api = { capital, el, icon, isolated, link, loadScript, reducedMotion, title };
  lib.provide("dom", api);
  if (typeof module === "object") module.exports = api;
})();
