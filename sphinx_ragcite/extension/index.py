"""Passage records -> every file of ``_ragcite/``, at the end of an HTML build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.util import logging

from sphinx_ragcite import __version__
from sphinx_ragcite.errors import ModelNotFoundError
from sphinx_ragcite.extension import stages
from sphinx_ragcite.extension.config import RagciteConfig
from sphinx_ragcite.extension.embedding import start, write_embeddings
from sphinx_ragcite.extension.link_history import LinkHistory, update
from sphinx_ragcite.extension.llms_txt import (
    LISTING_NAME as LLMS_LISTING,
)
from sphinx_ragcite.extension.llms_txt import (
    LISTING_ROLE as LLMS_ROLE,
)
from sphinx_ragcite.extension.llms_txt import (
    LLMS_FULL,
    LLMS_TXT,
    Book,
    group_pages,
    listed_paths,
    llms_files,
    manifest_entry,
    safe_path,
)
from sphinx_ragcite.extension.llms_txt import (
    MANIFEST_KEY as LLMS_KEY,
)
from sphinx_ragcite.extension.passages.ids import toctree_docs
from sphinx_ragcite.extension.passages.records import build_records, page_url
from sphinx_ragcite.extension.writer import IndexWriter, build_time
from sphinx_ragcite.formats.bm25 import PARAMS, bm25_files, build_bm25, tokenized
from sphinx_ragcite.formats.files import atomic_write, dumps
from sphinx_ragcite.formats.manifest import INDEX_DIR, MANIFEST
from sphinx_ragcite.formats.moved import FILE_NAME as MOVED_FILE
from sphinx_ragcite.formats.moved import Moved, moved_file
from sphinx_ragcite.formats.records import passages_jsonl
from sphinx_ragcite.formats.search_shards import ROOT_NAME as SEARCH_ROOT
from sphinx_ragcite.formats.search_shards import search_shards
from sphinx_ragcite.formats.static import FILE_NAME as STATIC_FILE
from sphinx_ragcite.formats.static import static_file, static_index
from sphinx_ragcite.text import (
    Tokenizer,
    WordTokenizer,
    jieba_words,
    spec_for,
    tokenizer,
)

if TYPE_CHECKING:
    from sphinx.application import Sphinx

    from sphinx_ragcite.extension.browser_index import BrowserFiles
    from sphinx_ragcite.extension.passages.records import Record

logger = logging.getLogger(__name__)

HISTORY_FILE = "ragcite-links.json"


def _tokenizers(app: Sphinx, config: RagciteConfig) -> tuple[dict[str, Any], Tokenizer]:
    """The book's tokenizer spec, and how its documents are cut.

    A Chinese book's documents are cut at jieba's word boundaries when it is
    installed (``ragcite_word_segmenter``): measured on the Chinese dev set
    with BM25 alone, an index without bigrams that span two words puts the
    right passage first for 0.733 of the questions, against 0.667 with
    plain bigrams (in the top 3: 0.907 against 0.840), while the questions
    keep plain bigrams; cutting the questions as well added little (0.747,
    0.893), so the server and the browser need no segmenter.
    """
    spec = spec_for(config_text(app.config.language) or None)
    if spec.get("language") != "zh" or config.word_segmenter == "none":
        return spec, tokenizer(spec)
    try:
        named, words = jieba_words()
    except ImportError:
        if config.word_segmenter == "jieba":
            logger.warning(
                "ragcite: ragcite_word_segmenter is 'jieba' but jieba is not "
                "installed (pip install 'sphinx-ragcite[zh]'): the index is cut "
                "into plain character bigrams",
                type="ragcite",
                subtype="language",
            )
        return spec, tokenizer(spec)
    spec = {**spec, "index_words": named}
    return spec, WordTokenizer(spec, words)


def write_site_index(app: Sphinx) -> dict[str, Any]:
    config = RagciteConfig.from_sphinx(app.config)
    timed = stages.of(app).timed
    with timed("records"):
        records = build_records(app.env, app.builder)
        writer = IndexWriter(Path(app.builder.outdir))
        writer.add("passages", "passages.jsonl", passages_jsonl(records))
    spec, documents = _tokenizers(app, config)
    with timed("bm25"):
        corpus = tokenized(records, documents)
        retriever = build_bm25(records, documents, corpus)
        for name, data in bm25_files(retriever).items():
            writer.add("bm25." + name.split(".")[0], f"bm25/{name}", data)
    with timed("static index"):
        # The widget loads these two by name as well (see IndexWriter).
        static = static_file(static_index(records, corpus, spec, PARAMS))
        writer.add("static", STATIC_FILE, static, alias=True)
    with timed("links"):
        links = _follow_links(app, config, records)
        moved = links[0] if links else None
        if moved is not None:
            writer.add("moved", MOVED_FILE, moved_file(moved), alias=True)

    embedding = None
    if config.embeddings and records:
        embedding = _write_embeddings(app, config, records, writer)
    browser = None
    if config.browser_answers and records:
        with timed("browser answers"):
            browser = _add_browser_files(app, config, records, writer, embedding)
    with timed("search shards"):
        sharded = search_shards(
            records,
            corpus,
            spec,
            PARAMS,
            answer_shards=browser.answer_shards if browser else None,
        )
        writer.add("search_root", SEARCH_ROOT, sharded.root)
        for name, data in sharded.files.items():
            writer.add_extra(name, data)

    project = app.config
    with timed("llms.txt"):
        llms = _write_llms_txt(app, records) if config.llms_txt else None
        if llms is not None:
            # its own file: the manifest, which every reader fetches, stays small
            writer.add(LLMS_ROLE, LLMS_LISTING, dumps(llms).encode("utf-8"))
            llms = {"role": LLMS_ROLE}
    with timed("write index"):
        manifest = writer.finish(
            {
                "generator": f"sphinx-ragcite {__version__}",
                "project": config_text(project.project),
                "author": config_text(project.author),
                "copyright": config_text(project.copyright),
                "version": config_text(project.version),
                "release": config_text(project.release),
                "html_baseurl": config_text(project.html_baseurl),
                "language": config_text(project.language) or None,
                "builder": str(app.builder.name),
                "root_url": page_url(app.builder, str(project.root_doc)),
                "built_at": build_time(),
                "counts": {
                    "passages": len(records),
                    "documents": len({r["docname"] for r in records}),
                    "moved": len(moved or ()),
                },
                "tokenizer": spec,
                "bm25": PARAMS,
                "embedding": embedding,
                "citation": {
                    "style": config.citation_style,
                    "show_page": config.show_page,
                    "link_to_source": config.link_to_source,
                    "max_quote_length": config.max_quote_length,
                },
                **({LLMS_KEY: llms} if llms is not None else {}),
            }
        )
    if links:
        # Only now: a build whose index failed does not move the history on.
        _save_history(*links[1:])
    sizes = manifest["bytes"]
    logger.info(
        "ragcite: %d passages from %d documents -> %s/ (%.1f KiB; static search "
        "index %.1f KiB)",
        len(records),
        manifest["counts"]["documents"],
        INDEX_DIR,
        sum(sizes.values()) / 1024,
        sizes["static"] / 1024,
    )
    return manifest


def config_text(value: object) -> str:
    """A conf.py value as the manifest's text.

    Values may be lazy translations, numbers (``version = 1.0``), ``None``, or
    a list (``copyright`` may be one since Sphinx 7.1).
    """
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _write_llms_txt(app: Sphinx, records: list[Record]) -> dict[str, Any] | None:
    """``llms.txt``, ``llms-full.txt`` and the pages' Markdown, before the manifest.

    Each file is written atomically and only if its bytes changed; the files
    an earlier build listed and this one does not are removed. A file this
    extension did not write (an author's own ``llms.txt`` from
    ``html_extra_path``) is left alone with a ``ragcite.llms`` warning. A
    failure costs these files, never the index.
    """
    outdir = Path(app.builder.outdir)
    try:
        previous = _previous_manifest(outdir)
        ours = listed_paths(previous, outdir / INDEX_DIR)
        config = app.config
        reached = toctree_docs(
            config.root_doc, app.env.toctree_includes, set(app.env.all_docs)
        )
        book = Book(
            project=config_text(config.project),
            release=config_text(config.release),
            base_url=_base_url(config_text(config.html_baseurl)),
            pages=group_pages(records, frozenset(app.env.all_docs) - set(reached)),
        )
        files = {p: d for p, d in llms_files(book).items() if safe_path(p)}
        written = {}
        for path, data in sorted(files.items()):
            target = outdir / path
            if path in (LLMS_TXT, LLMS_FULL) and not _ours(target, path in ours):
                logger.warning(
                    "ragcite: %s exists and was not written by sphinx-ragcite; it "
                    "is left as it is (set ragcite_llms_txt = False to stop this "
                    "warning).",
                    target,
                    type="ragcite",
                    subtype="llms",
                )
                continue
            if target.is_symlink():
                target.unlink()
            if not (target.is_file() and target.read_bytes() == data):
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, data)
            written[path] = data
        for path in sorted(ours - set(written)):
            stale = outdir / path
            if stale.is_file() and not stale.is_symlink():
                stale.unlink()
        # llms.txt v2 <link> tags on pages whose theme dropped ``metatags``
        from sphinx_ragcite.extension.llms_links import ensure_links

        twins = [p.url for p in book.pages if p.markdown_path in written]
        ensure_links(outdir, twins)
    except Exception as error:
        logger.warning(
            "ragcite: llms.txt could not be written (%s: %s).",
            type(error).__name__,
            error,
            type="ragcite",
            subtype="llms",
        )
        return None
    return manifest_entry(written)


def _ours(path: Path, listed: bool) -> bool:
    """A file this extension may replace: absent, listed, or one it wrote."""
    if listed or not (path.exists() or path.is_symlink()):
        return True
    try:
        with open(path, "rb") as f:
            return b"passage ID" in f.read(8192)
    except OSError:
        return False


def _base_url(html_baseurl: str) -> str:
    """Absolute links when the site's URL is known, else links from the root."""
    return html_baseurl.rstrip("/") + "/" if html_baseurl else ""


def _previous_manifest(outdir: Path) -> dict[str, Any] | None:
    """The last build's manifest, read leniently (only its llms.txt list is used)."""
    try:
        data = json.loads((outdir / INDEX_DIR / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _follow_links(
    app: Sphinx, config: RagciteConfig, records: list[Record]
) -> tuple[dict[str, Moved], LinkHistory, Path] | None:
    """Old passage ID -> where the text it named is now, from the link history.

    Returns the history to save once the index is written. A history that
    cannot be followed costs the redirects of this build, never the index.
    """
    if config.link_history.lower() == "none":
        return None
    if config.link_history:
        path = Path(app.confdir, config.link_history)
    else:
        path = Path(app.doctreedir) / HISTORY_FILE
    if app.builder.name == "singlehtml":
        # One page without the orphans: its own history, so an html build
        # sharing the doctrees does not see the orphans' passages vanish.
        path = path.with_name(f"{path.stem}-singlehtml{path.suffix}")
    try:
        history = LinkHistory.load(path)
        moved = update(history, records, lambda d: page_url(app.builder, d))
    except Exception as error:
        logger.warning(
            "ragcite: the link history %s could not be followed (%s: %s); old "
            "links are not redirected by this build.",
            path,
            type(error).__name__,
            error,
            type="ragcite",
            subtype="links",
        )
        return None
    if moved:
        logger.info("ragcite: %d old passage links follow their moved text", len(moved))
    return moved, history, path


def _save_history(history: LinkHistory, path: Path) -> None:
    try:
        history.save(path)
    except OSError as error:
        logger.warning(
            "ragcite: could not write the link history %s (%s); this build's "
            "passages will not be recognised after the next edit.",
            path,
            error,
            type="ragcite",
            subtype="links",
        )


def _write_embeddings(
    app: Sphinx, config: RagciteConfig, records: list[Record], writer: IndexWriter
) -> dict[str, Any] | None:
    try:
        return write_embeddings(app, config, records, writer)
    except ModelNotFoundError as error:
        logger.warning(
            "ragcite: %s The index is written without dense embeddings (BM25 only).",
            error,
            type="ragcite",
            subtype="model",
        )
    except Exception as error:
        logger.warning(
            "ragcite: embedding the passages failed (%s: %s). The index is "
            "written without dense embeddings (BM25 only).",
            type(error).__name__,
            error,
            type="ragcite",
            subtype="model",
        )
    return None


def _add_browser_files(
    app: Sphinx,
    config: RagciteConfig,
    records: list[Record],
    writer: IndexWriter,
    embedding: dict[str, Any] | None,
) -> BrowserFiles | None:
    """The browser engine's files; a failure costs them, never the index."""
    from sphinx_ragcite.extension.browser_index import add_browser_files

    try:
        return add_browser_files(app, config, records, writer, embedding)
    except Exception as error:
        logger.warning(
            "ragcite: the files for answers in the browser could not be added "
            "(%s: %s); static mode stays keyword search.",
            type(error).__name__,
            error,
            type="ragcite",
            subtype="browser",
        )
        return None


def start_encoder(app: Sphinx) -> None:
    """Start embedding the passages while Sphinx writes the pages.

    Failing costs nothing: the index embeds what is missing at the end.
    """
    try:
        records = build_records(app.env, app.builder, on_error=None)
        start(app, records)
    except Exception as error:
        logger.debug("ragcite: the encoder did not start early: %r", error)
