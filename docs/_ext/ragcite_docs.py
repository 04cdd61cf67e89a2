"""Reference material generated from the code at build time, so it cannot drift.

Directives (used from the MyST pages of docs/reference/):

``{ragcite-config} NAME``
    One ``ragcite_NAME`` option as a ``confval`` entry: type, default, help
    text from :func:`sphinx_ragcite.extension.config.fields` metadata, what a change
    rebuilds and what a bad value does. The directive's own content is
    appended (for ranges and examples).

``{ragcite-cli} [SUBCOMMAND]``
    The ``--help`` output of ``ragcite`` or one of its subcommands, from
    :func:`sphinx_ragcite.cli.build_parser`.

``{ragcite-http} METHOD PATH``
    Parameters, request body and responses of one endpoint, from the
    server's OpenAPI spec (``create_app(...).openapi()``).

``{ragcite-http-schemas}``
    Every schema of the OpenAPI spec as a table of fields.

At ``env-check-consistency`` a warning names every config field, CLI
subcommand and API endpoint that no page rendered: with ``-W`` a new option,
command or endpoint fails the docs build until it is documented.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

#: Schemas FastAPI adds for its 422 responses; this server answers 400 instead.
FASTAPI_VALIDATION = {"HTTPValidationError", "ValidationError"}
REBUILD = {
    "env": "every page is read again (Sphinx rebuild ``env``)",
    "html": "every page is written again (Sphinx rebuild ``html``)",
    "": "only ``_ragcite/`` changes, at the next build (no page is re-read)",
}


# -- bookkeeping: what the pages rendered ------------------------------------


def _rendered(env: Any) -> dict[str, set[tuple[str, str]]]:
    if not hasattr(env, "ragcite_docs_rendered"):
        env.ragcite_docs_rendered = {}
    return env.ragcite_docs_rendered  # type: ignore[no-any-return]


def _note(directive: SphinxDirective, kind: str, name: str) -> None:
    _rendered(directive.env).setdefault(directive.env.docname, set()).add((kind, name))


def purge(app: Any, env: Any, docname: str) -> None:
    _rendered(env).pop(docname, None)


def merge(app: Any, env: Any, docnames: set[str], other: Any) -> None:
    theirs = _rendered(other)
    for docname in docnames:
        if docname in theirs:
            _rendered(env)[docname] = theirs[docname]


def check(app: Any, env: Any) -> None:
    done = set().union(*_rendered(env).values()) if _rendered(env) else set()
    expected = {("config", f.name) for f in _config_fields()}
    expected |= {("cli", name) for name in ["", *_subcommands(_parser())]}
    spec = _openapi(env.srcdir)
    if spec is not None:
        expected |= {("http", op) for op in _operations(spec)}
    for kind, name in sorted(expected - done):
        what = {
            "config": f"config value ragcite_{name}",
            "cli": "command `" + " ".join(filter(None, ["ragcite", name])) + "`",
            "http": f"endpoint {name}",
        }[kind]
        logger.warning(
            "ragcite-docs: the %s is not documented: add a {ragcite-%s} directive "
            "for it to a reference page",
            what,
            kind,
            type="ragcite_docs",
        )


# -- configuration -----------------------------------------------------------


def _config_fields() -> tuple[Any, ...]:
    from sphinx_ragcite.extension.config import fields

    return fields()


def _python_type(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else annotation.__name__
    return {"tuple[str, ...]": "list[str]"}.get(text, text)


def _python_value(value: Any) -> str:
    if isinstance(value, tuple):
        return json.dumps(list(value))
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]{}<>()#+!|~])")


def _markdown_text(text: str) -> str:
    """Plain text that MyST reads back as the same plain text."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


class ConfigDirective(SphinxDirective):
    required_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        from sphinx_ragcite.extension import config

        by_name = {f.name: f for f in _config_fields()}
        name = self.arguments[0].removeprefix("ragcite_")
        field = by_name.get(name)
        if field is None:
            raise self.error(f"no config field {name!r} in ragcite config")
        _note(self, "config", name)
        cosmetic = getattr(config, "_COSMETIC", {})
        bad_value = (
            "warns (`ragcite.config`, silenced by `suppress_warnings`) and the "
            "default is used"
            if name in cosmetic
            else "stops the build with one error that lists every problem"
        )
        fence = "::::::"
        lines = [
            f"{fence}{{confval}} ragcite_{name}",
            f":type: `{_python_type(field.type)}`",
            f":default: `{_python_value(field.default)}`",
            "",
            _markdown_text(field.metadata["help"]),
            "",
            f"*On a change:* {REBUILD[field.metadata['rebuild']]}. "
            f"*A bad value:* {bad_value}.",
            "",
        ]
        source = self.get_source_info()
        block = StringList()
        for line in lines:
            block.append(line, *source)
        for offset, line in enumerate(self.content):
            block.append(line, self.content.source(offset), self.content.offset(offset))
        block.append("", *source)
        block.append(fence, *source)
        container = nodes.container(classes=["ragcite-config"])
        self.state.nested_parse(block, self.content_offset, container)
        return list(container.children)


# -- command line --------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    from sphinx_ragcite.cli import build_parser

    return build_parser()


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@contextlib.contextmanager
def _columns(width: int) -> Any:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


class CliDirective(SphinxDirective):
    optional_arguments = 1

    def run(self) -> list[nodes.Node]:
        parser = _parser()
        name = self.arguments[0] if self.arguments else ""
        if name:
            commands = _subcommands(parser)
            if name not in commands:
                raise self.error(f"`ragcite {name}` is not a subcommand")
            parser = commands[name]
        _note(self, "cli", name)
        if hasattr(parser, "color"):  # Python 3.14 colours help text
            parser.color = False
        with _columns(80):
            text = parser.format_help().rstrip()
        block = nodes.literal_block(text, text, language="text")
        block["classes"].append("ragcite-cli-help")
        self.set_source_info(block)
        return [block]


# -- HTTP API ----------------------------------------------------------------


_SPECS: dict[str, dict[str, Any] | None] = {}


def _openapi(srcdir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The server's OpenAPI spec, or None without the ``serve`` extra."""
    key = str(srcdir)
    if key in _SPECS:
        return _SPECS[key]
    try:
        from sphinx_ragcite.server.app import create_app
        from sphinx_ragcite.server.settings import ServerSettings
    except ImportError:
        spec = None
    else:
        # create_app loads nothing until start-up: any existing folder will do.
        spec = create_app(ServerSettings(build_dir=Path(srcdir))).openapi()
    _SPECS[key] = spec
    return spec


def _operations(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        f"{method.upper()} {path}": operation
        for path, methods in spec["paths"].items()
        for method, operation in methods.items()
    }


def _schema_id(name: str) -> str:
    return "schema-" + nodes.make_id(name)


def _code(text: str) -> nodes.literal:
    return nodes.literal(text, text)


def _type_nodes(schema: dict[str, Any]) -> list[nodes.Node]:
    """A schema's type as inline nodes; named schemas link to their table."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        ref = nodes.reference("", "", internal=True, refid=_schema_id(name))
        ref += _code(name)
        return [ref]
    if "anyOf" in schema:
        out: list[nodes.Node] = []
        for i, option in enumerate(schema["anyOf"]):
            if i:
                out.append(nodes.Text(" or "))
            out.extend(_type_nodes(option))
        return out
    if "const" in schema:
        return [_code(json.dumps(schema["const"]))]
    if "enum" in schema:
        out = []
        for i, value in enumerate(schema["enum"]):
            if i:
                out.append(nodes.Text(" | "))
            out.append(_code(json.dumps(value)))
        return out
    kind = schema.get("type")
    if kind == "array":
        return [nodes.Text("array of "), *_type_nodes(schema.get("items", {}))]
    if kind is None:
        return [nodes.Text("any")]
    return [_code(str(kind))]


def _number(value: Any) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _constraints(schema: dict[str, Any]) -> list[str]:
    notes = []
    for option in [schema, *schema.get("anyOf", [])]:
        low, high = option.get("minLength"), option.get("maxLength")
        if low is not None and high is not None:
            notes.append(f"{low} to {high} characters")
        elif low is not None:
            notes.append(f"at least {low} character{'s' * (low != 1)}")
        elif high is not None:
            notes.append(f"at most {high} characters")
        low, high = option.get("minimum"), option.get("maximum")
        if low is not None and high is not None:
            notes.append(f"{_number(low)} to {_number(high)}")
        elif low is not None:
            notes.append(f"at least {_number(low)}")
        elif high is not None:
            notes.append(f"at most {_number(high)}")
        if option.get("maxItems") is not None:
            notes.append(f"at most {option['maxItems']} items")
    if "default" in schema:
        notes.append(f"default {json.dumps(schema['default'])}")
    return notes


def _cell(*children: nodes.Node | str) -> nodes.entry:
    paragraph = nodes.paragraph()
    for child in children:
        paragraph += nodes.Text(child) if isinstance(child, str) else child
    entry = nodes.entry()
    entry += paragraph
    return entry


def _table(
    header: list[str], rows: list[list[nodes.entry]], widths: list[int]
) -> nodes.table:
    table = nodes.table(classes=["ragcite-api-table"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for title in header:
        row += _cell(title)
    head += row
    body = nodes.tbody()
    group += body
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += cell
        body += row
    return table


def _notes_cell(schema: dict[str, Any], description: str = "") -> nodes.entry:
    parts = _constraints(schema)
    text = "; ".join(parts)
    if description:
        text = f"{description.rstrip('.')}" + (f" ({text})" if text else "")
    return _cell(text)


def _field_rows(schema: dict[str, Any]) -> list[list[nodes.entry]]:
    required = set(schema.get("required", ()))
    rows = []
    for name, prop in schema.get("properties", {}).items():
        rows.append(
            [
                _cell(_code(name)),
                _cell(*_type_nodes(prop)),
                _cell("yes" if name in required else "no"),
                _notes_cell(prop, prop.get("description", "")),
            ]
        )
    return rows


def _paragraph(*children: nodes.Node | str) -> nodes.paragraph:
    paragraph = nodes.paragraph()
    for child in children:
        paragraph += nodes.Text(child) if isinstance(child, str) else child
    return paragraph


def _placeholder(schema: dict[str, Any] | None) -> bool:
    """A schema that says nothing but a title (FastAPI's default response)."""
    return bool(schema) and not (set(schema) - {"title", "description"})


def _no_spec_note() -> nodes.Node:
    note = nodes.note()
    note += _paragraph(
        "This part is generated from the server's OpenAPI spec, which needs "
        "the serve extra (fastapi) at docs build time. Install it "
        "(pip install 'sphinx-ragcite[serve]') and rebuild, or read the spec "
        "of a running server at /api/openapi.json."
    )
    return note


class HttpDirective(SphinxDirective):
    required_arguments = 2

    def run(self) -> list[nodes.Node]:
        spec = _openapi(self.env.srcdir)
        if spec is None:
            return [_no_spec_note()]
        key = f"{self.arguments[0].upper()} {self.arguments[1]}"
        operation = _operations(spec).get(key)
        if operation is None:
            raise self.error(f"{key} is not in the server's OpenAPI spec")
        _note(self, "http", key)
        out: list[nodes.Node] = []
        parameters = operation.get("parameters", [])
        if parameters:
            out.append(nodes.rubric("", "Parameters"))
            out.append(
                _table(
                    ["name", "in", "type", "required", "notes"],
                    [
                        [
                            _cell(_code(p["name"])),
                            _cell(p["in"]),
                            _cell(*_type_nodes(p["schema"])),
                            _cell("yes" if p.get("required") else "no"),
                            _notes_cell(p["schema"], p.get("description", "")),
                        ]
                        for p in parameters
                    ],
                    [14, 8, 18, 9, 40],
                )
            )
        body = operation.get("requestBody")
        if body:
            out.append(nodes.rubric("", "Request body"))
            for media, content in body.get("content", {}).items():
                out.append(
                    _paragraph(
                        *_type_nodes(content.get("schema", {})),
                        f" as {media}",
                        " (required)." if body.get("required") else ".",
                    )
                )
        out.append(nodes.rubric("", "Responses"))
        rows = []
        for status, response in operation.get("responses", {}).items():
            if status == "422":  # FastAPI's default; validation errors are 400s
                continue
            contents = response.get("content", {})
            if len(contents) > 1:
                # FastAPI lists application/json with an untyped placeholder
                # beside a media type a route declares itself (the SSE stream).
                contents = {
                    media: content
                    for media, content in contents.items()
                    if not _placeholder(content.get("schema"))
                }
            media_nodes: list[nodes.Node] = []
            for media, content in contents.items():
                schema = content.get("schema")
                if media_nodes:
                    media_nodes.append(nodes.Text("; "))
                if schema and ("$ref" in schema or "type" in schema):
                    media_nodes.extend(_type_nodes(schema))
                    media_nodes.append(nodes.Text(f" ({media})"))
                else:
                    media_nodes.append(nodes.Text(media))
            rows.append(
                [
                    _cell(_code(status)),
                    _cell(response.get("description", "")),
                    _cell(*media_nodes) if media_nodes else _cell("-"),
                ]
            )
        out.append(_table(["status", "meaning", "body"], rows, [8, 36, 40]))
        return out


class HttpSchemasDirective(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        spec = _openapi(self.env.srcdir)
        if spec is None:
            return [_no_spec_note()]
        out: list[nodes.Node] = []
        schemas = spec.get("components", {}).get("schemas", {})
        for name, schema in sorted(schemas.items()):
            if name in FASTAPI_VALIDATION:
                continue
            rubric = nodes.rubric("", "", ids=[_schema_id(name)])
            rubric += _code(name)
            self.state.document.note_explicit_target(rubric)
            out.append(rubric)
            description = (schema.get("description") or "").replace("``", "")
            extra = (
                " Further fields may be present."
                if schema.get("additionalProperties") is True
                else ""
            )
            if description or extra:
                out.append(_paragraph((description + extra).strip()))
            out.append(
                _table(
                    ["field", "type", "required", "notes"],
                    _field_rows(schema),
                    [18, 26, 9, 40],
                )
            )
        return out


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("ragcite-config", ConfigDirective)
    app.add_directive("ragcite-cli", CliDirective)
    app.add_directive("ragcite-http", HttpDirective)
    app.add_directive("ragcite-http-schemas", HttpSchemasDirective)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("env-check-consistency", check)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
