"""Where a build's seconds go, stage by stage, for authors and the benchmarks.

Sphinx's own reading and writing are the gaps between its events; the
extension's stages are timed where they run. Under ``-j N`` documents are
chunked in worker processes, whose seconds are not counted here. The figures
go to the build log (``-v``) and to ``<doctrees>/ragcite-stages.json``.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from sphinx.util import logging

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sphinx.application import Sphinx

logger = logging.getLogger(__name__)

FILE_NAME = "ragcite-stages.json"

_builds: WeakKeyDictionary[Sphinx, Stages] = WeakKeyDictionary()


class Stages:
    """Seconds per stage, plus the times Sphinx's phases started."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.marks: dict[str, float] = {}

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - started

    def mark(self, phase: str) -> None:
        self.marks.setdefault(phase, time.perf_counter())

    def report(self) -> dict[str, float]:
        """Sphinx's reading (less chunking) and writing, then the extension's stages."""
        out: dict[str, float] = {}
        marks = self.marks
        if "inited" in marks and "read" in marks:
            out["read"] = marks["read"] - marks["inited"] - self.seconds.get("chunk", 0)
        if "read" in marks and "finished" in marks:
            out["write pages"] = marks["finished"] - marks["read"]
        out.update(self.seconds)
        return {k: round(max(v, 0.0), 4) for k, v in out.items()}


def of(app: Sphinx) -> Stages:
    if app not in _builds:
        _builds[app] = Stages()
    return _builds[app]


def mark(phase: str):  # type: ignore[no-untyped-def]
    """An event handler that notes when *phase* began."""

    def handler(app: Sphinx, *args: object) -> None:
        of(app).mark(phase)

    return handler


def save(app: Sphinx) -> None:
    """Log the stages and keep them beside the doctrees (a failure costs nothing)."""
    stages = of(app).report()
    logger.verbose(
        "ragcite: seconds by stage: %s",
        ", ".join(f"{k} {v:.2f}" for k, v in stages.items()),
    )
    with suppress(OSError):
        Path(app.doctreedir, FILE_NAME).write_text(
            json.dumps(stages, indent=1) + "\n", encoding="utf-8"
        )
