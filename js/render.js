// @ts-check
/**
 * The panel's render functions: each takes data (the settings, an answer's
 * models, the page's own version) and returns elements. None keeps state or
 * touches the page; the panel (`panel.js`) keeps the state, listens to the
 * elements and puts them in place. Previews live in `previews.js`, the
 * "Helpful?" form in `feedback.js`.
 *
 * Every model, document and user string enters through `textContent` (book
 * and model text sentence by sentence in `<bdi>`); the only `href`s are
 * index URLs that passed `citations.resolveUrl`.
 *
 * Classic script: provides `render` (see `lib.js`); it needs a document.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").StaticResult} StaticResult */
/** @typedef {import("./citations.js").SourceModel} SourceModel */
/** @typedef {import("./citations.js").LinkModel} LinkModel */
/** @typedef {import("./citations.js").ShownModel} ShownModel */
/** @typedef {import("./settings.js").Shortcut} Shortcut */
/** @typedef {import("./panel.js").Widget} Widget */

/**
 * The download's parts: a label over a progress bar, and a Cancel button.
 * @typedef {{box: HTMLDivElement, bar: HTMLProgressElement, label: HTMLSpanElement, cancel: HTMLButtonElement}} ProgressParts
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const C = lib.need("citations");
  const { capital, el, icon, isolated, link, title } = lib.need("dom");
  const { isolate, otherVersion } = lib.need("client");

  const PLACEHOLDER = "Ask a question about this book…";

  // -- the widget's skeleton --------------------------------------------------

  /** @param {Shortcut | null} shortcut */
  function launcher(shortcut) {
    return el(
      "button",
      {
        type: "button",
        class: "ragcite-launcher",
        "aria-haspopup": "dialog",
        "aria-expanded": "false",
        "aria-controls": "ragcite-panel",
        "aria-keyshortcuts": shortcut ? shortcut.aria : null,
        title: shortcut ? `Ask the book (${shortcut.label})` : "Ask the book",
      },
      icon(),
      el("span", { class: "ragcite-launcher-label", text: "Ask the book" }),
    );
  }

  /** @param {Shortcut | null} shortcut */
  function header(shortcut) {
    const closeButton = el("button", {
      type: "button",
      class: "ragcite-close",
      "aria-label": "Close",
      title: "Close (Esc)",
      text: "×",
    });
    const box = el(
      "div",
      { class: "ragcite-header" },
      el("h2", { class: "ragcite-title", id: "ragcite-title", text: "Ask this book" }),
      shortcut ? el("kbd", { class: "ragcite-kbd", text: shortcut.label, title: "Keyboard shortcut" }) : null,
      closeButton,
    );
    return { header: box, closeButton };
  }

  /** The version picker's row: "Answers from version [2.0]". */
  function versionRow() {
    const versionSelect = el("select", {
      id: "ragcite-version",
      class: "ragcite-version-select",
      "aria-describedby": "ragcite-version-note",
    });
    const versionNote = el("span", { id: "ragcite-version-note", class: "ragcite-version-note", hidden: true });
    const versions = el(
      "div",
      { class: "ragcite-versions", hidden: true },
      el("label", { for: "ragcite-version", class: "ragcite-version-label", text: "Answers from version" }),
      versionSelect,
      versionNote,
    );
    return { versions, versionSelect, versionNote };
  }

  /** "About your selection: …", with "Ask the whole book instead". */
  function selectionRow() {
    const selectionText = el("q", { class: "ragcite-selection-text" });
    const selectionClear = el("button", {
      type: "button",
      class: "ragcite-selection-clear",
      text: "Ask the whole book instead",
    });
    const selectionBox = el(
      "div",
      { class: "ragcite-selection", hidden: true },
      el("span", { class: "ragcite-selection-label", text: "About your selection: " }),
      selectionText,
      selectionClear,
    );
    return { selectionBox, selectionText, selectionClear };
  }

  /** @param {number} maxQuestion the limit the counter shows */
  function questionForm(maxQuestion) {
    const question = el("textarea", {
      id: "ragcite-question",
      class: "ragcite-question",
      rows: 3,
      // no maxlength: it counts UTF-16 units (1,000 emoji filled it);
      // the panel's limitQuestion() keeps the limit in code points
      placeholder: PLACEHOLDER,
      "aria-describedby": "ragcite-count ragcite-hint",
      autocomplete: "off",
      spellcheck: "true",
    });
    const counter = el("span", { id: "ragcite-count", class: "ragcite-count", text: `0 / ${maxQuestion}` });
    const submit = el("button", { type: "submit", class: "ragcite-submit", text: "Ask" });
    const form = el(
      "form",
      { class: "ragcite-form", novalidate: true },
      el("label", { for: "ragcite-question", class: "ragcite-visually-hidden", text: "Your question" }),
      question,
      el(
        "div",
        { class: "ragcite-form-row" },
        el("span", { id: "ragcite-hint", class: "ragcite-hint", text: "Enter to ask · Shift+Enter for a new line" }),
        counter,
        submit,
      ),
    );
    return { form, question, counter, submit };
  }

  /**
   * The whole widget, not yet on the page and not yet listened to: the
   * launcher, the panel (header, mode note, version picker, selection,
   * question form, status, error, output), the preview and "Ask about this".
   * @param {{version: string, shortcut: Shortcut | null}} settings
   * @param {number} maxQuestion
   * @returns {{widget: Widget, closeButton: HTMLButtonElement, selectionClear: HTMLButtonElement}}
   */
  function skeleton(settings, maxQuestion) {
    const { header: head, closeButton } = header(settings.shortcut);
    const modeNote = el("div", { class: "ragcite-mode-note", hidden: true });
    const { versions, versionSelect, versionNote } = versionRow();
    const { selectionBox, selectionText, selectionClear } = selectionRow();
    const { form, question, counter, submit } = questionForm(maxQuestion);
    const status = el("div", { class: "ragcite-status", role: "status", "aria-live": "polite" });
    const error = el("div", { class: "ragcite-error", role: "alert", hidden: true });
    const output = el("div", { class: "ragcite-output", "aria-live": "polite", "aria-busy": "false" });
    const body = el("div", { class: "ragcite-body" }, status, error, output);
    const panel = el(
      "div",
      {
        id: "ragcite-panel",
        class: "ragcite-panel",
        role: "dialog",
        "aria-modal": "false",
        "aria-labelledby": "ragcite-title",
        hidden: true,
      },
      head,
      modeNote,
      versions,
      selectionBox,
      form,
      body,
    );
    const button = launcher(settings.shortcut);
    const preview = el("div", { id: "ragcite-preview", class: "ragcite-preview", role: "tooltip", hidden: true });
    const askSelection = el(
      "button",
      { type: "button", class: "ragcite-ask-selection", hidden: true },
      icon(),
      el("span", { text: "Ask about this" }),
    );
    const root = el(
      "div",
      { id: "ragcite-root", class: "ragcite-root", "data-ragcite-version": settings.version },
      button,
      panel,
      preview,
      askSelection,
    );
    const widget = {
      root,
      launcher: button,
      panel,
      modeNote,
      versions,
      versionSelect,
      versionNote,
      selectionBox,
      selectionText,
      form,
      question,
      counter,
      submit,
      body,
      status,
      error,
      output,
      preview,
      askSelection,
    };
    return { widget, closeButton, selectionClear };
  }

  /** The answer engine's download box (`panel.showProgress`). @returns {ProgressParts} */
  function progressParts() {
    const bar = el("progress", { class: "ragcite-progress-bar", max: 1, value: 0, "aria-labelledby": "ragcite-progress-label" });
    const label = el("span", { id: "ragcite-progress-label", class: "ragcite-progress-label" });
    const cancel = el("button", { type: "button", class: "ragcite-progress-cancel", text: "Cancel" });
    const box = el("div", { class: "ragcite-progress", role: "group", "aria-label": "Answer engine download" }, label, bar, cancel);
    return { box, bar, label, cancel };
  }

  // -- pieces -------------------------------------------------------------

  /** @param {string} text */
  function heading(text) {
    return el("h3", { class: "ragcite-subheading", text });
  }

  /**
   * A percentage of a 0-1 score.
   * @param {number} score
   */
  function percent(score) {
    return `${Math.round(score * 100)}%`;
  }

  /**
   * Show a version badge while its version is not the page's own.
   * @param {HTMLElement} badge
   * @param {string} page the page's conf.py version ("" unknown)
   */
  function setBadge(badge, page) {
    const version = badge.getAttribute("data-ragcite-version") || "";
    const other = otherVersion(version, page);
    badge.hidden = !other;
    badge.title = other ? `From version ${isolate(version)} of the book; this page is version ${isolate(page)}` : "";
  }

  /**
   * A "Version 2.0" badge, shown while the version is not the page's (the
   * panel calls `setBadge` again when the page's version becomes known).
   * @param {string} version
   * @param {string} page the page's conf.py version
   * @param {string} [cls] more classes
   */
  function versionBadge(version, page, cls = "") {
    if (!version) return null;
    const badge = el("span", {
      class: `ragcite-version-badge${cls ? ` ${cls}` : ""}`,
      "data-ragcite-version": version,
      text: `Version ${version}`,
    });
    setBadge(badge, page);
    return badge;
  }

  /**
   * The `version` of each well-formed item of a list, in the order the
   * citation models keep them (`citations.buildShown`, `buildLinks` skip
   * anything but objects).
   * @param {unknown} list
   * @returns {string[]}
   */
  function versionsOf(list) {
    if (!Array.isArray(list)) return [];
    return list
      .filter((item) => item && typeof item === "object")
      .map((item) => (typeof item.version === "string" ? item.version : ""));
  }

  /**
   * @param {LinkModel[]} links
   * @param {string} cls
   * @param {string[]} versions the version of each link (several sites)
   * @param {string} page
   */
  function linkList(links, cls, versions, page) {
    const list = el("ol", { class: cls });
    for (const [i, item] of links.entries()) {
      list.append(
        el(
          "li",
          { class: "ragcite-link-item" },
          link(item.href, { class: "ragcite-link", "data-ragcite-link": item.passageId }, title(item)),
          versionBadge(versions[i] || "", page, "ragcite-badge-inline"),
          item.snippet ? el("p", { class: "ragcite-snippet" }, isolated(C.clip(item.snippet, 240))) : null,
        ),
      );
    }
    return list;
  }

  // -- the three outcomes -----------------------------------------------------

  /**
   * The answer paragraph: isolated text and `<sup><a data-ragcite-n>` markers.
   * @param {string} text
   * @param {Map<number, SourceModel>} sources
   */
  function answerText(text, sources) {
    const p = el("p", { class: "ragcite-answer" });
    for (const seg of C.parseAnswer(text, sources.keys())) {
      if ("text" in seg) {
        p.append(isolated(seg.text));
        continue;
      }
      const s = /** @type {SourceModel} */ (sources.get(seg.marker));
      const a = el("a", {
        class: s.href ? "ragcite-marker" : "ragcite-marker ragcite-marker-nolink",
        "data-ragcite-n": s.n,
        href: s.href,
        tabindex: s.href ? null : 0,
        role: s.href ? null : "button",
        "aria-label": `Source ${s.n}: ${C.sourceTitle(s)}`,
        text: `[${s.n}]`,
      });
      p.append(el("sup", { class: "ragcite-sup" }, a));
    }
    return p;
  }

  /**
   * @param {SourceModel} s
   * @param {string} version its citation's `version` (several sites)
   * @param {string} page
   */
  function sourceItem(s, version, page) {
    const head = s.selection
      ? el("span", { class: "ragcite-source-title ragcite-source-selection" }, title(s))
      : link(s.href, { class: "ragcite-source-title ragcite-link", "data-ragcite-link": s.passageId }, title(s));
    const confidence = s.level
      ? el("span", {
          class: `ragcite-source-confidence ragcite-level-${s.level}`,
          text: `${capital(s.level)} confidence${s.confidence !== null ? ` (${Math.round(s.confidence * 100)}%)` : ""}`,
        })
      : null;
    return el(
      "li",
      { class: "ragcite-source", value: s.n, "data-ragcite-source": s.n, id: `ragcite-source-${s.n}` },
      head,
      s.snippet ? el("p", { class: "ragcite-snippet" }, isolated(C.clip(s.snippet, 240))) : null,
      el(
        "div",
        { class: "ragcite-source-meta" },
        versionBadge(version, page),
        confidence,
        s.selection ? el("span", { class: "ragcite-source-kind", text: " · no link: your own selection" }) : null,
      ),
    );
  }

  /**
   * The confidence band, "About your selection" and the version asked.
   * @param {Answer} answer
   * @param {string | null} level
   * @param {string} page
   */
  function answerBadges(answer, level, page) {
    const badges = el("div", { class: "ragcite-badges" });
    if (level) {
      const score = typeof answer.confidence === "number" && Number.isFinite(answer.confidence) ? answer.confidence : null;
      badges.append(
        el("span", {
          class: `ragcite-badge ragcite-badge-${level}`,
          text: `${capital(level)} confidence${score !== null ? ` · ${percent(score)}` : ""}`,
          title: score !== null ? `A calibrated ${percent(score)} chance that the cited passage answers the question` : null,
        }),
      );
    }
    if (answer.mode === "selection") {
      badges.append(el("span", { class: "ragcite-badge ragcite-badge-mode", text: "About your selection" }));
    }
    const asked = versionBadge(typeof answer.version === "string" ? answer.version : "", page, "ragcite-badge");
    if (asked) badges.append(asked);
    return badges;
  }

  /**
   * "Sources" and the numbered list, each with its citation's version.
   * @param {Answer} answer
   * @param {SourceModel[]} models
   * @param {string} page
   * @returns {Node[]}
   */
  function sourceList(answer, models, page) {
    if (!models.length) return [];
    const list = el("ol", { class: "ragcite-sources" });
    /** @type {Map<number, string>} */
    const versions = new Map();
    for (const c of Array.isArray(answer.citations) ? answer.citations : []) {
      if (c && typeof c === "object" && typeof c.version === "string" && !versions.has(c.n)) versions.set(c.n, c.version);
    }
    for (const s of models) list.append(sourceItem(s, versions.get(s.n) || "", page));
    return [heading("Sources"), list];
  }

  /**
   * Who wrote the answer: the model (each cited sentence checked), or
   * sentences quoted from the book.
   * @param {Answer} answer
   */
  function byline(answer) {
    const meta = answer.metadata || {};
    const model = typeof meta.model === "string" && meta.model ? meta.model : "a language model";
    const by =
      meta.generator === "llm"
        ? ["Written by ", el("bdi", { text: model }), "; each cited sentence was checked against its source."]
        : meta.generator === "llm->extractive"
          ? ["The generated answer could not be checked against the book, so these sentences are quoted from it."]
          : ["Sentences quoted from the book."];
    return el("p", { class: "ragcite-footnote" }, ...by);
  }

  /**
   * The "answer" outcome: the confidence band and badges, a low-confidence
   * warning, the text with its markers, the sources, and who wrote it.
   * @param {Answer} answer
   * @param {SourceModel[]} models `citations.buildSources(answer)`
   * @param {Map<number, SourceModel>} sources the same, by `n`
   * @param {string} page
   * @returns {Node[]}
   */
  function citedAnswer(answer, models, sources, page) {
    const level = ["high", "medium", "low"].includes(answer.confidence_level)
      ? answer.confidence_level
      : C.confidenceLevel(answer.confidence);
    const low =
      level === "low"
        ? el("p", {
            class: "ragcite-low-note",
            text: "Low confidence: the book may not fully answer this. Check the sources before relying on it.",
          })
        : null;
    return [
      answerBadges(answer, level, page),
      ...(low ? [low] : []),
      answerText(answer.answer, sources),
      ...sourceList(answer, models, page),
      byline(answer),
    ];
  }

  /**
   * One passage of the "passages" outcome: its title linking to it, its
   * best sentence marked among the snippet's words, how likely it answers.
   * @param {ShownModel} p
   * @param {string} version its passage's `version` (several sites)
   * @param {string} page
   */
  function shownItem(p, version, page) {
    const { before, quote, after } = p.context;
    return el(
      "li",
      { class: "ragcite-passage", "data-ragcite-rank": p.rank },
      link(
        p.href,
        { class: "ragcite-passage-title ragcite-link", "data-ragcite-link": p.passageId, "data-ragcite-shown": p.rank },
        title(p),
      ),
      el(
        "blockquote",
        { class: "ragcite-passage-quote" },
        before ? el("span", { class: "ragcite-passage-context" }, isolated(before)) : null,
        el("span", { class: "ragcite-visually-hidden", text: "Best sentence: " }),
        el("mark", { class: "ragcite-best" }, isolated(quote)),
        after ? el("span", { class: "ragcite-passage-context" }, isolated(after)) : null,
      ),
      p.confidence !== null || version
        ? el(
            "div",
            { class: "ragcite-source-meta" },
            versionBadge(version, page),
            p.confidence !== null
              ? el("span", { class: "ragcite-passage-likely", text: `${percent(p.confidence)} likely to answer` })
              : null,
          )
        : null,
    );
  }

  /**
   * The "passages" outcome: no claim, the passages that may hold the answer.
   * @param {Answer} answer
   * @param {ShownModel[]} models `citations.buildShown(answer)`
   * @param {string} page
   * @returns {Node[]}
   */
  function mayAnswer(answer, models, page) {
    const list = el("ol", { class: "ragcite-passages" });
    const versions = versionsOf(answer.passages);
    for (const p of models) list.append(shownItem(p, versions[p.rank - 1] || "", page));
    return [
      el(
        "div",
        { class: "ragcite-maybe" },
        el("h3", { class: "ragcite-outcome-title", text: "The book may answer this here:" }),
        el("p", {
          class: "ragcite-outcome-text",
          text: "No sure answer, so none is given. Each link opens the passage at its best sentence.",
        }),
      ),
      list,
    ];
  }

  /**
   * The "not_found" outcome: the book does not cover it; the closest pages.
   * @param {Answer} answer
   * @param {LinkModel[]} seeAlso `citations.buildSeeAlso(answer)`
   * @param {string} page
   * @returns {Node[]}
   */
  function notCovered(answer, seeAlso, page) {
    const note = el(
      "div",
      { class: "ragcite-notfound" },
      el("h3", { class: "ragcite-outcome-title", text: "This book does not seem to cover that" }),
      el("p", {
        class: "ragcite-outcome-text",
        text: seeAlso.length
          ? "No passage answers the question; these pages come closest."
          : "No passage answers the question. Try other words.",
      }),
    );
    if (!seeAlso.length) return [note];
    const meta = answer.metadata;
    const versions = versionsOf(meta && typeof meta === "object" ? meta.see_also : null);
    return [note, heading("Closest pages"), linkList(seeAlso, "ragcite-see-also", versions, page)];
  }

  /** Under an answer the browser engine wrote. */
  function inBrowserNote() {
    return el("p", {
      class: "ragcite-footnote ragcite-in-browser",
      text: "Answered in your browser: your question did not leave this page.",
    });
  }

  /**
   * Static search results under a note saying why they are not an answer,
   * with an `action` button after it (e.g. "Download the answer engine").
   * @param {StaticResult} result
   * @param {string} root the site root its links resolve against
   * @param {string} [why]
   * @param {{label: string, run: () => void}} [action] runs once, on click
   * @returns {Node[]}
   */
  function searchResults(result, root, why, action) {
    const note = el(
      "div",
      { class: "ragcite-static-note", role: "note" },
      el("strong", { text: "Search results, not an answer. " }),
      why ||
        "No answer server is reachable, so these are the passages that best match your question. " +
          "Generated answers with citations need the answer server (ragcite serve).",
    );
    if (action) {
      const button = el("button", { type: "button", class: "ragcite-static-action", text: action.label });
      button.addEventListener("click", () => action.run(), { once: true });
      note.append(" ", button);
    }
    if (!result.hits.length) {
      return [note, el("p", { class: "ragcite-noresults", text: "No passage matches these words. Try other words." })];
    }
    return [note, heading("Matching passages"), linkList(C.buildLinks(result.hits, root), "ragcite-results", [], "")];
  }

  const api = {
    answerText,
    citedAnswer,
    heading,
    inBrowserNote,
    linkList,
    mayAnswer,
    notCovered,
    percent,
    progressParts,
    searchResults,
    setBadge,
    shownItem,
    skeleton,
    sourceItem,
    versionBadge,
    versionsOf,
  };
  lib.provide("render", api);
  if (typeof module === "object") module.exports = api;
})();
