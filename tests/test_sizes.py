"""No class of the package outgrows 300 lines, no function 150.

A class past 300 lines is several ideas in one room (``QuestionLog`` reached
307 before its file handling moved to ``questions/logfile.py``); the limits
are the ones the widget's JS keeps for a factory and the functions in it
(``js/test/sizes.test.js``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import sphinx_ragcite

PACKAGE = Path(sphinx_ragcite.__file__).parent
CLASS_LINES = 300
FUNCTION_LINES = 150


def too_long(source: str, where: str) -> list[str]:
    """``where:line name (n lines)`` of each class or function over its limit."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            limit = CLASS_LINES
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            limit = FUNCTION_LINES
        else:
            continue
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        if lines > limit:
            found.append(f"{where}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_class_or_function_outgrows_its_limit() -> None:
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in too_long(path.read_text("utf-8"), path.relative_to(PACKAGE))
    ]
    assert found == []
    body = "\n".join(f"    x = {n}" for n in range(CLASS_LINES))
    assert too_long(f"class A:\n{body}\n", "a.py") == ["a.py:1 A (301 lines)"]
