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

#: The one folder that runs inside Sphinx and may import anything. Everything
#: else (the file formats in ``formats/``, the shared text contract in
#: ``text.py``, retrieval, answers, citations, the server, the CLI) runs
#: without Sphinx and imports nothing from it.
BUILD = "sphinx_ragcite.extension"
FORBIDDEN = ("sphinx", "docutils")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def side(module: str) -> str | None:
    """``build`` in ``sphinx_ragcite/extension/``, else ``query`` (root: neither)."""
    if module == BUILD or module.startswith(BUILD + "."):
        return "build"
    if module.startswith("sphinx_ragcite."):
        return "query"
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


def test_the_folders_name_the_sides() -> None:
    """The package root is the one module on neither side: Sphinx calls its
    ``setup()``, which hands over to ``extension/__init__.py``."""
    sides = {module_name(p): side(module_name(p)) for p in MODULES}
    assert [m for m, s in sides.items() if s is None] == ["sphinx_ragcite"]
    assert sides["sphinx_ragcite.extension"] == "build"
    assert sides["sphinx_ragcite.formats.manifest"] == "query"


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
from sphinx_ragcite.retrieval.site import Site
from sphinx_ragcite.server.app import create_app
from sphinx_ragcite.server.settings import ServerSettings

site = Site.load(sys.argv[1])
assert site.search("bloom", 3)
answer = AnswerEngine(site).answer("How long is the bloom?")
assert answer.citations, answer
create_app(ServerSettings(build_dir=sys.argv[1], generator="extractive"))
code = main(["cite", answer.citations[0].passage_id, "--site", sys.argv[1]])
assert code == 0, code
loaded = [m for m in sys.modules if m.split(".")[0] in ("sphinx", "docutils")]
assert not loaded, loaded
print("ok")
"""


@pytest.mark.slow
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


# -- tests, benchmarks and tools import one another as packages ------------------

#: The folders whose scripts share code: through the packages ``benchmarks``
#: and ``tools``, never by putting a folder on ``sys.path``.
SHARING = ("tests", "benchmarks", "tools")


def sys_path_edits(source: str) -> list[int]:
    """Lines of *source* that call ``insert``/``append``/``extend`` on
    ``sys.path`` (or assign to it)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"insert", "append", "extend"}:
                target = node.func.value
        elif isinstance(node, ast.Assign):
            target = node.targets[0]
        if (
            isinstance(target, ast.Attribute)
            and target.attr == "path"
            and isinstance(target.value, ast.Name)
            and target.value.id == "sys"
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.slow
def test_no_script_edits_sys_path() -> None:
    """Issue 34: shared code has one importable home (the ``benchmarks`` and
    ``tools`` packages); the test roots' ``conf.py`` files are Sphinx
    projects, which may."""
    repo = PACKAGE.parent
    found = {}
    for folder in SHARING:
        for path in sorted((repo / folder).rglob("*.py")):
            relative = path.relative_to(repo)
            if relative.parts[:2] == ("tests", "roots") or "results" in path.parts:
                continue
            lines = sys_path_edits(path.read_text("utf-8"))
            if lines:
                found[relative.as_posix()] = lines
    assert not found, found
    assert sys_path_edits("import sys\nsys.path.insert(0, 'x')\n") == [2]
