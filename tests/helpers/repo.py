"""The checkout: its folders, and the ``benchmarks`` package by name."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
ROOTS = REPO / "tests" / "roots"
EXAMPLE_BOOK = REPO / "example_book"


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``: the package ``benchmarks`` (the code tests,
    benchmarks and tools share), imported by its name there."""
    return importlib.import_module(f"benchmarks.{name}")
