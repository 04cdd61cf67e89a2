"""How the suite is tiered, grouped on workers and ordered: a pytest plugin
(registered in ``conftest.py``'s ``pytest_plugins``).

- Tiers: a test marked ``corpora``, ``llm`` or ``packaging``, or driving
  Chromium, is ``slow`` too, so ``-m "not slow"`` is the quick tier.
- Workers: under ``--dist loadgroup`` (``addopts``) each test has an
  ``xdist_group``: its module, a module's Chromium tests apart, the tests of
  a third-party corpus by corpus (``xdist_group``).
- Order: corpus tests first, dearest first; Chromium tests last, dearest
  first (``GROUP_SECONDS``, a measured table; ``pytest_collection_modifyitems``).
- ``-n auto`` is one worker more than the cores, at most 5.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from helpers.repo import benchmark


def uses_browser(item: pytest.Item) -> bool:
    """Whether *item* drives Chromium (asks for ``browser`` or ``chromium``)."""
    return not {"browser", "chromium"}.isdisjoint(getattr(item, "fixturenames", ()))


# -- tiers and workers -----------------------------------------------------------


#: What makes a test slow besides these markers: driving Chromium.
SLOW_MARKERS = ("corpora", "llm", "packaging")


def xdist_group(item: pytest.Item) -> str:
    """The worker group of *item* under ``--dist loadgroup``: its module, so a
    module's fixtures are made once; a module's Chromium tests apart from its
    others (they run last, see ``pytest_collection_modifyitems``); the tests
    on a third-party corpus by corpus
    (``corpus:NAME``, from the ``corpus`` or dev-set ``name`` they are
    parametrized with), so each corpus is built once, by the worker that then
    runs every test on it, while the other worker builds another one."""
    if uses_browser(item):
        return "browser:" + item.nodeid.split("::")[0]
    callspec = getattr(item, "callspec", None)
    if item.get_closest_marker("corpora") is not None and callspec is not None:
        params = callspec.params
        if "corpus" in params:
            return f"corpus:{params['corpus']}"
        if "name" in params:
            sets = benchmark("devsets").CORPUS_SETS
            return f"corpus:{sets.get(params['name'], (params['name'],))[0]}"
    return item.nodeid.split("::")[0]


def pytest_itemcollected(item: pytest.Item) -> None:
    """Tiers and workers. A test marked ``corpora``, ``llm`` or ``packaging``,
    or driving Chromium, is ``slow`` too: ``-m "not slow"`` is the quick tier.
    Each test gets its ``xdist_group`` (see ``xdist_group``) unless it names
    one itself."""
    if uses_browser(item) or any(item.get_closest_marker(m) for m in SLOW_MARKERS):
        item.add_marker(pytest.mark.slow)
    if item.get_closest_marker("xdist_group") is None:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item)))


# -- the order tests start in ------------------------------------------------


#: Seconds each group kept its worker busy in a run of the whole suite
#: (2026-11-28, fresh clone, 3 workers on 2 cores): each phase starts its
#: dearest groups first (a longest-first schedule), so the worker that
#: finishes last finishes soon after the others. The corpus groups are
#: mostly the encoder; the Chromium groups run last (see
#: ``pytest_collection_modifyitems``), where a 58 s group handed out last
#: kept one worker busy 35 s after another had nothing left.
GROUP_SECONDS = {
    "corpus:packaging-guide": 149,
    "corpus:xuance-docs-zh": 139,
    "corpus:flask": 110,
    "corpus:click-docs": 95,
    "corpus:attrs": 54,
    "corpus:squad": 53,
    "corpus:rqalpha_zh": 52,
    "corpus:network-doc-ja": 125,
    "corpus:requests-docs": 50,
    "corpus:jinja": 44,
    "corpus:emcee": 43,
    "browser:tests/test_widget.py": 58,
    "browser:tests/test_browser_answers.py": 51,
    "browser:tests/test_widget_versions.py": 19,
    "browser:tests/test_browser_encoder.py": 19,
    "browser:tests/test_widget_cjk.py": 12,
    "browser:tests/test_widget_feedback.py": 8,
    "browser:tests/test_deeplinks_sphinx.py": 6,
}


def _phase(item: pytest.Item) -> tuple[int, int]:
    """Corpus tests first, dearest first; then the rest; Chromium last,
    dearest first."""
    marker = item.get_closest_marker("xdist_group")
    group = str(marker.args[0]) if marker and marker.args else ""
    if uses_browser(item):
        return (2, -GROUP_SECONDS.get(group, 0))
    if group.startswith("corpus:"):
        return (0, -GROUP_SECONDS.get(group, 60))
    return (1, 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The order tests start in (xdist hands out groups in this order:
    ``--no-loadscope-reorder`` in ``addopts``). Corpus tests run first,
    dearest first, and tests that drive Chromium last. Started beside the
    corpus builds instead, the Chromium groups took a worker the builds
    needed: a fresh clone's run took 712 s against 600-650 s (2026-11-28),
    so the order is a measured choice, no longer a constraint (``run_async``).
    The order is otherwise kept."""
    items[:] = sorted(items, key=_phase)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores (at most 4 cores' worth).
    Outside the corpus builds a worker waits for about a quarter of its time (on
    Chromium, a server it started, llama.cpp, a build another worker makes),
    and the extra worker runs tests in those gaps."""
    return min(os.cpu_count() or 1, 4) + 1


def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under ``--dist loadgroup`` a worker tells the scheduler each test's
    group by the ``@group`` pytest-xdist appends to its node ID. Where that
    append has no effect (pytest 9.2 with pytest-xdist 3.8: pytest-xdist#1386)
    every test is scheduled alone, and a module's shared builds are made on
    both workers, silently: stop and say so instead."""
    if (
        ids
        and node.config.getoption("dist") == "loadgroup"
        and not any("@" in i for i in ids)
    ):
        pytest.exit(
            "pytest-xdist's --dist loadgroup has no effect with pytest "
            f"{pytest.__version__} (no node ID carries its @group): install the "
            'test extra\'s pytest (pip install -e ".[test]"), or run with -n 0',
            returncode=4,
        )
