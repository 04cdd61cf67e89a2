// @ts-check
/**
 * Previews of a citation: hovering or focusing an answer's `[n]` marker
 * shows its source's title and quote beside it; on a touch screen the
 * first tap previews and the second follows the link. A marker without a
 * link (the reader's own selection) scrolls to its source instead. A
 * chosen citation or result link goes to the panel's `follow` hook with
 * the quote to mark in the passage.
 *
 * Classic script: provides `previews` (see `lib.js`); it needs a document.
 */

/** @typedef {import("./citations.js").SourceModel} SourceModel */
/** @typedef {import("./citations.js").ShownModel} ShownModel */
/** @typedef {import("./panel.js").Widget} Widget */

/**
 * What the previews read from the panel.
 * @typedef {object} PreviewParts
 * @property {() => Widget | null} widget the DOM, once built
 * @property {(n: number) => SourceModel | undefined} source the shown answer's source `[n]`
 * @property {(rank: number) => ShownModel | undefined} shown a shown passage, by rank
 * @property {import("./panel.js").PanelHooks["follow"]} follow
 */

/**
 * @typedef {object} Previews
 * @property {(w: Widget) => void} listen listen to the output and the preview
 * @property {() => void} hide hide the preview now
 * @property {() => boolean} shown whether a preview is shown
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const C = lib.need("citations");
  const { capital, el, isolated, reducedMotion, title } = lib.need("dom");

  /**
   * @param {PreviewParts} parts
   * @returns {Previews}
   */
  function createPreviews(parts) {
    /** @type {HTMLElement | null} */
    let previewFor = null;
    /** @type {number | undefined} */
    let previewTimer;
    /** When the last touch began: touches preview first, then follow. */
    let lastTouch = 0;
    /** @type {HTMLElement | null} the marker a tap has previewed */
    let tapped = null;
    const touching = () => Date.now() - lastTouch < 1500;

    /**
     * @param {EventTarget | null} target
     * @returns {HTMLElement | null}
     */
    function markerOf(target) {
      const widget = parts.widget();
      const node = target instanceof Element ? target : null;
      const marker = node && node.closest("[data-ragcite-n]");
      return marker && widget && widget.output.contains(marker) ? /** @type {HTMLElement} */ (marker) : null;
    }

    /** @param {Event} event */
    function onMarkerEnter(event) {
      const marker = markerOf(event.target);
      if (marker && !touching()) show(marker);
    }

    /** @param {Event} event */
    function onMarkerLeave(event) {
      const marker = markerOf(event.target);
      const to = /** @type {MouseEvent | FocusEvent} */ (event).relatedTarget;
      if (marker && !(to instanceof Node && marker.contains(to))) hideSoon();
    }

    /** @param {HTMLElement} marker */
    function show(marker) {
      const w = parts.widget();
      const source = parts.source(Number(marker.getAttribute("data-ragcite-n")));
      if (!w || !source) return;
      window.clearTimeout(previewTimer);
      if (previewFor && previewFor !== marker) previewFor.removeAttribute("aria-describedby");
      const p = w.preview;
      p.replaceChildren(
        el("div", { class: "ragcite-preview-title" }, `[${source.n}] `, title(source)),
        el("blockquote", { class: "ragcite-preview-quote" }, isolated(C.clip(source.quote, 320))),
        el(
          "div",
          { class: "ragcite-preview-meta" },
          source.level ? `${capital(source.level)} confidence` : "",
          source.href && touching() ? " · Tap again to open the passage" : "",
        ),
      );
      p.hidden = false;
      previewFor = marker;
      marker.setAttribute("aria-describedby", "ragcite-preview");
      place(w.preview, marker);
    }

    /**
     * Above the marker, or below it when there is no room, inside the window.
     * @param {HTMLElement} p the preview
     * @param {HTMLElement} marker
     */
    function place(p, marker) {
      const rect = marker.getBoundingClientRect();
      const width = Math.min(340, window.innerWidth - 16);
      p.style.width = `${width}px`;
      const height = p.offsetHeight;
      let top = rect.top - height - 8;
      if (top < 8) top = Math.min(rect.bottom + 8, window.innerHeight - height - 8);
      const left = Math.min(Math.max(8, rect.left + rect.width / 2 - width / 2), window.innerWidth - width - 8);
      p.style.top = `${Math.round(Math.max(8, top))}px`;
      p.style.left = `${Math.round(left)}px`;
    }

    function hideSoon() {
      window.clearTimeout(previewTimer);
      previewTimer = window.setTimeout(hide, 150);
    }

    function hide() {
      window.clearTimeout(previewTimer);
      const widget = parts.widget();
      if (!widget) return;
      widget.preview.hidden = true;
      if (previewFor) previewFor.removeAttribute("aria-describedby");
      previewFor = null;
      tapped = null;
    }

    /**
     * Scroll the source list entry of a marker into view (markers without link).
     * @param {HTMLElement} marker
     */
    function showSource(marker) {
      const widget = parts.widget();
      const n = marker.getAttribute("data-ragcite-n");
      const item = widget && widget.output.querySelector(`li[data-ragcite-source="${Number(n)}"]`);
      if (!item) return;
      item.scrollIntoView({ block: "nearest", behavior: reducedMotion() ? "auto" : "smooth" });
      item.classList.add("ragcite-source-flash");
      window.setTimeout(() => item.classList.remove("ragcite-source-flash"), 1500);
      show(marker);
    }

    /** @param {MouseEvent} event */
    function onOutputClick(event) {
      const marker = markerOf(event.target);
      if (marker) {
        if (touching() && tapped !== marker) {
          // first tap previews, the second follows
          event.preventDefault();
          show(marker);
          tapped = marker;
          return;
        }
        if (!marker.hasAttribute("href")) {
          event.preventDefault();
          showSource(marker);
          return;
        }
        hide();
        const a = /** @type {HTMLAnchorElement} */ (marker);
        parts.follow(event, a, quoteOf(a));
        return;
      }
      const target = event.target instanceof Element ? event.target : null;
      const anchor = /** @type {HTMLAnchorElement | null} */ (target && target.closest("a[href][data-ragcite-link]"));
      if (anchor) parts.follow(event, anchor, quoteOf(anchor));
    }

    /**
     * The quote of the citation a link belongs to (a marker, or a source's
     * title), or the best sentence of a shown passage, when the link goes to
     * that passage; null for see-also and search-result links.
     * @param {HTMLAnchorElement} anchor
     */
    function quoteOf(anchor) {
      const rank = anchor.getAttribute("data-ragcite-shown");
      if (rank) {
        const p = parts.shown(Number(rank));
        return p && p.marked && p.href === anchor.href ? p.marked : null;
      }
      const item = anchor.closest("li[data-ragcite-source]");
      const n = anchor.getAttribute("data-ragcite-n") || (item && item.getAttribute("data-ragcite-source"));
      const s = n ? parts.source(Number(n)) : undefined;
      return s && s.marked && s.href === anchor.href ? s.marked : null;
    }

    /** @param {Widget} w */
    function listen(w) {
      const { output, preview } = w;
      output.addEventListener("click", onOutputClick);
      output.addEventListener("pointerdown", (event) => {
        if (event.pointerType === "touch") lastTouch = Date.now();
      });
      output.addEventListener("touchstart", () => (lastTouch = Date.now()), { passive: true });
      output.addEventListener("mouseover", onMarkerEnter);
      output.addEventListener("mouseout", onMarkerLeave);
      output.addEventListener("focusin", onMarkerEnter);
      output.addEventListener("focusout", onMarkerLeave);
      output.addEventListener("keydown", (event) => {
        const marker = markerOf(event.target);
        if (marker && !marker.hasAttribute("href") && (event.key === "Enter" || event.key === " ")) {
          event.preventDefault();
          showSource(marker);
        }
      });
      preview.addEventListener("mouseenter", () => window.clearTimeout(previewTimer));
      preview.addEventListener("mouseleave", () => hideSoon());
    }

    return {
      listen,
      hide,
      shown: () => {
        const widget = parts.widget();
        return Boolean(widget && !widget.preview.hidden);
      },
    };
  }

  const api = { createPreviews };
  lib.provide("previews", api);
  if (typeof module === "object") module.exports = api;
})();
