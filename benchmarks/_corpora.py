"""Find the third-party corpora and make buildable copies of them.

Used by ``benchmarks/_harness.py`` (which builds them) and
``tests/test_corpora.py``.

The corpora live outside the repository, in ``shared/corpora/`` next to the
clone (``<workspace>/main`` + ``<workspace>/shared``) or one level further up
(a CI clone in ``<tmp>/fresh``). ``RAGCITE_CORPORA`` overrides the search.
They are never built in place: each build gets its own copy, with
``sphinx_ragcite`` appended to (or removed from) the copy's ``extensions``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_BOOK = REPO / "example_book"
ENV_VAR = "RAGCITE_CORPORA"

#: Corpus folder -> modules its ``docs/conf.py`` needs (besides Sphinx).
CORPUS_DEPS: dict[str, tuple[str, ...]] = {
    "click-docs": (
        "click",
        "myst_parser",
        "pallets_sphinx_themes",
        "sphinx_tabs",
        "sphinxcontrib.log_cabinet",
    ),
    "requests-docs": ("requests",),
    "packaging-guide": (
        "furo",
        "sphinx_inline_tabs",
        "sphinx_copybutton",
        "sphinx_toolbox",
        "sphinx-jsonschema",  # the module's name has a dash
    ),
    # the Chinese XuanCe docs (issue 29): the dev set ``xuance_zh`` only
    "xuance-docs-zh": (
        "furo",
        "myst_parser",
        "sphinx_copybutton",
        "sphinx_tabs",
        "sphinx_design",
        "sphinx_favicon",
        "notfound",  # sphinx-notfound-page
        "sphinx_github_changelog",
    ),
    # a Japanese networking course text (issue 45): the dev set ``network_ja``
    # only; its own conf.py sets language = 'ja' and loads its local
    # extension from ``source/extensions``
    "network-doc-ja": ("myst_parser", "sphinx_rtd_theme"),
}
#: Corpora that only a dev set of ``devsets.py`` builds: the corpus
#: tests and benchmarks that loop over :data:`CORPORA` leave them out.
DEV_SET_ONLY = ("xuance-docs-zh", "network-doc-ja")
CORPORA = tuple(n for n in CORPUS_DEPS if n not in DEV_SET_ONLY)
#: The source folder of each corpus, where it is not ``docs``.
SOURCE_DIRS = {
    "packaging-guide": "source",
    "xuance-docs-zh": ".",
    "network-doc-ja": "source",
}
#: Sphinx options a corpus is built with (its conf.py sets no ``language``).
BUILD_OPTIONS: dict[str, tuple[str, ...]] = {
    "xuance-docs-zh": ("-D", "language=zh_CN"),
}
#: Corpus -> installed distributions its autodoc pages read their text from.
AUTODOC: dict[str, tuple[str, ...]] = {"requests-docs": ("requests",)}
#: A build's WARNING/ERROR lines.
PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL|SEVERE)\b")

_IGNORE = shutil.ignore_patterns("_build", "__pycache__", ".ipynb_checkpoints")
_ADD = '\nextensions.append("sphinx_ragcite")  # added by benchmarks/_corpora.py\n'
_REMOVE = (
    '\nextensions = [e for e in extensions if e != "sphinx_ragcite"]'
    "  # added by benchmarks/_corpora.py\n"
)


def corpora_dir() -> Path | None:
    """The ``shared/corpora`` folder, or None when it cannot be found."""
    override = os.environ.get(ENV_VAR)
    if override:
        path = Path(override).expanduser()
        return path if path.is_dir() else None
    for base in (REPO.parent, REPO.parent.parent):
        path = base / "shared" / "corpora"
        if path.is_dir():
            return path
    return None


def source_dir(name: str) -> str:
    """The folder of corpus *name* that holds its ``conf.py``."""
    return SOURCE_DIRS.get(name, "docs")


def corpora_available() -> bool:
    """True when at least one known corpus is present."""
    return any(corpus_path(n) is not None for n in CORPORA)


def corpus_path(name: str) -> Path | None:
    """``shared/corpora/<name>``, or None when absent."""
    root = corpora_dir()
    if root is None or not (root / name / source_dir(name) / "conf.py").is_file():
        return None
    return root / name


def build_env(srcdir: Path) -> dict[str, str]:
    """The environment for building a prepared copy: its root on ``PYTHONPATH``.

    The packaging guide imports its own extension (``pug_sphinx_extensions``)
    from the corpus root; the others do not mind.
    """
    env = dict(os.environ)
    root = str(srcdir.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def missing_deps(name: str) -> list[str]:
    """Modules needed to build corpus *name* that are not importable."""
    missing = []
    for module in CORPUS_DEPS.get(name, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # parent package missing
            found = False
        if not found:
            missing.append(module)
    return missing


def autodoc_versions(name: str) -> str:
    """The installed versions of what corpus *name*'s API pages are read from."""
    return ",".join(importlib.metadata.version(d) for d in AUTODOC.get(name, ()))


def problems(stderr: str, roots: list[Path]) -> Counter[str]:
    """A build's WARNING/ERROR lines, with its temporary *roots* taken out."""
    names = sorted({str(r) for r in roots} | {str(r.resolve()) for r in roots})
    found: Counter[str] = Counter()
    for line in stderr.splitlines():
        if PROBLEM.search(line):
            for name in sorted(names, key=len, reverse=True):
                line = line.replace(name, "<TMP>")
            found[line.strip()] += 1
    return found


def edit_conf(docs: Path, with_ragcite: bool) -> None:
    """Add ``sphinx_ragcite`` to ``docs/conf.py``'s extensions, or remove it."""
    conf = docs / "conf.py"
    with conf.open("a", encoding="utf-8") as f:
        f.write(_ADD if with_ragcite else _REMOVE)


def copy_tree(src: Path, target: Path) -> None:
    """*src* copied to *target* (replaced), writable: the shared copy is not."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, target, ignore=_IGNORE)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


def prepare_corpus(name: str, dest: Path | str, with_ragcite: bool) -> Path:
    """Copy ``shared/corpora/<name>`` to ``dest/<name>``; return its source folder.

    The whole corpus folder is copied (pages include ``../CHANGES.md`` and
    the like). With *with_ragcite*, ``extensions.append("sphinx_ragcite")`` is
    added to the copy's ``conf.py``; ``-D extensions=`` would replace the
    list instead of extending it.
    """
    src = corpus_path(name)
    if src is None:
        raise FileNotFoundError(f"corpus {name!r} not found (set {ENV_VAR})")
    target = Path(dest) / name
    copy_tree(src, target)
    docs = target / source_dir(name)
    if with_ragcite:
        edit_conf(docs, with_ragcite=True)
    return docs


def prepare_example_book(dest: Path | str, with_ragcite: bool) -> Path:
    """Copy ``example_book`` to ``dest/example_book``; return the copy.

    Its conf.py already lists ``sphinx_ragcite``; without *with_ragcite* the
    copy drops it from ``extensions``.
    """
    target = Path(dest) / "example_book"
    copy_tree(EXAMPLE_BOOK, target)
    if not with_ragcite:
        edit_conf(target, with_ragcite=False)
    return target
