"""Every passage ID is an anchor, once, on the element its text starts at:
the check the anchor, build and corpus tests share."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, Comment, Tag

from helpers.builds import read_passages

_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def page_of(outdir: Path, url: str) -> Path:
    page = url.split("#", 1)[0]
    if page == "" or page.endswith("/"):
        page += "index.html"
    return outdir / page


def check_anchors(outdir: Path) -> list[dict]:
    records = read_passages(outdir)
    assert records
    assert len({r["passage_id"] for r in records}) == len(records)
    # page -> its elements by id, parsed once (real API pages are large)
    pages: dict[Path, dict[str, Tag]] = {}
    for record in records:
        pid = record["passage_id"]
        assert record["url"].endswith("#" + pid)
        path = page_of(outdir, record["url"])
        html = path.read_text("utf-8")
        assert html.count(f'id="{pid}"') == 1, (pid, path)
        if path not in pages:
            soup = BeautifulSoup(html, "html.parser")
            pages[path] = {str(e["id"]): e for e in soup.find_all(id=True)}
        element = pages[path].get(pid)
        assert element is not None
        # The element's visible text starts where the passage's text starts; a
        # short element (a tab label, a card title) holds its first words and
        # the text after it goes on with the rest.
        expected = _words(record["snippet"])[:6]
        own = _words(element.get_text(" "))[: len(expected)]
        if own != expected[: len(own)]:
            # line numbers of code are not its text; markup may split a word
            for number in element.select(".linenos"):
                number.decompose()
            own = _words(element.get_text())[: len(expected)]
        assert own, pid
        assert own == expected[: len(own)], pid
        if len(own) < len(expected):
            after = element.find_all_next(string=True, limit=60)
            text = " ".join(s for s in after if not isinstance(s, Comment))
            assert _words(text)[: len(expected)] == expected, pid
    return records
