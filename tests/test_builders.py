"""Non-HTML builders still work and get no index, no anchors, no assets."""

from __future__ import annotations

import pytest
from sphinx.errors import ConfigError

from helpers.builds import build


@pytest.mark.parametrize("builder", ["latex", "text", "man", "epub"])
def test_other_builders_are_untouched(make_app, srcdir, builder):
    app = build(make_app, builder, srcdir)
    warnings = app.warning.getvalue()
    if builder == "epub":  # epub checks metadata the test root does not set
        warnings = "\n".join(
            w for w in warnings.splitlines() if "epub" not in w.lower()
        )
    assert warnings.strip() == ""
    assert not (app.outdir / "_ragcite").exists()
    for path in app.outdir.rglob("*"):
        if path.is_file() and path.suffix in {".tex", ".txt", ".1", ".xhtml"}:
            assert "ch1-sec0-p1" not in path.read_text("utf-8", errors="replace")


def test_linkcheck_still_runs(make_app, srcdir):
    app = build(make_app, "linkcheck", srcdir)
    assert (app.outdir / "output.json").exists()
    assert not (app.outdir / "_ragcite").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"ragcite_passage_words": 5}, "ragcite_passage_words must be an integer"),
        ({"ragcite_passage_words": 3000}, "ragcite_passage_words must be an integer"),
        ({"ragcite_exclude": [1, 2]}, "ragcite_exclude must be a list of strings"),
    ],
)
def test_bad_config_fails_with_one_clear_error(make_app, srcdir, overrides, message):
    with pytest.raises(ConfigError, match=message):
        make_app("html", srcdir=srcdir, confoverrides=overrides)


def test_config_lists_every_problem(make_app, srcdir):
    overrides = {"ragcite_passage_words": 0, "ragcite_ignore_classes": 3}
    with pytest.raises(ConfigError) as error:
        make_app("html", srcdir=srcdir, confoverrides=overrides)
    assert "ragcite_passage_words" in str(error.value)
    assert "ragcite_ignore_classes" in str(error.value)
