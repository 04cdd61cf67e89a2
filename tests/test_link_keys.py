"""Link keys: Python's ``link_key`` and the widget's ``linkKey`` on one case file.

The build keys ``_ragcite/moved.js`` with ``link_key``; the widget looks an
old link up with its JS twin. ``tests/golden/link_keys.json`` holds the cases
both must agree on; ``js/test/deeplinks.test.js`` runs the JS side on them.
"""

from __future__ import annotations

import json

import pytest

from helpers.builds import build, read_passages
from helpers.repo import REPO

GOLDEN = json.loads((REPO / "tests" / "golden" / "link_keys.json").read_text("utf-8"))


def _link_key():
    from sphinx_ragcite.extension.link_history import link_key

    return link_key


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["url"])
def test_python_link_key_gives_the_golden_key(case: dict) -> None:
    assert _link_key()(case["url"]) == case["key"]


def test_the_cases_cover_every_kind_of_page_url() -> None:
    urls = [c["url"] for c in GOLDEN["cases"]]
    assert any(u.startswith("index.html#") for u in urls)  # root page, singlehtml
    assert any("/index.html#" in u for u in urls)  # a folder's index page
    assert any(u.split("#")[0].endswith("/") for u in urls)  # dirhtml
    assert any("%" in u for u in urls)  # percent-encoded names
    assert any("?" in o for c in GOLDEN["cases"] for o in c["opened"])  # queries


@pytest.mark.parametrize(
    ("builder", "url"),
    [
        ("html", "caf%C3%A9/r%C3%A9sum%C3%A9.html"),
        ("dirhtml", "caf%C3%A9/r%C3%A9sum%C3%A9/"),
    ],
)
def test_sphinx_writes_page_urls_as_the_cases_do(
    make_app, tmp_path, builder: str, url: str
):
    """Passage URLs are quoted once for every builder (Sphinx's dirhtml names
    its pages unquoted, ``café/résumé/``; the cases hold that form too)."""
    src = tmp_path / "src"
    (src / "café").mkdir(parents=True)
    (src / "conf.py").write_text(
        'extensions = ["sphinx_ragcite"]\nragcite_embeddings = False\n', "utf-8"
    )
    (src / "index.rst").write_text(
        "Home\n====\n\n.. toctree::\n\n   café/résumé\n", "utf-8"
    )
    (src / "café" / "résumé.rst").write_text(
        "Résumé\n======\n\nA paragraph about the résumé page.\n", "utf-8"
    )
    app = build(make_app, builder, src)
    written = {r["url"].split("#")[0] for r in read_passages(app.outdir)}
    assert url in written
    golden = {c["url"].split("#")[0] for c in GOLDEN["cases"]}
    assert url in golden
