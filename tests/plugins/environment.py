"""The process the tests run in, set up once per process (the controller and
each xdist worker) in ``pytest_configure``: before any test is collected or
any book is built, and never as a side effect of importing a module."""

from __future__ import annotations

import importlib
import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    corpus_conf_default()
    import_sphinx_modules_untranslated()


def corpus_conf_default() -> None:
    """The third-party corpora and dev sets (never the example book) are built
    with ``ragcite_sentence_pooling = "passage"``: their sentence vectors come
    from the passage pass instead of a pass of their own, which takes about a
    third off each build (flask: 74 instead of 106 CPU seconds) and took the
    suite's corpus work from 747 to 569 CPU seconds, the most any one change
    saves. What these tests check does not depend on it: the browser engine
    reads the sentence vectors a build wrote however they were made, and the
    corpus tests check warnings, passages and anchors. The shipped default,
    one pass per sentence, is built and checked on the example book and the
    test roots (the Chinese and Japanese ones too). ``RAGCITE_CORPUS_CONF=
    pytest`` builds the corpora as shipped.

    Set in the environment (and so inherited by the xdist workers and every
    build's child process) because ``benchmarks/_harness.py`` reads it at
    each build."""
    os.environ.setdefault("RAGCITE_CORPUS_CONF", "ragcite_sentence_pooling=passage")


def import_sphinx_modules_untranslated() -> None:
    """Sphinx's domains call ``_()`` when their module is imported, and get a
    plain string in the language of the build that happens to be running:
    a worker whose first in-process build was German (the ``quickstart``
    root) kept "Parameter" and "Rückgabe" for every later English build (the
    reference manual's golden failed). Imported here, before any build, they
    keep lazy labels that follow each build's language."""
    from sphinx.application import builtin_extensions

    for name in (*builtin_extensions, "sphinx.ext.autodoc", "sphinx.ext.napoleon"):
        importlib.import_module(name)
