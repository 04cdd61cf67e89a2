"""Every passage ID is an anchor, once, on the element its text starts at."""

from __future__ import annotations

import pytest

from helpers.anchors import check_anchors


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["html", "dirhtml", "singlehtml"])
@pytest.mark.parametrize("root", ["basic", "myst"])
def test_anchor_once_per_passage(builds, builder, root):
    built = builds.app(root, builder)  # the session's build, shared
    assert built.warnings == ""
    records = check_anchors(built.outdir)
    urls = {r["docname"]: r["url"].split("#")[0] for r in records}
    if builder == "html":
        assert urls["index"] == "index.html"
        if root == "basic":
            assert urls["part/inner"] == "part/inner.html"
    elif builder == "dirhtml":
        assert urls["index"] == ""
        if root == "basic":
            assert urls["part/inner"] == "part/inner/"
            assert urls["part/index"] == "part/"
    else:
        assert set(urls.values()) == {"index.html"}
