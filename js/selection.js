// @ts-check
/**
 * "Ask about this": text the reader selects in the page's content can be the
 * context of a question (selection mode). A button is offered near the
 * selection's end; choosing it (or pressing the shortcut) puts the
 * selection into the panel.
 *
 * `placeAskButton` is pure. Classic script: provides `selection` (see `lib.js`).
 */

/** @typedef {import("./panel.js").Widget} Widget */

/**
 * @typedef {object} Box
 * @property {number} top
 * @property {number} bottom
 * @property {number} left
 * @property {number} right
 */

/**
 * @typedef {object} AskSelection
 * @property {(text: string | null) => void} set ask about this text (null: the whole book)
 * @property {() => string | null} current the text questions are about
 * @property {() => void} check offer the button for the page's selection, if any
 * @property {(event?: Event) => void} place keep the button at the selection (scroll, resize)
 * @property {() => void} hide withdraw the button
 * @property {() => boolean} takeOffered with the button on offer, ask about
 *   its selection and withdraw it; false when none was on offer
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;

  const MARGIN = 8;
  /** `contracts.MAX_SELECTION`: the longest selection a request may send. */
  const MAX_SELECTION = lib.need("spec").MAX_SELECTION;

  /**
   * @param {number} value
   * @param {number} low
   * @param {number} high wins over `low` when the room is too small
   */
  function clamp(value, low, high) {
    return Math.max(low, Math.min(value, high));
  }

  /**
   * Where the button goes: below the selection's visible end (the last of
   * its boxes that shows on screen), above that line when there is no room
   * below, always inside the viewport. A selection taller than the viewport
   * ends at the viewport's edge, so the button sits there, not thousands of
   * pixels away where the selection really ends.
   * @param {ArrayLike<Box>} rects the selection's client rects, in document order
   * @param {{width: number, height: number}} size the button's
   * @param {{width: number, height: number}} view the viewport's
   * @returns {{top: number, left: number} | null} null: no part of the selection is on screen
   */
  function placeAskButton(rects, size, view) {
    /** @type {Box | null} */
    let end = null;
    for (const r of Array.from(rects)) {
      if (r.right <= r.left && r.bottom <= r.top) continue; // empty
      if (r.bottom <= 0 || r.top >= view.height || r.right <= 0 || r.left >= view.width) continue;
      const visible = {
        top: Math.max(r.top, 0),
        bottom: Math.min(r.bottom, view.height),
        left: Math.max(r.left, 0),
        right: Math.min(r.right, view.width),
      };
      if (!end || visible.bottom >= end.bottom) end = visible;
    }
    if (!end) return null;
    let top = end.bottom + MARGIN;
    if (top + size.height > view.height - MARGIN) {
      top = end.top - size.height - MARGIN; // above the end's line
      if (top < MARGIN) top = end.bottom - size.height - MARGIN; // a tall box: inside its end
    }
    return {
      top: Math.round(clamp(top, MARGIN, view.height - size.height - MARGIN)),
      left: Math.round(clamp(end.right - size.width / 2, MARGIN, view.width - size.width - MARGIN)),
    };
  }

  /**
   * The boxes of a range's text, in page coordinates and document order.
   * `Range.getClientRects()` also gives the border box of every element the
   * range holds whole (a list item spans the column), which is no line end;
   * those count only for a selection without text (an image).
   * @param {Range} range
   * @returns {Box[]}
   */
  function textBoxes(range) {
    const root = range.commonAncestorContainer;
    /** @type {DOMRect[]} */
    const rects = [];
    if (root.nodeType === Node.TEXT_NODE) {
      rects.push(...Array.from(range.getClientRects()));
    } else {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (range.comparePoint(n, 0) > 0) break; // past the end
        const text = /** @type {Text} */ (n);
        if (!range.intersectsNode(text) || !text.data.trim()) continue;
        const part = document.createRange();
        part.selectNodeContents(text);
        if (text === range.startContainer) part.setStart(text, range.startOffset);
        if (text === range.endContainer) part.setEnd(text, range.endOffset);
        rects.push(...Array.from(part.getClientRects()));
      }
      if (!rects.length) rects.push(...Array.from(range.getClientRects()));
    }
    const x = window.scrollX;
    const y = window.scrollY;
    return rects.map((r) => ({ top: r.top + y, bottom: r.bottom + y, left: r.left + x, right: r.right + x }));
  }

  /** The page's main content, where selections count. */
  function contentRoot() {
    return (
      document.querySelector('[role="main"]') ||
      document.querySelector("main") ||
      document.querySelector("article") ||
      document.body
    );
  }

  /**
   * @param {{widget: () => Widget, open: () => void}} env
   * @returns {AskSelection}
   */
  function createSelection(env) {
    const C = lib.need("citations");
    /** @type {string | null} */
    let current = null;
    /** @type {string | null} */
    let pending = null;
    /** @type {Range | null} */
    let pendingRange = null;
    /** @type {Box[] | null} the pending range's text boxes, in page coordinates */
    let boxes = null;

    /** @param {string | null} text */
    function set(text) {
      const w = env.widget();
      current = text ? text.slice(0, MAX_SELECTION) : null;
      w.selectionBox.hidden = current === null;
      w.root.classList.toggle("ragcite-selection-mode", current !== null);
      w.question.placeholder = current
        ? "What would you like to know about the selected text?"
        : "Ask a question about this book…";
      w.selectionText.replaceChildren();
      if (current !== null) {
        const cut = text && text.length > MAX_SELECTION ? ` (first ${MAX_SELECTION} characters)` : "";
        w.selectionText.append(lib.need("dom").isolated(C.clip(current, 160)));
        w.selectionText.title = `${current.length} characters${cut}`;
      }
    }

    function hide() {
      const w = env.widget();
      w.askSelection.hidden = true;
      pendingRange = null;
      boxes = null;
    }

    /** @param {Event} [event] a resize moves the text: measure again */
    function place(event) {
      const w = env.widget();
      if (!pendingRange || w.askSelection.hidden) return;
      if (!boxes || (event && event.type === "resize")) boxes = textBoxes(pendingRange);
      const button = w.askSelection;
      const size = { width: button.offsetWidth || 140, height: button.offsetHeight || 32 };
      const view = { width: window.innerWidth, height: window.innerHeight };
      const x = window.scrollX;
      const y = window.scrollY;
      const seen = boxes.map((b) => ({ top: b.top - y, bottom: b.bottom - y, left: b.left - x, right: b.right - x }));
      const at = placeAskButton(seen, size, view);
      // scrolled out of sight: back when the selection is
      button.style.visibility = at ? "" : "hidden";
      if (!at) return;
      button.style.top = `${at.top}px`;
      button.style.left = `${at.left}px`;
    }

    function check() {
      const w = env.widget();
      const selection = window.getSelection();
      if (!selection || selection.isCollapsed || selection.rangeCount === 0) {
        hide();
        return;
      }
      const range = selection.getRangeAt(0);
      const node = range.commonAncestorContainer;
      const text = selection.toString().replace(/\s+/g, " ").trim();
      if (text.length < 2 || w.root.contains(node) || !contentRoot().contains(node)) {
        hide();
        return;
      }
      pending = text;
      pendingRange = range.cloneRange();
      boxes = null;
      w.askSelection.hidden = false;
      place();
    }

    function takeOffered() {
      const w = env.widget();
      if (w.askSelection.hidden || !pending) return false;
      set(pending);
      hide();
      return true;
    }

    return {
      set,
      current: () => current,
      check,
      place,
      hide,
      takeOffered,
    };
  }

  const api = { MAX_SELECTION, createSelection, placeAskButton };
  lib.provide("selection", api);
  if (typeof module === "object") module.exports = api;
})();
