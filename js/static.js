// @ts-check
/**
 * Static mode's glue: when no answer server answers, load the searcher
 * (`stemmer.js`, `tokenize.js`, `search.js`, fetched only now) and the
 * book's static index, and hand back a searcher.
 *
 * Over HTTP the manifest names the index file, which is fetched and parsed
 * as JSON. From disk (file://) fetch is blocked, but a script next to the
 * manifest still loads: the file assigns the index to a global, nothing else.
 *
 * Classic script: provides `static` (see `lib.js`).
 */

/** @typedef {import("./search.js").StaticSearch} StaticSearch */

/**
 * @typedef {object} StaticLoader
 * @property {() => Promise<StaticSearch>} load tried again after a failure,
 *   done once after a success
 * @property {() => unknown} manifest the index manifest it read, unchecked
 *   (null before, or from file://)
 */

(function () {
  "use strict";

  const lib = typeof module === "object" ? require("./lib.js") : globalThis.ragcite_lib;
  const client = lib.need("client");
  const C = lib.need("citations");
  const F = lib.need("files");
  const { WidgetError } = client;

  /** The static index file's alias beside the manifest (`FILE_NAME` of
   * `formats/static.py`): `STATIC_PREFIX<JSON>;` (see `files.js`). */
  const STATIC_FILE = "search.js";
  /** The searcher's scripts, in load order. */
  const SEARCH_SCRIPTS = lib.need("spec").SCRIPTS.search;

  /**
   * The Snowball stemmer besides English the index's tokenizer names
   * ("german" for `snowball-german`), or null; `snowball/<name>.js` has it.
   * @param {unknown} index
   * @returns {string | null}
   */
  function snowballLanguage(index) {
    return F.snowballLanguage(F.isObject(index) ? index.tokenizer : null);
  }

  /**
   * The index inside the static index file's text (checked by the searcher).
   * @param {string} text
   * @returns {unknown}
   */
  function parseStaticFile(text) {
    const read = F.readStaticFile(text);
    if (!read.ok) {
      throw new WidgetError(
        read.problem === "json"
          ? "The book's search index is not valid JSON; rebuild the documentation."
          : "The book's search index is damaged; rebuild the documentation.",
        "static",
      );
    }
    return read.value;
  }

  /**
   * @param {string} url
   * @param {boolean} fromDisk
   * @returns {Promise<unknown>}
   */
  async function fetchJson(url, fromDisk) {
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin" });
    } catch {
      throw new WidgetError(
        fromDisk
          ? "This page was opened from disk (file://), where the browser does not let " +
              "the widget read the book's search index. Serve the built site instead, " +
              "e.g. run python -m http.server in the build folder, or ragcite serve."
          : "Could not load the book's search index; check your connection.",
        "static",
      );
    }
    if (!response.ok) {
      throw new WidgetError(
        `The book's search index is missing (HTTP ${response.status} for ${url}); ` +
          "rebuild the documentation with sphinx-ragcite.",
        "static",
      );
    }
    try {
      return await response.json();
    } catch {
      throw new WidgetError("The book's search index is not valid JSON; rebuild the documentation.", "static");
    }
  }

  /** @param {string} src */
  const notLoaded = (src) => new WidgetError(`Could not load ${src}.`, "static");

  /**
   * @param {{assetBase: URL, indexUrl: URL | null}} settings
   * @returns {StaticLoader}
   */
  function createStaticLoader({ assetBase, indexUrl }) {
    const fromDisk = location.protocol === "file:";

    /** @type {unknown} the manifest last read, for what it says of the site's files */
    let read = null;

    /** @param {URL} manifestUrl */
    async function fetchIndex(manifestUrl) {
      const manifest = await fetchJson(manifestUrl.href, fromDisk);
      read = manifest;
      const listed = F.isObject(manifest) ? manifest.files : null;
      const name = F.isObject(listed) ? listed.static : null;
      const folder = lib.need("settings").asFolder(new URL("./", manifestUrl));
      const staticUrl = typeof name === "string" ? C.resolveUrl(name, folder) : null;
      if (staticUrl === null) {
        throw new WidgetError(
          "This book's index has no static search file; rebuild it with a newer sphinx-ragcite.",
          "static",
        );
      }
      let text;
      try {
        const response = await fetch(staticUrl, { credentials: "same-origin" });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        text = await response.text();
      } catch (error) {
        throw new WidgetError(
          `Could not load the book's search index (${/** @type {Error} */ (error).message}).`,
          "static",
        );
      }
      return parseStaticFile(text);
    }

    /** @param {URL} manifestUrl */
    async function loadIndexScript(manifestUrl) {
      await lib.need("dom").loadScript(new URL(STATIC_FILE, manifestUrl).href, notLoaded);
      const index = globalThis.ragcite_static_index;
      if (!index || typeof index !== "object") {
        throw new WidgetError("The book's search index did not load; rebuild the documentation.", "static");
      }
      return index;
    }

    /** @type {Promise<StaticSearch> | null} */
    let loading = null;

    function load() {
      if (loading) return loading;
      loading = (async () => {
        const { loadScript } = lib.need("dom");
        const { assetUrl } = lib.need("settings");
        for (const name of SEARCH_SCRIPTS) {
          if (!lib.has(name)) await loadScript(assetUrl(`${name}.js`, assetBase).href, notLoaded);
        }
        if (indexUrl === null) throw new WidgetError("No search index is configured.", "static");
        const index = fromDisk ? await loadIndexScript(indexUrl) : await fetchIndex(indexUrl);
        const language = snowballLanguage(index);
        if (language && !lib.has(`snowball/${language}`)) {
          await loadScript(assetUrl(`snowball/${language}.js`, assetBase).href, notLoaded);
        }
        try {
          return lib.need("search").createStaticSearch(index);
        } catch (error) {
          throw new WidgetError(String(/** @type {Error} */ (error).message || error), "static");
        }
      })();
      loading.catch(() => {
        loading = null; // try again next time
      });
      return loading;
    }

    return { load, manifest: () => read };
  }

  const api = { createStaticLoader, parseStaticFile, snowballLanguage };
  lib.provide("static", api);
  if (typeof module === "object") module.exports = api;
})();
