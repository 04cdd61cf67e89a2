"""The ``ragcite_*`` configuration values, declared once and validated together."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sphinx import version_info
from sphinx.errors import ConfigError
from sphinx.util import logging

from sphinx_ragcite.contracts import SITE_NAME, STYLES

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.config import Config

logger = logging.getLogger(__name__)

Rebuild = Literal["env", "html", ""]


#: ``ragcite_sentence_pooling`` values.
POOLINGS = ("separate", "passage")
#: ``ragcite_encoder`` values.
ENCODERS = ("auto", "english", "multilingual")
#: ``ragcite_browser_dense`` values.
BROWSER_DENSE = ("auto", "exact", "approximate")
#: ``ragcite_word_segmenter`` values.
SEGMENTERS = ("auto", "jieba", "none")


def _opt(
    default: Any,
    rebuild: Rebuild,
    help: str,  # noqa: A002
    types: frozenset[type] = frozenset(),
) -> Any:
    return field(
        default=default, metadata={"rebuild": rebuild, "help": help, "types": types}
    )


@dataclass(frozen=True)
class RagciteConfig:
    """Every ``ragcite_<name>`` option; field metadata drives registration."""

    passage_words: int = _opt(
        120,
        "env",
        "Soft upper bound on words per passage: consecutive blocks of one section "
        "are merged while the passage stays within it. A single longer block "
        "stays whole (its anchor needs an element).",
    )
    word_segmenter: str = _opt(
        "auto",
        "",
        "Word boundaries for the index of a Chinese book. auto: jieba when it "
        "is installed (the zh extra), else plain character bigrams; jieba: warn "
        "when it is missing; none: plain bigrams.",
    )
    exclude: tuple[str, ...] = _opt(
        (),
        "env",
        "Glob patterns of docnames whose documents get no passages.",
    )
    ignore_classes: tuple[str, ...] = _opt(
        ("no-search", "ragcite-ignore"),
        "env",
        "Elements carrying one of these classes are left out of passages.",
    )

    embeddings: bool = _opt(
        True,
        "",
        "Compute dense embeddings for hybrid retrieval. Turn off for huge books: "
        "the index is then BM25 only.",
    )
    encoder: str = _opt(
        "auto",
        "",
        "Which sentence encoder embeds the book. auto: all-MiniLM-L6-v2 for an "
        "English book (language unset or en*), multilingual-e5-small for any "
        "other language; english or multilingual: that one. "
        "ragcite_embedding_model, when set, wins.",
    )
    embedding_model: str = _opt(
        "",
        "",
        "Folder holding model.onnx and tokenizer.json of a sentence encoder "
        "(relative to conf.py). Empty: the encoder ragcite_encoder picks.",
    )
    sentence_vectors: bool = _opt(
        True,
        "",
        "Also embed every sentence at build time, so the first question to a "
        "passage does not wait for its sentences to be embedded (~2 KiB per "
        "passage in _ragcite/; the server maps, not loads, them).",
    )
    sentence_pooling: str = _opt(
        "separate",
        "",
        "How sentence vectors are made. separate: each sentence its own "
        "encoder pass; passage: pooled from the passage pass's token vectors, "
        "no second pass. See the build-cost benchmark for the choice.",
    )
    embedding_max_tokens: int = _opt(
        0,
        "",
        "Word pieces per passage the encoder sees; longer passages are truncated. "
        "0: the encoder's own (256 for all-MiniLM-L6-v2, 192 for "
        "multilingual-e5-small, which costs twice as much per piece).",
    )
    cache_dir: str = _opt(
        "",
        "",
        "Folder that keeps computed embeddings between builds, clean ones "
        "included, keyed by model, settings and text (relative to conf.py). "
        "Empty: $SPHINX_RAGCITE_CACHE_DIR if set, else the user cache folder "
        '(~/.cache/sphinx-ragcite or $XDG_CACHE_HOME/sphinx-ragcite). "none": '
        "kept with the doctrees only, so a clean build embeds everything.",
    )
    cache_max_mb: int = _opt(
        500,
        "",
        "Size bound of the embedding cache in MiB: over it, the least recently "
        "used files are deleted until it is under 90% of the bound.",
    )
    cache_verify: int | str = _opt(
        "auto",
        "",
        "How many cached vectors the encoder computes again to check the cache "
        "(a folder others can write may hold altered vectors). auto: a few, "
        "whenever the encoder runs anyway; a number: that many on every build "
        "that reads the cache, loading the encoder on a build that needs no "
        "new vector; 0: never. On a mismatch the build warns and computes "
        "every vector again.",
        types=frozenset({str, int}),
    )

    browser_answers: bool = _opt(
        True,
        "",
        "Answer questions in the browser when no answer server runs "
        "(static hosting): ships the encoder model, its tokenizer, the answer "
        "ranker, onnxruntime-web and per-passage shards in _ragcite/ (~38 MB, "
        "downloaded only when a reader asks). False: static mode searches the "
        "passages by keywords only.",
    )
    browser_dense: str = _opt(
        "auto",
        "",
        "How the answer engine in the browser searches passage vectors. exact: it "
        "downloads every vector (388 bytes a passage); approximate: a code of "
        "each passage up front and, per question, the vectors of the clusters "
        "it probes (the server then searches the same way, so both answer "
        "alike); auto: approximate from 2,000 passages on.",
    )

    link_history: str = _opt(
        "",
        "",
        "File that remembers which text each passage ID named, so deep links made "
        "before an edit still reach their text (relative to conf.py). Empty: kept "
        "with the doctrees, so a clean build forgets it; a site built from a fresh "
        'clone on CI sets a path and commits the file. "none": no redirects.',
    )

    citation_style: str = _opt(
        "plain",
        "",
        "How source lists name a passage: plain (chapter, section, link), apa, "
        "ieee, acm or chicago. The default of ragcite ask, the server and the widget.",
    )
    show_page: bool = _opt(
        True,
        "",
        "Add the page to a source where it is known (p. 12).",
    )
    link_to_source: bool = _opt(
        True,
        "",
        "Link each source to its passage (page URL with the passage anchor).",
    )
    max_quote_length: int = _opt(
        200,
        "",
        "Characters of a supporting quote shown before it is cut at a word (…).",
    )

    llms_txt: bool = _opt(
        True,
        "html",
        "Write llms.txt, llms-full.txt and a Markdown copy of each page (page.html.md) "
        "whose paragraphs keep their passage IDs, for assistants that read the site "
        "(llmstxt.org), and llms.txt v2 <link> tags to them in each page's head. "
        "HTML builders only.",
    )

    widget: bool = _opt(
        True,
        "html",
        "Add the reader widget (ask panel, cited answers, deep-link highlights) "
        "to every HTML page. False leaves the pages as Sphinx made them.",
    )
    server_url: str = _opt(
        "",
        "html",
        "Base URL of the answer server the widget asks (its API is <url>/api/). "
        "Empty: a ragcite serve that serves this site, at the site root or "
        'the folder above it (several sites). "none": no server, and no '
        "request for one: questions are answered in the browser.",
    )
    shortcut: str = _opt(
        "Mod+/",
        "html",
        'Keyboard shortcut that opens the widget, e.g. "Mod+/" (Cmd on macOS, '
        'Ctrl elsewhere), "Alt+A" or "/". Empty: no shortcut.',
    )

    widget_scope: str = _opt(
        "site",
        "html",
        'Which sites the widget asks when one server serves several: "site" '
        '(this site and version only) or "all" (every site it serves, e.g. '
        "for a portal). A page says so for itself with the metadata "
        "ragcite_scope.",
    )
    site_name: str = _opt(
        "",
        "html",
        "The name of this site on a server of several (ragcite serve --site "
        "NAME=...). Empty: the folder the site is served from below the "
        "server (/NAME/).",
    )

    @classmethod
    def from_sphinx(cls, config: Config) -> RagciteConfig:
        return cls(**{f.name: getattr(config, f"ragcite_{f.name}") for f in fields()})


def fields() -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(RagciteConfig)


def register(app: Sphinx) -> None:
    for f in fields():
        # Sphinx 7.3 has no ``description`` (added in 7.4).
        described = (
            {"description": f.metadata["help"]} if version_info >= (7, 4) else {}
        )
        app.add_config_value(
            f"ragcite_{f.name}",
            f.default,
            f.metadata["rebuild"],
            types=(
                frozenset({list, tuple})
                if isinstance(f.default, tuple)
                else f.metadata["types"]
            ),
            **described,
        )
    app.connect("config-inited", validate)


def _as_str_tuple(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple, set, frozenset)) and all(
        isinstance(v, str) for v in value
    ):
        return tuple(sorted(value) if isinstance(value, (set, frozenset)) else value)
    return None


def _int_in(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def validate(app: Sphinx, config: Config) -> None:
    """Normalise values and raise one ConfigError listing every problem."""
    problems: list[str] = []
    words = config.ragcite_passage_words
    if not _int_in(words, 20, 2000):
        problems.append(
            f"ragcite_passage_words must be an integer from 20 to 2000, got {words!r}"
        )
    tokens = config.ragcite_embedding_max_tokens
    if tokens != 0 and not _int_in(tokens, 16, 8192):
        problems.append(
            "ragcite_embedding_max_tokens must be 0 (the encoder's own) or an "
            "integer from 16 to 8192, "
            f"got {tokens!r}"
        )
    if not isinstance(config.ragcite_embeddings, bool):
        problems.append("ragcite_embeddings must be True or False")
    if not isinstance(config.ragcite_sentence_vectors, bool):
        problems.append("ragcite_sentence_vectors must be True or False")
    for name, allowed in (
        ("encoder", ENCODERS),
        ("word_segmenter", SEGMENTERS),
        ("sentence_pooling", POOLINGS),
        ("browser_dense", BROWSER_DENSE),
    ):
        value = getattr(config, f"ragcite_{name}")
        if value not in allowed:
            problems.append(
                f"ragcite_{name} must be one of "
                + ", ".join(repr(p) for p in allowed)
                + f", got {value!r}"
            )
    if not isinstance(config.ragcite_embedding_model, str):
        problems.append("ragcite_embedding_model must be a folder path (a string)")
    if not isinstance(config.ragcite_link_history, str):
        problems.append('ragcite_link_history must be a file path, "none" or ""')
    for name in ("exclude", "ignore_classes"):
        value = _as_str_tuple(getattr(config, f"ragcite_{name}"))
        if value is None:
            problems.append(f"ragcite_{name} must be a list of strings")
        else:
            setattr(config, f"ragcite_{name}", value)
    verify = config.ragcite_cache_verify
    if isinstance(verify, str) and re.fullmatch(r"\s*[0-9]+\s*", verify):
        config.ragcite_cache_verify = int(verify)  # -D gives a string
    _check_cosmetic_options(config)
    if problems:
        raise ConfigError("sphinx-ragcite: " + "; ".join(problems))


_BOOL = (lambda v: isinstance(v, bool), "True or False")

#: Cosmetic options: a bad value warns and falls back to the default.
_COSMETIC: dict[str, tuple[Any, str]] = {
    "citation_style": (lambda v: v in STYLES, "one of " + ", ".join(STYLES)),
    "show_page": _BOOL,
    "link_to_source": _BOOL,
    "max_quote_length": (
        lambda v: _int_in(v, 20, 100_000),
        "an integer from 20 to 100000",
    ),
    "cache_dir": (lambda v: isinstance(v, str), 'a folder path, "none" or ""'),
    "cache_max_mb": (
        lambda v: _int_in(v, 1, 1_000_000),
        "an integer from 1 to 1000000",
    ),
    "cache_verify": (
        lambda v: v == "auto" or _int_in(v, 0, 100_000),
        '"auto" or an integer from 0 to 100000',
    ),
    "llms_txt": _BOOL,
    "browser_answers": _BOOL,
    "widget": _BOOL,
    "server_url": (
        lambda v: (
            isinstance(v, str)
            and (v in ("", "none") or v.startswith(("http://", "https://", "/")))
        ),
        'an http(s) URL, a path starting with "/", "none" or ""',
    ),
    "shortcut": (
        lambda v: isinstance(v, str) and len(v) <= 40 and "\n" not in v,
        'a key combination such as "Mod+/" or ""',
    ),
    "widget_scope": (lambda v: v in ("site", "all"), '"site" or "all"'),
    "site_name": (
        lambda v: isinstance(v, str) and (v == "" or bool(SITE_NAME.match(v))),
        "a site name of ragcite serve --site (letters, digits, '.', '_', '-') or \"\"",
    ),
}


def _check_cosmetic_options(config: Config) -> None:
    defaults = {f.name: f.default for f in fields()}
    for name, (valid, expected) in _COSMETIC.items():
        key = f"ragcite_{name}"
        value = getattr(config, key)
        if isinstance(value, str):
            value = value.strip()
            if name == "citation_style":
                value = value.lower()
            setattr(config, key, value)
        if not valid(value):
            logger.warning(
                "%s must be %s, got %r; using %r",
                key,
                expected,
                value,
                defaults[name],
                type="ragcite",
                subtype="config",
            )
            setattr(config, key, defaults[name])
