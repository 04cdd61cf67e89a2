"""Property tests of reference-manual text: what a reader sees, word for word.

Random field lists (docutils' and Sphinx's ``Type``/``Default``/``Parameters``
fields, with inline or block bodies), definition lists with classifiers,
option lists and API descriptions (``desc`` nodes with signatures) go through
the text extraction and the chunker. Every word of a label and of its value
reaches the passage text as a token of its own, in reading order (glued,
``Type`` and ``str`` would be the one token ``typestr``); a signature and the
start of its description share a passage; no passage is empty.
"""

from __future__ import annotations

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sphinx import addnodes

from sphinx_ragcite.extension.passages.chunker import MARK, chunk_doctree
from sphinx_ragcite.extension.passages.text import block_text
from sphinx_ragcite.text import tokenize

IGNORE = frozenset({"no-search"})

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- strategies ----------------------------------------------------------------

#: Words of identifiers and values, quotes and dots included ('None', 1.5).
word = st.from_regex(
    r"[A-Za-z][A-Za-z0-9_]{0,7}|'[a-z]{1,5}'|[0-9]{1,3}\.[0-9]", fullmatch=True
)
phrase = st.lists(word, min_size=1, max_size=4).map(" ".join)

#: Inline markup as the parsers and Sphinx leave it in a label or a value.
inline = st.one_of(
    phrase.map(nodes.Text),
    phrase.map(lambda t: nodes.literal(t, t)),
    phrase.map(lambda t: nodes.emphasis(t, t)),
    phrase.map(lambda t: nodes.strong(t, t)),
)
inlines = st.lists(inline, min_size=1, max_size=3)


def _spaced(parts: list[nodes.Node]) -> list[nodes.Node]:
    """Inline parts as a parser leaves them: separated by spaces."""
    out: list[nodes.Node] = []
    for part in parts:
        if out:
            out.append(nodes.Text(" "))
        out.append(part)
    return out


paragraph = inlines.map(lambda parts: nodes.paragraph("", "", *_spaced(parts)))
#: ``Parameters`` of several arguments: a bullet list, one paragraph each.
bullets = st.lists(paragraph, min_size=1, max_size=3).map(
    lambda ps: nodes.bullet_list("", *(nodes.list_item("", p) for p in ps))
)
#: A field body: inline text only (a confval's ``:type:``), or blocks.
field_body = st.one_of(
    inlines.map(lambda parts: nodes.field_body("", *_spaced(parts))),
    st.lists(st.one_of(paragraph, bullets), min_size=1, max_size=2).map(
        lambda bs: nodes.field_body("", *bs)
    ),
)
field_name = st.one_of(
    st.sampled_from(
        ["Type", "Default", "Parameters", "Returns", "Return type", "Raises"]
    ),
    phrase,
).map(lambda t: nodes.field_name(t, t))
field_list = st.lists(
    st.builds(lambda n, b: nodes.field("", n, b), field_name, field_body),
    min_size=1,
    max_size=4,
).map(lambda fs: nodes.field_list("", *fs))

term = phrase.map(lambda t: nodes.term(t, t))
classifier = phrase.map(lambda t: nodes.classifier(t, t))
definition_list = st.lists(
    st.builds(
        lambda terms, kinds, body: nodes.definition_list_item(
            "", *terms, *kinds, nodes.definition("", *body)
        ),
        st.lists(term, min_size=1, max_size=2),
        st.lists(classifier, max_size=2),
        st.lists(paragraph, min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=3,
).map(lambda items: nodes.definition_list("", *items))

option_string = st.from_regex(
    r"-[a-z]|--[a-z]{2,6}(-[a-z]{2,6})?|/[A-Z]", fullmatch=True
)
option = st.builds(
    lambda name, arg, delimiter: nodes.option(
        "",
        nodes.option_string(name, name),
        *([nodes.option_argument(arg, arg, delimiter=delimiter)] if arg else []),
    ),
    option_string,
    st.one_of(st.none(), st.from_regex(r"[A-Z]{1,5}|<[a-z]{1,5}>", fullmatch=True)),
    st.sampled_from([" ", "="]),
)
option_list = st.lists(
    st.builds(
        lambda options, body: nodes.option_list_item(
            "", nodes.option_group("", *options), nodes.description("", *body)
        ),
        st.lists(option, min_size=1, max_size=2),
        st.lists(paragraph, min_size=1, max_size=2),
    ),
    min_size=1,
    max_size=3,
).map(lambda items: nodes.option_list("", *items))

glossary = definition_list.map(lambda items: addnodes.glossary("", items))
reference_blocks = st.one_of(field_list, definition_list, glossary, option_list)


@st.composite
def signatures(draw: st.DrawFn) -> addnodes.desc_signature:
    """``class mod.Thing(a, b=1) → T``, ``--output <dir>``, ``project``."""
    kind = draw(st.sampled_from(["python", "option", "name"]))
    signature = addnodes.desc_signature("", "")
    if kind == "python":
        if draw(st.booleans()):
            signature += addnodes.desc_annotation(
                "",
                "",
                nodes.Text(draw(st.sampled_from(["class", "async"]))),
                addnodes.desc_sig_space(),
            )
        signature += addnodes.desc_addname("mod.", "mod.")
        name = draw(word)
        signature += addnodes.desc_name(name, name)
        parameters = draw(st.lists(word, max_size=3))
        signature += addnodes.desc_parameterlist(
            "", "", *(addnodes.desc_parameter(p, p) for p in parameters)
        )
        if draw(st.booleans()):
            returns = draw(word)
            signature += addnodes.desc_returns(returns, returns)
    elif kind == "option":
        name = draw(option_string)
        signature += addnodes.desc_name(name, name)
        argument = " <" + draw(word) + ">"
        signature += addnodes.desc_addname(argument, argument)
    else:
        name = draw(word)
        signature += addnodes.desc_name(name, name)
    return signature


def descriptions(
    content: st.SearchStrategy[nodes.Element],
) -> st.SearchStrategy[addnodes.desc]:
    return st.builds(
        lambda sig, first, rest: addnodes.desc(
            "", sig, addnodes.desc_content("", first, *rest)
        ),
        signatures(),
        st.one_of(paragraph, field_list),
        st.lists(content, max_size=4),
    )


#: Blocks of a description: prose, reference lists, nested descriptions.
content_blocks = st.recursive(
    st.one_of(paragraph, reference_blocks),
    lambda inner: descriptions(inner),
    max_leaves=8,
)
blocks = st.one_of(paragraph, reference_blocks, descriptions(content_blocks))


@st.composite
def documents(draw: st.DrawFn) -> nodes.document:
    settings_ = get_default_settings(Parser)
    settings_.report_level = 5
    document = new_document("<hypothesis>", settings_)
    top = nodes.section("", nodes.title("Reference", "Reference"))
    top["ids"] = ["reference"]
    top += draw(st.lists(blocks, max_size=4))
    for index in range(draw(st.integers(0, 2))):
        section = nodes.section("", nodes.title("Part", "Part"))
        section["ids"] = [f"part-{index}"]
        section += draw(st.lists(blocks, min_size=1, max_size=4))
        top += section
    document += top
    return document


# -- what a reader sees --------------------------------------------------------


def _text(node: nodes.Element) -> str:
    return block_text(node, IGNORE, "page")


def _contains(tokens: list[str], run: list[str]) -> bool:
    """*run* occurs in *tokens* as consecutive tokens."""
    n = len(run)
    return any(tokens[i : i + n] == run for i in range(len(tokens) - n + 1))


def _runs(block: nodes.Element) -> list[list[str]]:
    """Token runs a reader reads in order: a label, then its value."""
    runs = []
    for field in block.findall(nodes.field):
        name, body = field.children
        runs.append(tokenize(name.astext()) + tokenize(_text(body)))
    for item in block.findall(nodes.definition_list_item):
        labels = [c for c in item.children if not isinstance(c, nodes.definition)]
        definition = item.children[-1]
        runs.append(
            [t for c in labels for t in tokenize(c.astext())]
            + tokenize(_text(definition))
        )
    for item in block.findall(nodes.option_list_item):
        group, description = item.children
        runs.append(
            [t for o in group.findall(nodes.Text) for t in tokenize(o.astext())]
            + tokenize(_text(description))
        )
    return runs


@pytest.mark.slow
@PROPERTY
@given(reference_blocks)
def test_labels_and_values_stay_separate_words(block: nodes.Element) -> None:
    text = _text(block)
    tokens = tokenize(text)
    for run in _runs(block):
        assert _contains(tokens, run), (run, text)


@pytest.mark.slow
@PROPERTY
@given(field_list)
def test_fields_read_name_colon_value_one_per_line(block: nodes.field_list) -> None:
    lines = _text(block).split("\n")
    for field in block.children:
        name, body = field.children
        first = _text(body).split("\n")[0]
        assert f"{name.astext()}: {first}" in lines


@pytest.mark.slow
@PROPERTY
@given(option_list)
def test_options_read_as_two_columns(block: nodes.option_list) -> None:
    lines = _text(block).split("\n")
    for item in block.children:
        group, description = item.children
        # option_argument.astext() starts with its delimiter (" " or "=")
        options = ", ".join(
            "".join(p.astext() for p in option.children) for option in group.children
        )
        first = _text(description).split("\n")[0]
        assert f"{options}  {first}" in lines


@PROPERTY
@given(signatures())
def test_signatures_read_as_rendered(signature: addnodes.desc_signature) -> None:
    text = _text(signature)
    assert "\n" not in text
    expected = [t for n in signature.findall(nodes.Text) for t in tokenize(n.astext())]
    assert tokenize(text) == expected
    if signature.next_node(addnodes.desc_parameterlist):
        assert "(" in text
    if signature.next_node(addnodes.desc_returns):
        assert " → " in text


@pytest.mark.slow
@PROPERTY
@given(documents(), st.integers(20, 300))
def test_a_signature_keeps_the_start_of_its_description(
    document: nodes.document, max_words: int
) -> None:
    doc = chunk_doctree(document, "page", max_words=max_words, ignore_classes=IGNORE)
    texts = {(c.section, c.position): c.text for c in doc.chunks}
    assert all(text.strip() for text in texts.values())

    for desc in document.findall(addnodes.desc):
        signature = _text(desc[0])
        first = _text(desc[1][0])
        assert desc.get(MARK), "a description starts its own passage"
        text = texts[desc[MARK][1:]]
        assert text.startswith(f"{signature}\n\n{first}")

    tokens = [tokenize(text) for text in texts.values()]
    for block in document.findall(
        lambda n: isinstance(
            n, (nodes.field_list, nodes.definition_list, nodes.option_list)
        )
    ):
        for run in _runs(block):
            assert any(_contains(t, run) for t in tokens), run


# -- any text, odd structure ---------------------------------------------------

#: Any text: empty, blank, control characters, line breaks, non-BMP.
any_text = st.one_of(st.text(max_size=20), st.sampled_from(["", " ", "\n", "a\n\nb"]))
classes = st.lists(st.sampled_from(["no-search", "x"]), max_size=1)


def _with(node: nodes.Element, cls: list[str]) -> nodes.Element:
    node["classes"] = cls
    return node


odd_inline = st.builds(
    lambda t, cls: _with(nodes.literal(t, t), cls), any_text, classes
) | any_text.map(nodes.Text)
odd_body = st.lists(
    st.one_of(
        odd_inline,
        st.builds(lambda t: nodes.paragraph(t, t), any_text),
        any_text.map(lambda t: nodes.literal_block(t, t)),
    ),
    max_size=3,
)
#: Text under a node classed ``no-search``, which no passage may show.
HIDDEN = "zzhiddenzz"


def _odd_field(
    names: list[nodes.Element], body: list[nodes.Node], cls: list[str]
) -> nodes.field:
    field_body = _with(nodes.field_body("", *body), cls)
    if "no-search" in cls:
        field_body += nodes.Text(HIDDEN)
    return nodes.field("", *names, field_body)


odd_field = st.builds(
    _odd_field,
    # no name, one, or two (hand-built trees)
    st.lists(any_text.map(lambda t: nodes.field_name(t, t)), max_size=2),
    odd_body,
    classes,
)
odd_option = st.builds(
    lambda strings, argument, delimiter, body: nodes.option_list_item(
        "",
        nodes.option_group(
            "",
            nodes.option(
                "",
                *(nodes.option_string(s, s) for s in strings),
                *(
                    [nodes.option_argument(argument, argument, delimiter=delimiter)]
                    if argument is not None
                    else []
                ),
            ),
        ),
        nodes.description("", *body),
    ),
    st.lists(any_text, max_size=2),
    st.one_of(st.none(), any_text),
    st.one_of(any_text, st.just(None)),
    odd_body,
)
odd_definition = st.builds(
    lambda terms, kinds, body: nodes.definition_list_item(
        "", *terms, *kinds, nodes.definition("", *body)
    ),
    st.lists(any_text.map(lambda t: nodes.term(t, t)), max_size=2),
    st.lists(any_text.map(lambda t: nodes.classifier(t, t)), max_size=2),
    odd_body,
)
odd_blocks = st.one_of(
    st.lists(odd_field, max_size=3).map(lambda fs: nodes.field_list("", *fs)),
    st.lists(odd_option, max_size=3).map(lambda os: nodes.option_list("", *os)),
    st.lists(odd_definition, max_size=3).map(lambda ds: nodes.definition_list("", *ds)),
    st.lists(any_text.map(lambda t: nodes.line(t, t)), max_size=3).map(
        lambda ls: nodes.line_block("", *ls)
    ),
)


@PROPERTY
@given(odd_blocks)
def test_any_reference_block_gives_clean_text(block: nodes.Element) -> None:
    text = _text(block)
    assert isinstance(text, str)
    assert text == text.strip("\n ")
    assert "\n\n\n" not in text
    assert HIDDEN not in text


@pytest.mark.slow
@PROPERTY
@given(st.lists(odd_blocks, min_size=1, max_size=4), st.integers(20, 300))
def test_no_passage_is_empty(blocks_: list[nodes.Element], max_words: int) -> None:
    settings_ = get_default_settings(Parser)
    settings_.report_level = 5
    document = new_document("<hypothesis>", settings_)
    document += nodes.section("", nodes.title("T", "T"), *blocks_)
    doc = chunk_doctree(document, "page", max_words=max_words, ignore_classes=IGNORE)
    assert all(chunk.text.strip() for chunk in doc.chunks)
