"""Plain text of doctree blocks, as retrieval and readers should see it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from docutils import nodes
from sphinx import addnodes
from sphinx.locale import admonitionlabels
from sphinx.util import docname_join

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

#: Nodes whose content never reaches a passage.
SKIPPED: tuple[type[nodes.Node], ...] = (
    nodes.comment,
    nodes.raw,
    nodes.image,
    nodes.substitution_definition,
    nodes.system_message,
    nodes.target,
    nodes.transition,
    nodes.docinfo,
    nodes.meta,
    addnodes.toctree,
    addnodes.index,
)

# Implicit :ref:/:doc: titles are only known once every document is read, so
# the chunker leaves a placeholder that the index writer resolves.
_XREF = re.compile("\ue000(ref|doc)\ue001([^\ue001]*)\ue001([^\ue002]*)\ue002")
#: The placeholder's delimiters never come from the book's own text.
_DELIMITERS = str.maketrans("", "", "\ue000\ue001\ue002")
_SPACES = re.compile(r"[ \t\r\f\v\n]+")
_BLANKS = re.compile(r"\n{3,}")

_LINE_BREAKING = (
    nodes.Body,
    nodes.list_item,
    nodes.line,
    nodes.term,
    nodes.definition,
    addnodes.desc_signature,
    addnodes.desc_signature_line,
)
#: Signature parts whose brackets and commas only the HTML writer adds; their
#: ``astext()`` adds them too (the return arrow is added below).
_SIGNATURE_PUNCTUATED = (
    addnodes.desc_parameterlist,
    addnodes.desc_type_parameter_list,
)


def is_ignored(node: nodes.Node, ignore_classes: frozenset[str]) -> bool:
    if isinstance(node, SKIPPED):
        return True
    return isinstance(node, nodes.Element) and not ignore_classes.isdisjoint(
        node.get("classes", ())
    )


def block_text(
    node: nodes.Element, ignore_classes: frozenset[str], docname: str
) -> str:
    """Text of one block: prose on collapsed spaces, code keeps its lines."""
    out: list[str] = []
    _Collector(out, ignore_classes, docname).visit(node, preformatted=False)
    lines = (line.rstrip() for line in "".join(out).split("\n"))
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip("\n ")


class _Collector:
    def __init__(self, out: list[str], ignore: frozenset[str], docname: str) -> None:
        self.out = out
        self.ignore = ignore
        self.docname = docname

    def children(self, node: nodes.Element, *, preformatted: bool) -> None:
        for child in node.children:
            if isinstance(child, nodes.Text):
                # astext() drops the NULs of backslash escapes
                text = child.astext().translate(_DELIMITERS)
                self.out.append(text if preformatted else _SPACES.sub(" ", text))
            elif isinstance(child, nodes.Element) and not is_ignored(
                child, self.ignore
            ):
                self.visit(child, preformatted=preformatted)

    def visit(self, node: nodes.Element, *, preformatted: bool) -> None:
        out = self.out
        if isinstance(node, nodes.row):
            cells = []
            for entry in node.findall(nodes.entry):
                cell: list[str] = []
                _Collector(cell, self.ignore, self.docname).children(
                    entry, preformatted=False
                )
                cells.append(_SPACES.sub(" ", "".join(cell)).strip())
            _newline(out)
            out.append(" | ".join(cells) + "\n")
        elif isinstance(node, addnodes.pending_xref) and _is_implicit(node):
            out.append(_placeholder(node, self.docname))
        elif isinstance(node, _SIGNATURE_PUNCTUATED):
            out.append(_SPACES.sub(" ", node.astext().translate(_DELIMITERS)))
        elif isinstance(node, addnodes.desc_returns):
            out.append(" → ")
            self.children(node, preformatted=preformatted)
        elif isinstance(node, nodes.field):
            self.field(node, preformatted=preformatted)
        elif isinstance(node, nodes.option_list_item):
            self.option(node, preformatted=preformatted)
        elif isinstance(node, nodes.classifier):
            # "term : classifier" on the term's line, as the HTML shows it
            if out and out[-1].endswith("\n"):
                out[-1] = out[-1][:-1]
            out.append(" : ")
            self.children(node, preformatted=preformatted)
            _newline(out)
        elif node.get("nb_element") == "mime_bundle":
            # MyST-NB keeps every MIME type of an output until the write phase;
            # the plain-text one is what a reader of any format can see.
            for view in node.children:
                if isinstance(view, nodes.Element) and view.get("mime_type") == (
                    "text/plain"
                ):
                    self.visit(view, preformatted=True)
                    break
        else:
            breaking = isinstance(node, _LINE_BREAKING) and not isinstance(
                node, nodes.Inline
            )
            if breaking:
                _newline(out)
            label = _admonition_label(node)
            if label:
                out.append(label + "\n")
            pre = preformatted or isinstance(node, nodes.FixedTextElement)
            self.children(node, preformatted=pre)
            if breaking:
                _newline(out)

    def field(self, node: nodes.field, *, preformatted: bool) -> None:
        """``Name: body``, the body's later lines below it, as HTML lays it out.

        Sphinx's own fields (``:type:`` of a confval, ``Parameters``,
        ``Returns``) hold inline text or lists; without the colon and the line
        break, name and value would run together into one word.
        """
        name = body = ""
        for child in node.children:
            if not isinstance(child, nodes.Element) or is_ignored(child, self.ignore):
                continue
            if isinstance(child, nodes.field_name) and not name:
                name = self.inline(child)
            elif isinstance(child, nodes.field_body) and not body:
                body = self.part(child, preformatted=preformatted)
        self.labelled(f"{name}:" if name else "", body)

    def option(self, node: nodes.option_list_item, *, preformatted: bool) -> None:
        """``-o DIR, --output=DIR  Description``: the two columns of an option list."""
        options: list[str] = []
        description = ""
        for child in node.children:
            if not isinstance(child, nodes.Element) or is_ignored(child, self.ignore):
                continue
            if isinstance(child, nodes.option_group):
                options.extend(
                    text
                    for option in child.children
                    if isinstance(option, nodes.option)
                    and not is_ignored(option, self.ignore)
                    and (text := self.option_text(option))
                )
            elif isinstance(child, nodes.description) and not description:
                description = self.part(child, preformatted=preformatted)
        self.labelled(", ".join(options), description, separator="  ")

    def option_text(self, node: nodes.option) -> str:
        parts: list[str] = []
        for child in node.children:
            if not isinstance(child, nodes.Element) or is_ignored(child, self.ignore):
                continue
            text = self.inline(child)
            if isinstance(child, nodes.option_argument) and parts:
                delimiter = child.get("delimiter")
                text = (" " if delimiter is None else str(delimiter)) + text
            parts.append(text)
        return "".join(parts)

    def inline(self, node: nodes.Element) -> str:
        """A label's text on one line."""
        out: list[str] = []
        _Collector(out, self.ignore, self.docname).children(node, preformatted=False)
        return _SPACES.sub(" ", "".join(out)).strip()

    def part(self, node: nodes.Element, *, preformatted: bool) -> str:
        out: list[str] = []
        _Collector(out, self.ignore, self.docname).children(
            node, preformatted=preformatted
        )
        return "".join(out).strip("\n").strip(" ")

    def labelled(self, label: str, text: str, separator: str = " ") -> None:
        """*label* and the first line of *text* on one line, its other lines below."""
        _newline(self.out)
        if label and text:
            self.out.append(label + separator + text)
        else:
            self.out.append(label or text)
        _newline(self.out)


def _admonition_label(node: nodes.Element) -> str:
    """The "Note"/"Warning" heading the HTML shows for a titled admonition."""
    if isinstance(node, nodes.Admonition) and not isinstance(node, nodes.admonition):
        return str(admonitionlabels.get(node.tagname, ""))
    return ""


def _newline(out: list[str]) -> None:
    if out and not out[-1].endswith("\n"):
        out.append("\n")


def _is_implicit(node: addnodes.pending_xref) -> bool:
    return node.get("reftype") in ("ref", "doc") and not node.get("refexplicit")


def _attr(node: nodes.Element, name: str) -> str:
    """A node attribute as text: other extensions may leave None or a proxy."""
    value = node.get(name)
    return "" if value is None else str(value).translate(_DELIMITERS)


def _placeholder(node: addnodes.pending_xref, docname: str) -> str:
    """The reference's text for now; its target's title replaces it later.

    The fallback is what the reference shows if the target is never found
    (its own text, else the target's name); a reference with neither adds
    nothing, so a passage's text never ends up empty.
    """
    reftype = _attr(node, "reftype")
    target = _attr(node, "reftarget")
    if reftype == "doc" and target:
        target = docname_join(_attr(node, "refdoc") or docname, target)
    fallback = _SPACES.sub(" ", node.astext().translate(_DELIMITERS)).strip()
    fallback = fallback or target.strip()
    if not fallback:
        return ""
    return f"\ue000{reftype}\ue001{target}\ue001{fallback}\ue002"


def resolve_xrefs(
    text: str,
    labels: Mapping[str, tuple[str, str, str]],
    titles: Callable[[str], str | None],
) -> str:
    """Replace placeholders by the titles Sphinx will print in their place.

    Titles are coerced to ``str``: the standard labels ``genindex``,
    ``modindex`` and ``search`` carry lazily translated titles.
    """

    def title_of(match: re.Match[str]) -> str:
        reftype, target, fallback = match.groups()
        if reftype == "ref":
            label = labels.get(target)
            title = label[2] if label else None
        else:
            title = titles(target)
        text = _SPACES.sub(" ", str(title)).strip() if title is not None else ""
        return text or fallback

    return _XREF.sub(title_of, text)


def strip_placeholders(text: str) -> str:
    return _XREF.sub(lambda m: m.group(3), text)


def count_words(text: str) -> int:
    return len(strip_placeholders(text).split())
