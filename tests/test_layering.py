"""Build time and query time meet only through ``_ragcite/`` files.

Two checks keep it so: a walk over every module's imports (including those
inside functions and ``TYPE_CHECKING`` blocks) that fails on any import from
the query side to the build side or to Sphinx/docutils, and a fresh
interpreter in which Sphinx and docutils cannot be imported at all that
still searches, answers, cites and serves a built site.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import sphinx_ragcite

PACKAGE = Path(sphinx_ragcite.__file__).parent

#: Runs inside Sphinx: may import anything.
BUILD = (
    "sphinx_ragcite.extension",
    "sphinx_ragcite.config",
    "sphinx_ragcite.assets",
    "sphinx_ragcite.passages",
    "sphinx_ragcite.index.build",
    "sphinx_ragcite.index.writer",
    "sphinx_ragcite.index.link_history",
    "sphinx_ragcite.index.cache",
)
#: Runs without Sphinx: the server, the CLI, and the file formats both share.
#: A module is on the build side if BUILD names it, else here if this does.
QUERY = (
    "sphinx_ragcite.__main__",
    "sphinx_ragcite.contracts",
    "sphinx_ragcite.errors",
    "sphinx_ragcite.retrieval",
    "sphinx_ragcite.qdrant_store",
    "sphinx_ragcite.sites",
    "sphinx_ragcite.evaluate",
    "sphinx_ragcite.answer",
    "sphinx_ragcite.cite",
    "sphinx_ragcite.server",
    "sphinx_ragcite.cli",
    "sphinx_ragcite.mcp",
    # every _ragcite/ format's writer and reader (build-only modules above)
    "sphinx_ragcite.index",
)
FORBIDDEN = ("sphinx", "docutils")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def side(module: str) -> str | None:
    for name, prefixes in (("build", BUILD), ("query", QUERY)):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    return None


def imports(path: Path) -> list[str]:
    """Every module *path* imports, at any depth, relative imports resolved."""
    tree = ast.parse(path.read_text("utf-8"))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    parts = package.split(".")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*parts[: len(parts) - node.level + 1], base])
            found.append(base.strip("."))
            found += [f"{base}.{alias.name}".strip(".") for alias in node.names]
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_on_one_side() -> None:
    unplaced = [
        module_name(p)
        for p in MODULES
        if side(module_name(p)) is None and module_name(p) != "sphinx_ragcite"
    ]
    assert unplaced == [], "add these modules to BUILD or QUERY"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_query_side_imports_nothing_of_the_build_side(path: Path) -> None:
    if side(module_name(path)) != "query":
        return
    wrong = [
        name
        for name in imports(path)
        if side(name) == "build" or name.split(".")[0] in FORBIDDEN
    ]
    assert wrong == []


def test_the_package_root_imports_sphinx_only_for_types() -> None:
    """``import sphinx_ragcite`` is what every query command does first."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text("utf-8"))
    for node in tree.body:  # module level only: setup() imports lazily
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            assert not any(n.split(".")[0] in FORBIDDEN for n in names)


#: Runs in a fresh interpreter. Some Sphinx extensions import Sphinx from a
#: ``.pth`` file at start-up (sphinx-toolbox does), so whatever got in that
#: way is dropped first; then any import of Sphinx or docutils raises.
FRESH = """
import importlib, json, sys
for name in [m for m in sys.modules if m.split(".")[0] in ("sphinx", "docutils")]:
    del sys.modules[name]

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("sphinx", "docutils"):
            raise ImportError(f"query side imported {name}")
        return None

sys.meta_path.insert(0, Block())
modules = json.loads(sys.argv[2])
for module in modules:
    importlib.import_module(module)

from sphinx_ragcite.answer.engine import AnswerEngine
from sphinx_ragcite.cli import main
from sphinx_ragcite.retrieval import Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

site = Site.load(sys.argv[1])
assert site.search("bloom", 3)
answer = AnswerEngine(site).answer("How long should the bloom take?")
assert answer.citations, answer
create_app(ServerSettings(build_dir=sys.argv[1], generator="extractive"))
code = main(["cite", answer.citations[0].passage_id, "--site", sys.argv[1]])
assert code == 0, code
loaded = [m for m in sys.modules if m.split(".")[0] in ("sphinx", "docutils")]
assert not loaded, loaded
print("ok")
"""


def test_query_side_runs_where_sphinx_cannot_be_imported(example_site: Path) -> None:
    import json

    modules = sorted(
        module_name(p)
        for p in MODULES
        if side(module_name(p)) == "query"
        and module_name(p) != "sphinx_ragcite.__main__"
    )
    result = subprocess.run(
        [sys.executable, "-c", FRESH, str(example_site), json.dumps(modules)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
