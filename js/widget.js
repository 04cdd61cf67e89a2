// @ts-check
/**
 * The reader widget of sphinx-ragcite: an ask panel on every page, cited
 * answers streamed from the answer server, previews and deep links for each
 * citation, "Ask about this" for selected text, and a static mode that
 * searches the shipped index when no server answers.
 *
 * The entry script: it reads the settings from its own <script> tag (see
 * `settings.js`), puts the parts together and asks questions. Classic
 * scripts, loaded deferred in the order `SCRIPTS.page` of `spec.js`
 * (`sphinx_ragcite/extension/assets.py`), this one last; each provides its
 * part through `lib.js`.
 *
 * Public API: `window.ragcite` (see `types.d.ts`): `version`, `open()`,
 * `close()`, `ask(question, {selection, site, version})`, `highlight(passageId)`. Each
 * inline marker is an `<a data-ragcite-n="n">` whose `href` is the cited
 * passage's URL; the highlighted passage carries the class
 * `ragcite-highlight`. The document receives a `ragcite:answer` event
 * (detail: the answer) after each render.
 */

/** @typedef {import("./types").Answer} Answer */
/** @typedef {import("./types").AskRequest} AskRequest */
/** @typedef {import("./types").StaticHit} StaticHit */
/** @typedef {import("./types").StaticResult} StaticResult */
/** @typedef {import("./types").RagciteApi} RagciteApi */

/**
 * The last question and its result, kept for the next page of the session.
 * @typedef {{question: string, selection: string | null, why?: string} &
 *   ({kind: "answer", data: import("./types").Answer} | {kind: "static", data: StaticResult})} Last
 */

(function () {
  "use strict";

  const STATIC_RESULTS = 5;
  const STORAGE_KEY = "ragcite:last";
  /** Half a UTF-16 surrogate pair: text no tokenizer or server takes. */
  const LONE_SURROGATE = /[\ud800-\udfff]/u;
  /** `schemas._valid_text`'s refusal, word for word. */
  const NOT_UNICODE = "must be valid Unicode text (no lone surrogates)";

  /** Not looked for: this file and the registry, and quotes.js, which a
   * page an old incremental build kept may lack (`deeplinks.js` copes). */
  const OPTIONAL = new Set(["lib", "widget", "quotes"]);

  const g = /** @type {{ragcite?: RagciteApi}} */ (globalThis);
  if (g.ragcite) return; // loaded twice
  const lib = globalThis.ragcite_lib;
  // the page's other scripts (`SCRIPTS.page`): a page cut short says which
  const missing = !lib ? ["lib"] : !lib.has("spec") ? ["spec"] : lib.need("spec").SCRIPTS.page.filter((name) => !OPTIONAL.has(name) && !lib.has(name));
  if (missing.length) {
    console.error(`ragcite: load the widget's other scripts before widget.js (missing: ${missing.join(", ")})`);
    return;
  }

  const client = lib.need("client");
  const { assetUrl, isMacPlatform, matchesShortcut, readSettings } = lib.need("settings");
  const { codePoints, MAX_QUESTION } = lib.need("panel");

  const script = /** @type {HTMLScriptElement | null} */ (
    document.currentScript || document.querySelector('script[src*="ragcite/widget.js"], script[data-ragcite-index]')
  );
  /** @type {import("./settings.js").Settings} */
  const settings = readSettings(script, {
    page: location.href,
    contentRoot: document.documentElement.getAttribute("data-content_root"),
    mac: isMacPlatform(navigator),
    pageScope: (document.querySelector('meta[name="ragcite-scope"]') || { getAttribute: () => null }).getAttribute("content"),
  });
  const WidgetError = client.WidgetError;
  const server = client.createClient(settings);
  /** @type {import("./static.js").StaticLoader} */
  const staticSearch = lib.need("static").createStaticLoader(settings);

  /** @type {import("./panel.js").Panel} */
  const panel = lib.need("panel").createPanel(settings, {
    submit: (question) => {
      ask(question, { selection: selection.current() || undefined, fromForm: true }).catch(() => {
        // the error is on screen already
      });
    },
    follow: (event, anchor, quote) => links.follow(event, anchor, quote),
    clearSelection: () => selection.set(null),
    askSelection: () => {
      if (selection.takeOffered()) panel.open();
    },
    opened: () => {
      server.available().then((up) => {
        showMode(up);
        showVersions(up);
        if (!up) warmUp();
      });
    },
    chooseVersion: (site) => chooseVersion(site),
    takesFeedback: () => server.feedback(),
    sendFeedback: (answerId, helpful, reason) => server.sendFeedback({ answer_id: answerId, helpful, reason }),
  });
  /** @type {import("./selection.js").AskSelection} */
  const selection = lib.need("selection").createSelection({ widget: panel.widget, open: panel.open });
  /** @type {import("./deeplinks.js").DeepLinks} */
  const links = lib.need("deeplinks").createDeepLinks({
    root: settings.root,
    indexUrl: settings.indexUrl,
    mount: () => panel.widget().root,
    inWidget: panel.contains,
    covers: panel.covers,
    stepAside: () => panel.close(false),
    remember,
  });

  // -- the last answer, across pages ----------------------------------------

  /** @type {Last | null} */
  let last = null;

  function remember() {
    if (!last) return;
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(last));
    } catch {
      // storage may be off: the answer is just not restored
    }
  }

  function restore() {
    let saved;
    try {
      saved = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null");
    } catch {
      return;
    }
    if (!saved || typeof saved !== "object" || typeof saved.question !== "string") return;
    try {
      if (saved.kind === "answer" && saved.data && typeof saved.data.answer === "string") {
        panel.renderAnswer(saved.data);
      } else if (saved.kind === "static" && saved.data && Array.isArray(saved.data.hits)) {
        panel.renderStatic(saved.data, typeof saved.why === "string" ? saved.why : undefined);
      } else {
        return;
      }
    } catch {
      panel.resetOutput();
      return;
    }
    last = saved;
    panel.setQuestion(saved.question);
    if (typeof saved.selection === "string" && saved.selection) selection.set(saved.selection);
    panel.setStatus("");
  }

  // -- the version asked ---------------------------------------------------------

  /** @type {string | null | undefined} the reader's choice; undefined: not read yet */
  let picked;

  /**
   * Offer the versions of this book the server serves (the page's own
   * chosen unless the reader picked another this session) and mark sources
   * of other versions.
   * @param {boolean} up whether the server answers
   * @returns {string | null} the site a question asks, or null when no
   *   versions are offered
   */
  function showVersions(up) {
    if (picked === undefined) {
      try {
        picked = sessionStorage.getItem(client.versionKey(settings.site));
      } catch {
        picked = null; // storage may be off: the page's own version
      }
    }
    const served = server.siteList();
    const choices = up && settings.scope === "site" ? client.versionChoices(settings.site, served) : [];
    const chosen = client.chosenSite(choices, picked, settings.site);
    panel.showVersions(choices, chosen, client.pageVersion(settings.site, served));
    return choices.length ? chosen : null;
  }

  /**
   * Keep the reader's choice for the session; the page's own site forgets it.
   * @param {string} site
   */
  function storeChoice(site) {
    picked = site === settings.site ? null : site;
    try {
      const key = client.versionKey(settings.site);
      if (picked) sessionStorage.setItem(key, picked);
      else sessionStorage.removeItem(key);
    } catch {
      // storage may be off: remembered on this page only
    }
  }

  /** @param {string} site the version (site) the reader picked */
  function chooseVersion(site) {
    storeChoice(site);
    showVersions(true);
    const choice = client
      .versionChoices(settings.site, server.siteList())
      .find((c) => c.name === site);
    if (choice) panel.sayVersion(choice.label);
  }

  /**
   * The site a question asked is not served any more (the server restarted
   * without that version while this page was open): forget the reader's
   * choice, read again which sites the server serves (the picker with them)
   * and ask the page's own version, or the server's default when that is
   * gone too.
   * @param {AskRequest} body the request, changed to ask the site now chosen
   * @returns {Promise<() => void>} says so in the status line
   */
  async function fallBack(body) {
    const gone = body.site || "";
    const goneLabel = client.versionLabel(settings.site, server.siteList(), gone) || gone;
    if (picked === gone) storeChoice(settings.site);
    server.forget();
    const up = await server.available();
    showMode(up);
    const site = showVersions(up) || client.scopeSite(settings, server.sites());
    if (site) body.site = site;
    else delete body.site;
    const now = site ? client.versionLabel(settings.site, server.siteList(), site) || site : "";
    const say = () => panel.sayVersion(now, goneLabel);
    say();
    return say;
  }

  // -- answers in the browser, when no server answers ---------------------------

  /** @type {Promise<import("./browser.js").BrowserAnswers | null> | null} */
  let local = null;

  /**
   * The in-browser engine's handle (`browser.js`, loaded on first use); null
   * when it cannot be had. Nothing is downloaded until `prepare()`.
   */
  function inBrowser() {
    if (script && script.getAttribute("data-ragcite-browser") === "off") return Promise.resolve(null);
    if (!local) {
      local = (async () => {
        if (!lib.has("browser")) {
          const src = assetUrl("browser.js", settings.assetBase).href;
          await lib.need("dom").loadScript(src, () => new WidgetError(`Could not load ${src}.`, "static"));
        }
        // a CSP that refuses the worker reports it here, not to the worker
        let refused = false;
        document.addEventListener("securitypolicyviolation", (event) => {
          if (/^(worker-src|child-src|script-src)/.test(event.effectiveDirective || "")) refused = true;
        });
        /** @type {import("./browser.js").BrowserAnswers} */
        const answers = lib.need("browser").createBrowserAnswers(
          { workerUrl: assetUrl("worker.js", settings.assetBase), manifestUrl: settings.indexUrl },
          {
            Worker: typeof Worker === "function" ? Worker : undefined,
            protocol: location.protocol,
            wasm: typeof WebAssembly === "object" && WebAssembly !== null,
            refused: () => refused,
            log: (/** @type {string} */ message) => console.warn(message),
          },
        );
        answers.onProgress((progress) => panel.showProgress(progress, () => answers.cancel()));
        answers.onState((state) => {
          if (state !== "loading") panel.showProgress(null);
          // the grey note never says answers come from the browser once they cannot
          panel.showMode(false, state === "loading" || state === "ready");
          if (state === "ready") {
            try {
              sessionStorage.setItem(WARM_KEY, "yes");
            } catch {
              // storage off: later pages start the engine on their first question
            }
          }
        });
        return answers;
      })().catch(() => null);
    }
    return local;
  }

  /**
   * Say whether answers come from the server, the browser, or neither (only
   * search results): with no server, once the engine's page side is in, so
   * the note never says one thing and then the other. Nothing is downloaded
   * before the first question (its search results cover the wait).
   * @param {boolean} up whether the answer server answers
   */
  function showMode(up) {
    if (up) {
      panel.showMode(true);
      return;
    }
    inBrowser().then((answers) => {
      panel.showMode(false, Boolean(answers && answers.unavailable() === null && !answers.why()));
    });
  }

  const CONSENT_KEY = "ragcite:engine-download";
  /** Set once the engine answered on a page of this visit: its files are cached. */
  const WARM_KEY = "ragcite:engine-ready";

  /**
   * The panel opened with no server on a later page of a visit whose engine
   * already ran: start it now, while the reader types. Its files come from
   * the browser's caches, so nothing is downloaded; the start (a second or
   * so of WebAssembly and the model's session) is then over, or nearly, by
   * the time the question comes. A first visit still waits for a question.
   */
  function warmUp() {
    let warm = false;
    try {
      warm = sessionStorage.getItem(WARM_KEY) === "yes";
    } catch {
      return;
    }
    if (!warm || askFirst()) return;
    inBrowser().then((answers) => {
      if (answers && answers.unavailable() === null && answers.state() === "idle") answers.prepare();
    });
  }

  /**
   * Whether to ask before the engine's download: the browser sends
   * `Save-Data` (the reader asked it to save data) and the reader has not
   * said yes on this visit.
   */
  function askFirst() {
    /** Network Information (Chromium): `saveData` is the reader's wish. */
    const connection = /** @type {{connection?: {saveData?: boolean}}} */ (navigator).connection;
    if (!connection || connection.saveData !== true) return false;
    try {
      return sessionStorage.getItem(CONSENT_KEY) !== "yes";
    } catch {
      return !consented;
    }
  }

  let consented = false;
  function consent() {
    consented = true;
    try {
      sessionStorage.setItem(CONSENT_KEY, "yes");
    } catch {
      // storage may be off: asked again on the next page
    }
  }

  /** "about 37 MB" from the manifest the static search read, else "tens of MB":
   * the engine's large files, what a reader on a metered connection is asked about. */
  function engineSize() {
    const F = lib.need("files");
    const total = F.sizeOf(staticSearch.manifest(), F.ENGINE_ROLES);
    return total > 0 ? `about ${Math.round(total / 1e6)} MB` : "tens of MB";
  }

  /** The note above the first search results while the engine is still to come. */
  const LOADING_NOTE = "While the answer engine loads in your browser, these are the passages that best match your question.";

  /**
   * The note the first results of a static question carry: the same the
   * engine's answer (or its failure) will settle, never "answers need the
   * server" while the engine loads.
   * @param {import("./browser.js").BrowserAnswers | null} answers
   * @returns {string | undefined}
   */
  function engineNote(answers) {
    if (!answers) return undefined;
    const blocked = answers.unavailable();
    if (blocked !== null) return blocked || undefined;
    const failed = answers.why();
    if (failed) return failed;
    return answers.state() === "idle" && askFirst() ? saveDataNote() : LOADING_NOTE;
  }

  function saveDataNote() {
    return (
      `Your browser asks to save data, so the answer engine (${engineSize()}, downloaded once per visit) ` +
      "was not downloaded and these are the passages that best match your question."
    );
  }

  /**
   * Replace the static results of a question with the in-browser engine's
   * answer, once it is ready; keep them, saying why, when it cannot answer.
   * @param {string} question
   * @param {StaticResult} result the results on screen
   * @param {AbortController} controller the question's
   * @param {string | null} [selected] the reader's selection, asked about
   * @returns {Promise<Answer | StaticResult>}
   */
  async function answerLocally(question, result, controller, selected = null) {
    const answers = await inBrowser();
    if (!answers) return result;
    const blocked = answers.unavailable();
    if (blocked !== null) {
      if (blocked) panel.renderStatic(result, blocked);
      return result;
    }
    if (answers.state() === "idle" && askFirst()) {
      panel.renderStatic(result, saveDataNote(), {
        label: "Download it and answer",
        run: () => {
          consent();
          ask(question, { fromForm: true }).catch(() => {});
        },
      });
      return result;
    }
    if (!answers.prepare()) {
      const why = answers.why();
      if (why) panel.renderStatic(result, why);
      return result;
    }
    panel.showMode(false, true);
    if (answers.state() === "loading") panel.renderStatic(result, LOADING_NOTE);
    panel.setStatus(answers.state() === "ready" ? "Answering in your browser…" : "Loading the answer engine…");
    let answer;
    try {
      answer = await answers.ask(question, controller.signal, selected);
    } catch (error) {
      const e = /** @type {import("./browser.js").BrowserAnswerError} */ (error);
      if (e.kind === "replaced" || inflight !== controller) throw new WidgetError("Replaced by a newer question.", "aborted");
      if (e.kind !== "off") console.warn("ragcite: no answer in the browser:", e.message);
      panel.renderStatic(result, e.why || undefined);
      return result;
    }
    if (inflight !== controller) throw new WidgetError("Replaced by a newer question.", "aborted");
    panel.renderAnswer(answer);
    last = { kind: "answer", question, selection: selected, data: answer };
    remember();
    document.dispatchEvent(new CustomEvent("ragcite:answer", { detail: answer }));
    return answer;
  }

  /**
   * The static search's best passages: in the engine's worker while it runs
   * (a large book's index is then never parsed on the page's thread), else
   * here.
   * @param {string} query
   * @returns {Promise<StaticHit[]>}
   */
  async function staticHits(query) {
    const answers = await inBrowser();
    // the first question starts the engine (unless the reader is asked first)
    if (answers && answers.unavailable() === null && !(answers.state() === "idle" && askFirst()) && answers.prepare()) {
      try {
        return await answers.search(query, STATIC_RESULTS);
      } catch {
        // the worker cannot search: the page does
      }
    }
    const searcher = await staticSearch.load();
    return /** @type {StaticHit[]} */ (await searcher.search(query, STATIC_RESULTS));
  }

  // -- asking -----------------------------------------------------------------

  /** @type {AbortController | null} */
  let inflight = null;

  /**
   * @param {string} question
   * @param {string | null} selected
   * @param {AbortController} controller the question's
   * @param {string} [why]
   * @returns {Promise<Answer | StaticResult>} the answer of the engine in the
   *   browser when it gives one, else the results
   */
  async function askStatic(question, selected, controller, why) {
    panel.setStatus("Searching the book's passages…");
    const query = selected ? `${question} ${selected.slice(0, 2000)}` : question;
    const hits = await staticHits(query);
    /** @type {StaticResult} */
    const result = { mode: "static", question, hits };
    panel.renderStatic(result, why || engineNote(await inBrowser()));
    last = { kind: "static", question, selection: selected, data: result, why };
    remember();
    return answerLocally(question, result, controller, selected);
  }

  /**
   * Ask a question and render the result; the promise settles once it is on
   * screen (rejects with the error shown).
   * @param {string} question
   * @param {{selection?: string, fromForm?: boolean, site?: string | null, version?: string}} [options]
   *   `site`: a site name, "*" for all sites, null for the server's default;
   *   left out: this page's own site (see `settings.scope`)
   * @returns {Promise<Answer | StaticResult>}
   */
  async function ask(question, options = {}) {
    const w = panel.widget();
    if (!options.fromForm) {
      panel.open();
      const given = typeof options.selection === "string" ? options.selection.trim() : "";
      selection.set(given || null);
      panel.setQuestion(String(question == null ? "" : question));
    }
    const text = String(question == null ? "" : question).trim();
    const selected = selection.current();
    const retry = () => {
      ask(w.question.value, { fromForm: true }).catch(() => {});
    };
    if (inflight) inflight.abort();
    const controller = new AbortController();
    inflight = controller;
    panel.resetOutput();
    const max = MAX_QUESTION;
    try {
      if (!text) throw new WidgetError("Type a question first.", "invalid");
      // counted in code points, as the server counts (an emoji is one)
      const length = codePoints(text);
      if (length > max) {
        throw new WidgetError(`The question has ${length} characters; the limit is ${max}.`, "invalid");
      }
      // the server's refusal (schemas._valid_text), here before any search:
      // the browser's engine and its static search would take the text
      if (LONE_SURROGATE.test(text)) throw new WidgetError(`question: ${NOT_UNICODE}`, "invalid");
      if (selected && LONE_SURROGATE.test(selected)) throw new WidgetError(`selection: ${NOT_UNICODE}`, "invalid");
      panel.setBusy(true);
      panel.setStatus("Searching the book…");
      const up = await server.available();
      showMode(up);
      const version = showVersions(up);
      if (controller.signal.aborted) throw new WidgetError("Replaced by a newer question.", "aborted");
      if (!up) return await askStatic(text, selected, controller);

      /** @type {AskRequest} */
      const body = selected ? { question: text, mode: "selection", selection: selected } : { question: text, mode: "book" };
      // several sites served together: ask the version picked (by default the
      // page's own), unless told otherwise
      const site =
        options.site !== undefined ? options.site : version || client.scopeSite(settings, server.sites());
      if (site) body.site = site;
      if (options.version) body.version = options.version;
      /** @type {(() => void) | null} says that the version asked has gone */
      let moved = null;
      let answer;
      for (;;) {
        try {
          answer = await server.stream(body, controller.signal, (event, data) => {
            if (inflight !== controller) return;
            if (event === "retrieval") {
              const n = data && Array.isArray(data.retrieved) ? data.retrieved.length : 0;
              panel.setStatus(`Found ${n} relevant passage${n === 1 ? "" : "s"}. Writing the answer…`);
            } else if (event === "token" && data && typeof data.text === "string") {
              panel.streamText(data.text);
            }
          });
          break;
        } catch (error) {
          if (controller.signal.aborted) throw new WidgetError("Replaced by a newer question.", "aborted");
          // the version asked (the picker's or the page's own, not one the
          // caller named) left the server: fall back once, never loop
          if (error instanceof WidgetError && error.kind === "unserved" && options.site === undefined && body.site && !moved) {
            moved = await fallBack(body);
            if (inflight !== controller) throw new WidgetError("Replaced by a newer question.", "aborted");
            continue;
          }
          // the server's own refusals are shown (a question it cannot take,
          // busy, too many); a failure or no response: answer in the browser
          const failed = error instanceof WidgetError && error.kind === "server";
          if (error instanceof WidgetError && !failed) throw error;
          server.forget();
          showMode(false);
          return await askStatic(
            text,
            selected,
            controller,
            failed
              ? "The answer server failed on this question, so these are the passages that best match your question."
              : "The answer server stopped responding, so these are the passages that best match your question.",
          );
        }
      }
      if (inflight !== controller) throw new WidgetError("Replaced by a newer question.", "aborted");
      panel.renderAnswer(answer);
      if (moved) moved();
      last = { kind: "answer", question: text, selection: selected, data: answer };
      remember();
      document.dispatchEvent(new CustomEvent("ragcite:answer", { detail: answer }));
      return answer;
    } catch (error) {
      const e =
        error instanceof WidgetError
          ? error
          : new WidgetError(String((error && /** @type {Error} */ (error).message) || error), "server");
      if (e.kind !== "aborted" && inflight === controller) {
        panel.resetOutput();
        panel.showError(e, retry);
      }
      throw e;
    } finally {
      if (inflight === controller) {
        inflight = null;
        panel.setBusy(false);
      }
    }
  }

  // -- keys and events ----------------------------------------------------------

  /** @param {EventTarget | null} target */
  function isTyping(target) {
    if (!(target instanceof HTMLElement)) return false;
    return (
      target.isContentEditable ||
      target instanceof HTMLInputElement ||
      target instanceof HTMLTextAreaElement ||
      target instanceof HTMLSelectElement
    );
  }

  /** @param {KeyboardEvent} event */
  function onKeydown(event) {
    if (event.defaultPrevented) return;
    const shortcut = settings.shortcut;
    if (shortcut && matchesShortcut(event, shortcut)) {
      const plain = !shortcut.ctrl && !shortcut.meta && !shortcut.alt;
      if (plain && isTyping(event.target)) return;
      event.preventDefault();
      // with "Ask about this" on offer, the shortcut takes the selection along
      selection.takeOffered();
      panel.open();
      return;
    }
    if (event.key !== "Escape") return;
    const w = panel.widget();
    if (panel.previewShown()) {
      panel.hidePreview();
      event.preventDefault();
    } else if (!w.askSelection.hidden) {
      selection.hide();
    } else if (panel.isOpen()) {
      const active = document.activeElement;
      if (!active || active === document.body || w.root.contains(active)) {
        event.preventDefault();
        panel.close();
      }
    }
  }

  /** @type {number | undefined} */
  let selectionTimer;

  function init() {
    panel.widget();
    document.addEventListener("keydown", onKeydown);
    const soon = () => {
      window.clearTimeout(selectionTimer);
      selectionTimer = window.setTimeout(selection.check, 10);
    };
    document.addEventListener("mouseup", soon);
    document.addEventListener("touchend", soon);
    document.addEventListener("keyup", (event) => {
      if (event.shiftKey || event.key === "Shift") soon();
    });
    document.addEventListener("selectionchange", () => {
      const s = window.getSelection();
      if (!s || s.isCollapsed) selection.hide();
    });
    window.addEventListener("scroll", selection.place, { passive: true });
    window.addEventListener("resize", selection.place, { passive: true });
    window.addEventListener("hashchange", links.fromHash);
    restore();
    if (document.readyState === "complete") links.fromHash();
    else window.addEventListener("load", () => links.fromHash(), { once: true });
  }

  /** @type {RagciteApi} */
  const publicApi = {
    version: settings.version,
    open: () => panel.open(),
    close: () => panel.close(),
    ask: (question, options) =>
      ask(question, {
        selection: options && options.selection,
        ...(options && options.site !== undefined ? { site: options.site } : {}),
        ...(options && typeof options.version === "string" ? { version: options.version } : {}),
      }),
    highlight: (id) => links.highlight(String(id), { smooth: true }),
  };
  g.ragcite = Object.freeze(publicApi);

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init, { once: true });
  else init();
})();
