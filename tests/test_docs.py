"""The documentation in docs/ builds with sphinx-ragcite itself, without warnings.

One real ``python -m sphinx -b html -W --keep-going`` run (about 20 s, most of
it embedding the docs' own passages, sentences pooled); the checks read its
output. The reference pages are generated from the code (config fields, CLI
parser, OpenAPI spec) by docs/_ext/ragcite_docs.py, which warns about
anything left undocumented; the checks below also hold the hand-written
pages to the code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sphinx_ragcite.contracts import Answer, Citation, ShownPassage
from sphinx_ragcite.extension.config import fields

from helpers.builds import Builds, sphinx_build
from helpers.repo import REPO

pytest.importorskip("myst_parser", reason="the docs need the myst extra")
#: The docs build embeds every page (about 35 CPU s): out of the quick tier.
pytestmark = pytest.mark.slow
BeautifulSoup = pytest.importorskip("bs4").BeautifulSoup

DOCS = REPO / "docs"


@pytest.fixture(scope="module")
def docs_build(builds: Builds) -> Path:
    """docs/ built once per session (any worker), in place as the docs job
    builds it (its pages include files beside it, ../CHANGELOG.md), but
    with pooled sentence vectors."""

    def make(folder: Path) -> None:
        # Sentence vectors pooled from the passage pass, as the corpora are
        # built (plugins/environment.py): 34 instead of 55 CPU s; nothing checked here
        # depends on how sentence vectors are made.
        warnings = sphinx_build(
            DOCS, folder / "html", "-W", "--keep-going",
            "-D", "ragcite_sentence_pooling=passage",
            "-d", str(folder / "doctrees"),
        )  # fmt: skip
        (folder / "warnings.txt").write_text(warnings, "utf-8")

    folder = builds.once("docs", "in-place", make)
    warnings = (folder / "warnings.txt").read_text("utf-8")
    assert "WARNING" not in warnings, warnings
    assert "ERROR" not in warnings, warnings
    return folder / "html"


def page_text(built: Path, page: str) -> str:
    soup = BeautifulSoup((built / page).read_text("utf-8"), "html.parser")
    body = soup.find("div", class_="body") or soup
    return " ".join(body.get_text(" ").split())


def test_docs_build_their_own_index(docs_build: Path) -> None:
    manifest = json.loads(
        (docs_build / "_ragcite" / "manifest.json").read_text("utf-8")
    )
    assert manifest["project"] == "sphinx-ragcite"
    assert manifest["counts"]["passages"] > 100
    assert manifest["embedding"] is not None
    # Every page of the Diátaxis structure is indexed and anchored.
    passages = (docs_build / "_ragcite" / manifest["files"]["passages"]).read_text(
        "utf-8"
    )
    docnames = {json.loads(line)["docname"] for line in passages.splitlines()}
    for docname in (
        "index",
        "tutorial",
        "widget",
        "howto/own-model",
        "howto/openai-endpoint",
        "howto/static-hosting",
        "howto/reverse-proxy",
        "howto/replicas",
        "howto/passages",
        "reference/config",
        "reference/cli",
        "reference/http-api",
        "reference/index-format",
        "reference/answer-json",
        "explanation/passage-ids",
        "explanation/retrieval",
        "explanation/verification",
        "explanation/confidence",
    ):
        assert docname in docnames
    assert 'id="ch1-sec1-p1"' in (docs_build / "tutorial.html").read_text("utf-8")


def test_every_config_field_is_in_the_reference(docs_build: Path) -> None:
    html = (docs_build / "reference" / "config.html").read_text("utf-8")
    text = page_text(docs_build, "reference/config.html")
    for field in fields():
        assert f"ragcite_{field.name}" in text
        assert f'id="confval-ragcite_{field.name}"' in html
        # the help text comes from the field's metadata
        assert field.metadata["help"].split(".")[0][:40] in text


def test_every_command_and_endpoint_is_in_the_reference(docs_build: Path) -> None:
    from sphinx_ragcite.cli import build_parser

    cli = page_text(docs_build, "reference/cli.html")
    parser = build_parser()
    commands = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    for name, sub in commands.choices.items():
        assert f"usage: ragcite {name}" in cli
        for action in sub._actions:
            for option in action.option_strings:
                if action.help != "==SUPPRESS==":
                    assert option in cli, (name, option)

    pytest.importorskip("fastapi")
    from sphinx_ragcite.server.app import create_app
    from sphinx_ragcite.server.settings import ServerSettings

    api = page_text(docs_build, "reference/http-api.html")
    spec = create_app(ServerSettings(build_dir=DOCS)).openapi()
    for path, methods in spec["paths"].items():
        for method in methods:
            assert f"{method.upper()} {path}" in api
    for schema in spec["components"]["schemas"]:
        if schema not in ("HTTPValidationError", "ValidationError"):
            assert schema in api


def test_answer_json_page_names_every_field(docs_build: Path) -> None:
    text = page_text(docs_build, "reference/answer-json.html")
    for model in (Answer, Citation, ShownPassage):
        for name in model.model_fields:
            assert name in text, name


def test_index_format_page_names_every_manifest_key_and_role(docs_build: Path) -> None:
    manifest = json.loads(
        (docs_build / "_ragcite" / "manifest.json").read_text("utf-8")
    )
    text = page_text(docs_build, "reference/index-format.html")
    for key in manifest:
        assert f"{key}" in text, key
    for role, name in manifest["files"].items():
        assert role in text or role.split(".")[0] + ".*" in text, role
        # content-addressed names: the page writes the digest as <hash>
        generic = re.sub(r"\.[0-9a-f]{16}(?=[./])", ".<hash>", name)
        assert generic.rsplit("/", 1)[-1] in text, name
    for key in manifest["embedding"] or {}:
        assert key in text, key
    passages = (docs_build / "_ragcite" / manifest["files"]["passages"]).read_text(
        "utf-8"
    )
    for key in json.loads(passages.splitlines()[0]):
        assert key in text, key


def test_screenshots_are_shown_with_alt_text(docs_build: Path) -> None:
    shown = set()
    for page in docs_build.rglob("*.html"):
        soup = BeautifulSoup(page.read_text("utf-8"), "html.parser")
        for img in soup.find_all("img"):
            src = img.get("src", "")
            if "_images/" in src:
                assert len(img.get("alt", "")) > 30, (page, src)
                shown.add(src.rsplit("/", 1)[-1])
                assert (page.parent / src).resolve().is_file(), (page, src)
    expected = {p.name for p in (DOCS / "_static" / "screenshots").glob("*.png")}
    assert expected, "no screenshots in docs/_static/screenshots"
    assert expected <= shown
