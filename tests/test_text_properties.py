"""Property tests of the text path: any doctree -> passages, IDs and records.

Random docutils/Sphinx node trees (nested sections, lists, tables, literal
blocks, raw, comments, targets, ``only``, API descriptions, notebook cells,
pending references with odd attributes and lazily translated titles, empty
nodes, huge text, non-BMP and control characters) go through the chunker,
the text extraction, the numbering and the record building. Whatever the
tree, nothing raises, IDs follow the grammar and are unique, and every
passage has text.
"""

from __future__ import annotations

import json
import pickle
import re
from typing import Any

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sphinx import addnodes
from sphinx.locale import _

from sphinx_ragcite.extension.passages.chunker import MARK, chunk_doctree
from sphinx_ragcite.extension.passages.ids import parse_passage_id, passage_id
from sphinx_ragcite.extension.passages.records import doc_records
from sphinx_ragcite.extension.passages.text import block_text, resolve_xrefs

ID = re.compile(r"^ch[0-9]+-sec[0-9]+-p[0-9]+$")
IGNORE = frozenset({"no-search"})
#: The placeholder delimiters of passages/text.py.
DELIMITERS = "\ue000\ue001\ue002"

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- text ----------------------------------------------------------------------

_ALPHABET = st.one_of(
    st.characters(codec="utf-8", exclude_categories=("Cs",)),  # any, non-BMP too
    st.sampled_from(list("\x00\x01\x0b\x0c\x1c\x7f\u200b\u202e\ufeff" + DELIMITERS)),
    st.sampled_from(list(" \t\n\r")),
)
words = st.text(_ALPHABET, max_size=40)
#: A paragraph of some thousand words.
huge = st.builds(
    lambda w, n: (w + " ") * n, st.text(min_size=1, max_size=12), st.integers(500, 2000)
)
texts = st.one_of(*[words] * 12, huge)
#: Titles as Sphinx may hand them over: str, a lazy translation, None, a number.
odd_titles = st.one_of(
    words,
    st.sampled_from([_("Index"), _("Module Index"), _("Search Page")]),
    st.none(),
    st.integers(),
)
classes = st.lists(st.sampled_from(["no-search", "note", "x"]), max_size=2)


def _with(node: nodes.Element, cls: list[str]) -> nodes.Element:
    node["classes"] = cls
    return node


@st.composite
def pending_xrefs(draw: st.DrawFn) -> nodes.Element:
    attributes: dict[str, Any] = {
        "reftype": draw(st.sampled_from(["ref", "doc", "any", "myst", None])),
        "reftarget": draw(st.one_of(words, st.none(), st.integers())),
        "refdoc": draw(st.one_of(st.just("guide/page"), st.none(), words)),
        "refexplicit": draw(st.booleans()),
        "refdomain": draw(st.sampled_from(["std", "py", ""])),
    }
    inner = draw(st.lists(texts.map(nodes.Text), max_size=2))
    return addnodes.pending_xref("", nodes.inline("", "", *inner), **attributes)


inlines = st.one_of(
    texts.map(nodes.Text),
    texts.map(lambda t: nodes.emphasis(t, t)),
    texts.map(lambda t: nodes.literal(t, t)),
    pending_xrefs(),
    st.builds(nodes.inline),
)
paragraphs = st.builds(
    lambda parts, cls: _with(nodes.paragraph("", "", *parts), cls),
    st.lists(inlines, max_size=4),
    classes,
)


def _table(rows: list[list[nodes.Element]]) -> nodes.Element:
    body = nodes.tbody(
        "", *(nodes.row("", *(nodes.entry("", c) for c in r)) for r in rows)
    )
    return nodes.table(
        "", nodes.tgroup("", body, cols=max((len(r) for r in rows), default=0))
    )


def _leaf_blocks() -> st.SearchStrategy[nodes.Element]:
    return st.one_of(
        paragraphs,
        paragraphs,
        texts.map(lambda t: nodes.literal_block(t, t)),
        texts.map(lambda t: nodes.raw(t, t, format="html")),
        texts.map(lambda t: nodes.comment(t, t)),
        words.map(lambda t: nodes.target("", "", ids=[t], names=[t])),
        st.builds(nodes.paragraph),
        st.builds(nodes.container),
        st.builds(nodes.transition),
        st.lists(st.lists(paragraphs, max_size=3), max_size=3).map(_table),
        texts.map(
            lambda t: nodes.container(
                "",
                nodes.container(
                    "",
                    nodes.container(
                        "", nodes.literal_block(t, t), mime_type="text/plain"
                    ),
                    nb_element="mime_bundle",
                ),
                nb_element="cell_code_output",
            )
        ),
        texts.map(
            lambda t: nodes.container(
                "", nodes.literal_block(t, t), nb_element="cell_code"
            )
        ),
        st.builds(
            lambda sig, body: addnodes.desc(
                "",
                addnodes.desc_signature(sig, "", addnodes.desc_name(sig, sig)),
                addnodes.desc_content("", *body),
            ),
            words,
            st.lists(paragraphs, max_size=2),
        ),
    )


def _extend_blocks(
    children: st.SearchStrategy[nodes.Element],
) -> st.SearchStrategy[nodes.Element]:
    many = st.lists(children, max_size=3)
    return st.one_of(
        many.map(
            lambda cs: nodes.bullet_list("", *(nodes.list_item("", c) for c in cs))
        ),
        many.map(lambda cs: nodes.note("", *cs)),
        many.map(lambda cs: nodes.block_quote("", *cs)),
        many.map(lambda cs: nodes.compound("", *cs)),
        many.map(lambda cs: nodes.container("", *cs)),
        st.builds(
            lambda expr, cs: addnodes.only("", *cs, expr=expr),
            st.sampled_from(["html", "latex", "not html", "((", "", "html and"]),
            many,
        ),
        st.builds(
            lambda title, cs: nodes.section("", nodes.title(title, title), *cs),
            texts,
            many,
        ),
        many.map(lambda cs: nodes.section("", *cs)),  # no title at all
    )


blocks = st.recursive(_leaf_blocks(), _extend_blocks, max_leaves=25)


@st.composite
def doctrees(draw: st.DrawFn) -> nodes.document:
    settings_ = get_default_settings(Parser)
    settings_.report_level = 5
    document = new_document("<hypothesis>", settings_)
    if draw(st.booleans()):
        title = draw(texts)
        top = nodes.section(
            "", nodes.title(title, title), *draw(st.lists(blocks, max_size=6))
        )
        top["ids"] = [draw(words)]
        document += top
    else:
        for block in draw(st.lists(blocks, max_size=6)):
            document += block
    return document


def _keep_only(expr: str) -> bool:
    """Like Sphinx's tags: some expressions do not parse."""
    if expr.count("(") != expr.count(")") or expr.endswith(" and"):
        raise ValueError(f"bad expression {expr!r}")
    return "latex" not in expr


# -- properties ----------------------------------------------------------------


@pytest.mark.slow
@PROPERTY
@given(doctrees(), st.integers(20, 300), odd_titles, odd_titles)
def test_any_doctree_gives_valid_passages(
    document: nodes.document, max_words: int, label_title: Any, doc_title: Any
) -> None:
    doc = chunk_doctree(
        document,
        "guide/page",
        max_words=max_words,
        ignore_classes=IGNORE,
        keep_only=_keep_only,
    )
    assert pickle.loads(pickle.dumps(doc)) == doc  # parallel builds pickle it

    keys = [(c.section, c.position) for c in doc.chunks]
    assert len(set(keys)) == len(keys)
    assert all(0 <= c.section < len(doc.sections) for c in doc.chunks)
    marks = [n[MARK] for n in document.findall(nodes.Element) if MARK in n]
    assert sorted(m[1:] for m in marks) == sorted(keys)  # one mark per passage

    labels = {"genindex": ("genindex", "", _("Index")), "x": ("p", "x", label_title)}
    records = doc_records(
        doc,
        "guide/page",
        chapter_number=3,
        url="guide/page.html",
        numbers={"": (3,)},
        suffix=". ",
        labels=labels,
        titles=lambda name: doc_title,
    )
    ids = [r["passage_id"] for r in records]
    assert all(ID.match(pid) for pid in ids)
    assert len(set(ids)) == len(ids)
    for record in records:
        text = record["text"]
        assert isinstance(text, str)
        assert text.strip(), record
        assert not set(DELIMITERS) & set(text)
        assert all(
            isinstance(record[k], str) for k in ("chapter", "section", "snippet")
        )
        assert all(isinstance(h, str) for h in record["heading_path"])
        assert len(record["snippet"]) <= 200
        assert record["char_end"] - record["char_start"] == len(text)
        json.dumps(record, ensure_ascii=False)  # what the index writer does


@PROPERTY
@given(blocks)
def test_block_text_of_any_block(block: nodes.Element) -> None:
    text = block_text(block, IGNORE, "page")
    assert isinstance(text, str)
    assert text == text.strip("\n ")
    assert "\n\n\n" not in text


@PROPERTY
@given(st.lists(st.one_of(words, pending_xrefs()), max_size=6), odd_titles)
def test_references_resolve_to_text(parts: list[Any], title: Any) -> None:
    """Placeholders always become text, whatever the label table holds."""
    paragraph = nodes.paragraph(
        "", "", *(nodes.Text(p) if isinstance(p, str) else p for p in parts)
    )
    text = block_text(paragraph, IGNORE, "page")
    labels = {str(t): ("doc", "id", title) for t in parts if isinstance(t, str)}
    resolved = resolve_xrefs(text, labels, lambda name: title)
    assert isinstance(resolved, str)
    assert not set(DELIMITERS) & set(resolved)


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 10**6))
def test_ids_round_trip(chapter: int, section: int, position: int) -> None:
    pid = passage_id(chapter, section, position)
    assert ID.match(pid)
    assert parse_passage_id(pid) == (chapter, section, position)
