// @ts-check
/**
 * Static mode's glue: when no answer server answers, load the searcher
 * (`stemmer.js`, `tokenize.js`, `search.js`, fetched only now) and the
 * book's static index, and hand back a searcher.
 *
 * Over HTTP the manifest names the sharded index's root (`store.js` fetches
 * and checks it): a query then fetches its own terms' shards and the
 * display fields of the passages it shows, never the whole index. From
 * disk (file://) fetch is blocked, but a script next to the manifest still
 * loads: the whole index (`search.js`), which assigns it to a global,
 * nothing else; there every byte is a local read.
 *
 * Classic script: provides `static` (see `lib.js`).
 */

/** @typedef {import("./search.js").StaticSearch} StaticSearch */
/** @typedef {import("./search.js").ShardedSearch} ShardedSearch */

/**
 * @typedef {object} StaticLoader
 * @property {() => Promise<StaticSearch | ShardedSearch>} load tried again after a failure,
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
   * The reader's sentence for a store error (`store.js`).
   * @param {unknown} error
   */
  function asWidgetError(error) {
    const e = /** @type {Error & {kind?: string}} */ (error);
    if (e && e.kind === "network") {
      return new WidgetError("Could not load the book's search index; check your connection.", "static");
    }
    return new WidgetError(String((e && e.message) || error), "static");
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

    /**
     * The sharded index over HTTP (`store.js`: each file checked against
     * its digest); the searcher fetches a query's shards as it needs them.
     * @param {URL} manifestUrl
     * @param {(index: unknown) => Promise<void>} stemmerFor loads the stemmer
     */
    async function openShards(manifestUrl, stemmerFor) {
      const store = lib.need("store").createShardStore({ manifestUrl, caches: null, anyManifest: true });
      let manifest;
      try {
        manifest = await store.manifest();
      } catch (error) {
        read = null;
        throw asWidgetError(error);
      }
      read = manifest;
      if (typeof manifest.files.search_root !== "string") {
        throw new WidgetError("This book's index has no sharded search index; rebuild it with a newer sphinx-ragcite.", "static");
      }
      await stemmerFor(manifest);
      try {
        return await store.search();
      } catch (error) {
        throw asWidgetError(error);
      }
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

    /** @type {Promise<StaticSearch | ShardedSearch> | null} */
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
        /** @param {unknown} holder the index or manifest whose tokenizer names the stemmer */
        const stemmerFor = async (holder) => {
          const language = snowballLanguage(holder);
          if (language && !lib.has(`snowball/${language}`)) {
            await loadScript(assetUrl(`snowball/${language}.js`, assetBase).href, notLoaded);
          }
        };
        if (!fromDisk) return openShards(indexUrl, stemmerFor);
        // from disk fetch is blocked: the whole index, loaded as a script
        const index = await loadIndexScript(indexUrl);
        await stemmerFor(index);
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
