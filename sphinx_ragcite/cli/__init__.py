"""The ``ragcite`` command: parsing and terminal output live here, nowhere else."""

from __future__ import annotations

from sphinx_ragcite.cli.commands import main
from sphinx_ragcite.cli.parser import build_parser

__all__ = ["build_parser", "main"]
