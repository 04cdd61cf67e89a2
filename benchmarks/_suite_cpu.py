"""A pytest plugin for ``suite_cost.py``: the CPU each test used.

Wall time misleads when three workers share two cores, so each test's
record is the CPU of its worker and of the children the worker reaped
meanwhile (builds and commands run as subprocesses), from ``getrusage``
before and after the test. A session fixture's cost lands on the first test
that asks for it; processes reaped only at the end of the session (Chromium,
through playwright's driver) land on the last test of their worker.

Loaded with ``-p benchmarks._suite_cpu``; writes one tab-separated line per
test to ``$RAGCITE_SUITE_CPU`` (appending: the workers share the file).
"""

from __future__ import annotations

import os
import resource
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

#: The environment variable naming the output file.
OUTPUT = "RAGCITE_SUITE_CPU"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: object) -> Iterator[None]:
    path = os.environ.get(OUTPUT)
    own0, reaped0 = _cpu()
    started = time.time()
    yield
    if not path:
        return
    own1, reaped1 = _cpu()
    marker = item.get_closest_marker("xdist_group")
    group = str(marker.args[0]) if marker and marker.args else ""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    line = "\t".join(
        [
            item.nodeid.removesuffix(f"@{group}"),  # xdist's suffix under loadgroup
            group,
            worker,
            f"{started:.2f}",
            f"{time.time() - started:.3f}",
            f"{own1 - own0:.3f}",
            f"{reaped1 - reaped0:.3f}",
        ]
    )
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")
