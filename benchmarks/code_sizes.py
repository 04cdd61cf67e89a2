"""The largest files, classes and functions on both sides (issue 43's note):
what a newcomer meets first. Python through ``ast``, JS through the
TypeScript compiler (``js/test/sizes.js``, the same measure the size test
enforces).

    .venv/bin/python benchmarks/code_sizes.py [--tree DIR] [--top 10] [--out F]

``--tree`` measures another checkout (e.g. ``git archive <commit>`` unpacked)
with this checkout's measuring code.
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._harness import RESULTS, envelope, table, write_result

REPO = Path(__file__).resolve().parents[1]
PY_FOLDERS = ("sphinx_ragcite", "tests", "benchmarks", "tools")


def python_sizes(tree: Path) -> dict[str, list[dict[str, Any]]]:
    files, functions, classes = [], [], []
    for folder in PY_FOLDERS:
        for path in sorted((tree / folder).rglob("*.py")):
            rel = path.relative_to(tree).as_posix()
            if "/results/" in rel or "/.venv/" in rel:
                continue
            text = path.read_text("utf-8")
            files.append({"name": rel, "lines": text.count("\n")})
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    functions.append(_span(rel, node))
                elif isinstance(node, ast.ClassDef):
                    classes.append(_span(rel, node))
    return {"files": files, "functions": functions, "classes": classes}


def _span(rel: str, node: ast.AST) -> dict[str, Any]:
    start = node.lineno  # type: ignore[attr-defined]
    end = node.end_lineno or start  # type: ignore[attr-defined]
    name = getattr(node, "name", "?")
    return {"name": f"{rel}:{start} {name}", "lines": end - start + 1}


def js_sizes(tree: Path) -> dict[str, list[dict[str, Any]]]:
    """Files and functions of ``tree/js/*.js`` (the module-level IIFE is the
    file's scope, not a function), by the size test's own measure."""
    script = REPO / "js" / "test" / "sizes.js"
    run = ["node", str(script), "--json", str(tree / "js")]
    out = subprocess.run(run, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(out.stdout)


def top(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: -r["lines"])[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS / "code_sizes.json")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"tree": str(args.tree)}
    for side, sizes in (
        ("python", python_sizes(args.tree)),
        ("js", js_sizes(args.tree)),
    ):
        result[side] = {kind: top(rows, args.top) for kind, rows in sizes.items()}
        result[side]["totals"] = {
            kind: {"count": len(rows), "lines": sum(r["lines"] for r in rows)}
            for kind, rows in sizes.items()
        }
        for kind, rows in result[side].items():
            if kind == "totals":
                continue
            print(f"\n{side} {kind}")
            print(
                table(["name", "lines"], [[r["name"], str(r["lines"])] for r in rows])
            )
    write_result(args.out, {**envelope("code_sizes"), **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
