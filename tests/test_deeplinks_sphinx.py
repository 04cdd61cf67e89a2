"""Deep links under Sphinx's own search-term highlight (``sphinx_highlight.js``).

Sphinx 9 keeps a ``#:~:text=`` text fragment only on a link without
``?highlight=`` (it rewrites the address, fragment lost, only when that
query is there; 7.4 rewrites it always), and on arrival it wraps the terms
from its search page or ``?highlight=`` in ``<span class="highlighted">``
10 ms after load. So the widget's links are ``page.html#passage-id`` with
no query and no text fragment (the quote travels in sessionStorage), and a
quote it marks survives Sphinx splitting the passage's text nodes. Runs
under the project's own Sphinx.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import sphinx

from helpers.browser import (
    QUESTION,
    QUOTE_MARKED,
    SHOTS,
    ask,
    ask_api,
    wait_highlighted,
    words,
)
from helpers.builds import read_passages

PASSAGE_HASH = "#ch"


def check_link(url: str) -> None:
    """A deep link as Sphinx 9 keeps it: no ``?highlight=`` beside a text
    fragment; ours carry neither, only the passage's anchor."""
    parts = urlsplit(url)
    assert "highlight" not in parse_qs(parts.query), url
    assert ":~:" not in parts.fragment, url
    assert parts.fragment.startswith(PASSAGE_HASH[1:]), url


def test_answer_links_carry_no_highlight_query(
    example_server: str, example_site: Path
) -> None:
    answer = ask_api(example_server, QUESTION)
    urls = [c["url"] for c in answer["citations"]]
    urls += [s["url"] for s in (answer.get("metadata") or {}).get("see_also") or []]
    assert urls
    for url in urls:
        check_link(url)
    for record in read_passages(example_site):
        check_link(record["url"])


def test_widget_links_carry_no_highlight_query(page, example_server: str) -> None:
    page.goto(f"{example_server}/index.html")
    ask(page, QUESTION)
    hrefs = page.eval_on_selector_all(
        ".ragcite-root a[href*='#ch']", "(links) => links.map((a) => a.href)"
    )
    assert hrefs
    for href in hrefs:
        check_link(href)


def test_sphinx_search_terms_leave_the_quote_marked(
    page, example_server: str, example_site: Path
):
    """Terms from Sphinx's search page are highlighted on the page a citation
    opens, inside the quoted sentence: the quote stays marked, whole."""
    page.goto(f"{example_server}/index.html")
    target = ask(page, QUESTION)["citations"][0]
    quote = target["quote"]
    terms = [w for w in quote.lower().replace(",", " ").split() if len(w) > 3][:3]
    assert terms
    page.evaluate(
        "(t) => localStorage.setItem('sphinx_highlight_terms', t)", " ".join(terms)
    )
    page.click('a[data-ragcite-n="1"]')
    page.wait_for_url(f"{example_server}/{target['url']}")
    wait_highlighted(page, target["passage_id"])
    page.wait_for_function(
        "(id) => document.getElementById(id).querySelector('span.highlighted')",
        arg=target["passage_id"],
    )
    page.wait_for_timeout(200)
    marked = page.evaluate(QUOTE_MARKED)
    assert marked is not None, f"Sphinx {sphinx.__version__} erased the quote"
    assert " … ".join(words(p) for p in marked["parts"]) == quote
    page.screenshot(path=str(SHOTS / "quote-with-sphinx-terms.png"))
    # the next highlight still replaces the quote
    page.evaluate("(id) => window.ragcite.highlight(id)", target["passage_id"])
    assert page.evaluate(QUOTE_MARKED) is None


@pytest.mark.parametrize("query", ["", "?highlight=bloom"])
def test_a_text_fragment_link_still_highlights_its_passage(
    page,
    example_server: str,
    example_site: Path,
    query: str,
) -> None:
    """Links made elsewhere may carry a text fragment, with or without
    Sphinx's ``?highlight=``: the passage is highlighted either way."""
    record = next(
        r for r in read_passages(example_site) if r["docname"] == "brewing/pour_over"
    )
    path, _, pid = record["url"].partition("#")
    fragment = "%20".join(record["text"].split()[:3])
    page.goto(f"{example_server}/{path}{query}#{pid}:~:text={fragment}")
    wait_highlighted(page, pid)
    assert page.evaluate("location.search") == ""
