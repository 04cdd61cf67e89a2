"""The reader widget's files: found, copied to ``_static/ragcite/``, linked."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.errors import ExtensionError

from sphinx_ragcite import __version__
from sphinx_ragcite.text import spec_for

if TYPE_CHECKING:
    from sphinx.application import Sphinx

#: The widget's classic scripts, in the order every page loads them: the
#: registry (``lib.js``), the constants shared with Python (``spec.js``,
#: written by ``tools/write_js_spec.py``), and ``widget.js``, last, starts it.
#: Not ES modules: Chromium refuses module scripts on ``file://`` pages.
#: The only place a load order is written: ``spec.js`` carries these lists
#: to the widget and the worker (``SCRIPTS``).
WIDGET_SCRIPTS = (
    "lib.js",
    "spec.js",
    "citations.js",
    "sse.js",
    "settings.js",
    "dom.js",
    "client.js",
    "files.js",
    "static.js",
    "quotes.js",
    "deeplinks.js",
    "selection.js",
    "render.js",
    "previews.js",
    "feedback.js",
    "panel.js",
    "widget.js",
)
#: Loaded by the widget itself, only in static mode.
STATIC_MODE_SCRIPTS = ("stemmer.js", "tokenize.js", "search.js", "store.js")
#: Answers in the browser (``ragcite_browser_answers``): the page's side
#: (loaded by the widget in static mode), the worker, and the engine's store.
BROWSER_SCRIPTS = ("browser.js", "worker.js")
#: The engine's modules, in dependency order, then the question encoder.
ENGINE_SCRIPTS = (
    "sentences.js",
    "fusion.js",
    "dense_index.js",
    "retrieve.js",
    "units.js",
    "evidence.js",
    "ranker.js",
    "verify.js",
    "answer.js",
    "selection_answer.js",
    "engine.js",
    "wordpiece.js",
    "unigram.js",
    "encode.js",
)
#: What the worker loads after ``lib.js`` and ``spec.js``, in order; the
#: site's file formats (``files.js``, which the page loads too) first, and
#: ``worker.js`` loads it and ``store.js`` before the rest.
WORKER_SCRIPTS = ("files.js", *STATIC_MODE_SCRIPTS, *ENGINE_SCRIPTS)
#: Shipped to every HTML site.
WIDGET_FILES = (*WIDGET_SCRIPTS, "widget.css", *STATIC_MODE_SCRIPTS)
#: The Snowball stemmers of languages besides English, one per file
#: (``snowball/german.js``); a site ships its book's language's only.
SNOWBALL_FOLDER = "snowball"
#: Folder under ``_static`` of the built site.
STATIC_FOLDER = "ragcite"
#: The index manifest, relative to the site root (the widget resolves it
#: against ``<html data-content_root>``).
MANIFEST_PATH = "_ragcite/manifest.json"


def widget_dir() -> Path:
    """Where the widget files live.

    A wheel ships them in ``sphinx_ragcite/static/``; a source checkout (and
    an editable install) has them in the repository's ``js/``.
    """
    package = Path(__file__).resolve().parent.parent
    candidates = (package / "static", package.parent / "js")
    for folder in candidates:
        if all((folder / name).is_file() for name in WIDGET_FILES):
            return folder
    raise ExtensionError(
        "sphinx-ragcite: the reader widget's files are missing (looked in "
        + " and ".join(str(c) for c in candidates)
        + "); reinstall sphinx-ragcite, or set ragcite_widget = False"
    )


def copy_widget(
    outdir: Path, language: str | None = None, browser_answers: bool = False
) -> str:
    """Copy the widget into ``outdir/_static/ragcite/``; unchanged files stay.

    A book in a Snowball language besides English gets that stemmer too
    (``snowball/<name>.js`` and the Snowball licence), for static search;
    with *browser_answers*, the scripts of the engine in the browser.
    Returns the files' digest (`assets_digest`).
    """
    source = widget_dir()
    target = outdir / "_static" / STATIC_FOLDER
    names = widget_names(source, language, browser_answers)
    if any(n.startswith(f"{SNOWBALL_FOLDER}/") for n in names):
        (target / SNOWBALL_FOLDER).mkdir(parents=True, exist_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        data = (source / name).read_bytes()
        dest = target / name
        if dest.is_file() and dest.read_bytes() == data:
            continue
        tmp = dest.with_name(f"{dest.name}.tmp")
        with (source / name).open("rb") as src, tmp.open("wb") as out:
            shutil.copyfileobj(src, out)
        tmp.replace(dest)
    return assets_digest(source, names)


def widget_names(
    source: Path, language: str | None, browser_answers: bool
) -> list[str]:
    """The files a site gets (`copy_widget`), relative to *source*."""
    names = list(WIDGET_FILES)
    if browser_answers:
        names += [
            n for n in (*BROWSER_SCRIPTS, *ENGINE_SCRIPTS) if (source / n).is_file()
        ]
    stemmer = spec_for(language).get("stemmer") or ""
    if stemmer.startswith("snowball-") and stemmer != "snowball-english":
        name = stemmer.removeprefix("snowball-")
        names += [f"{SNOWBALL_FOLDER}/{name}.js", f"{SNOWBALL_FOLDER}/COPYING"]
    return names


#: The config value (set at config-inited, never by an author) that carries
#: the digest into Sphinx's build info: a new widget or engine then rewrites
#: every page, whose tags name it, on an incremental build too.
DIGEST_CONFIG = "_ragcite_assets"


def stamp_digest(app: Sphinx, config: Any) -> None:
    """config-inited: the digest of the scripts this build will ship."""
    from sphinx_ragcite.extension.browser_index import shipped

    try:
        engine = shipped(config.ragcite_browser_answers, config.ragcite_embeddings)
        source = widget_dir()
        digest = assets_digest(source, widget_names(source, config.language, engine))
    except (ExtensionError, OSError):
        digest = ""  # add_widget says what is missing
    setattr(config, DIGEST_CONFIG, digest)


def assets_digest(folder: Path, names: list[str] | tuple[str, ...]) -> str:
    """The first 16 hex digits of a SHA-256 over the files' names and bytes.

    The widget and the engine's worker load their other scripts by
    themselves, past Sphinx's per-file ``?v=``: they add this digest
    (``data-ragcite-assets``) as ``?v=``, so a host's long ``_static/``
    max-age never serves one build's engine to another build's index.
    """
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256((folder / name).read_bytes()).digest())
    return digest.hexdigest()[:16]


def add_widget(app: Sphinx) -> None:
    """Copy the files and add the stylesheet and scripts to every page.

    Settings and the version reach the entry script through
    ``data-ragcite-*`` attributes on its tag; the site root comes from the
    script's own URL, else the page's ``data-content_root``.
    """
    config = app.config
    from sphinx_ragcite.extension.browser_index import shipped

    engine = shipped(config.ragcite_browser_answers, config.ragcite_embeddings)
    assets = copy_widget(Path(app.outdir), config.language, engine)
    app.add_css_file(f"{STATIC_FOLDER}/widget.css")
    *parts, entry = WIDGET_SCRIPTS
    for name in parts:
        app.add_js_file(f"{STATIC_FOLDER}/{name}", loading_method="defer")
    app.add_js_file(
        f"{STATIC_FOLDER}/{entry}",
        loading_method="defer",
        **{
            "data-ragcite-server": config.ragcite_server_url,
            "data-ragcite-index": MANIFEST_PATH,
            "data-ragcite-shortcut": config.ragcite_shortcut,
            "data-ragcite-version": __version__,
            "data-ragcite-assets": assets,
            "data-ragcite-site": config.ragcite_site_name,
            "data-ragcite-scope": config.ragcite_widget_scope,
            # off: the build ships no engine, so never start its worker
            "data-ragcite-browser": "on" if engine else "off",
        },
    )
    app.connect("html-page-context", page_scope)


def page_scope(
    app: Sphinx,
    pagename: str,
    templatename: str,
    context: dict[str, Any],
    doctree: object,
) -> None:
    """A page whose metadata says ``ragcite_scope: all`` (or ``site``) tells
    the widget so in a ``<meta name="ragcite-scope">`` tag."""
    meta = context.get("meta") or {}
    scope = str(meta.get("ragcite_scope", "")).strip().lower()
    if scope in ("site", "all"):
        tag = f'<meta name="ragcite-scope" content="{scope}">\n'
        context["metatags"] = context.get("metatags", "") + tag
