"""int8 passage codes times an int8 query, exactly, in int32 (onnxruntime).

numpy has no fast integer matrix product, and converting 200k int8 rows to
float32 for every question costs more than the product itself; onnxruntime's
``MatMulInteger`` streams the int8 codes (a quarter of the float32 bytes)
through its VNNI/AVX2 kernels. onnxruntime is already loaded for the
embedding model. The one-node graph is encoded here by hand (protobuf wire
format): the ``onnx`` package is not a dependency for 300 bytes.

Exactness: AVX2 without VNNI multiplies unsigned x signed bytes into 16-bit
pair sums that saturate above 32,767. The codes go in as unsigned bytes
(code + 128, zero point 128, at most 255) and the query as signed bytes of at
most 63 in magnitude, so a pair sums to at most 2 x 255 x 63 = 32,130: the
int32 result is the exact integer product on every CPU.
"""

from __future__ import annotations

import os

import numpy as np

#: The query's integer range (see the module docstring: no 16-bit saturation).
QUERY_LIMIT = 63
#: ONNX element types.
_UINT8, _INT8, _INT32 = 2, 3, 6


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | 0x80 if n else low)
        if not n:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    """One protobuf field: an int as a varint, a string or message as bytes."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor(name: str, elem: int, dims: list[int | str]) -> bytes:
    """A ValueInfoProto: name, then TypeProto.tensor_type (elem_type, shape)."""
    shape = b"".join(
        _field(1, _field(1, d) if isinstance(d, int) else _field(2, d)) for d in dims
    )
    return _field(1, name) + _field(2, _field(1, _field(1, elem) + _field(2, shape)))


def matmul_integer_model(dim: int) -> bytes:
    """``y[n, 1] = (codes[n, dim] - zero) @ query[dim, 1]`` as an ONNX model."""
    node = b"".join(_field(1, name) for name in ("codes", "query", "zero"))
    node += _field(2, "y") + _field(4, "MatMulInteger")
    graph = _field(1, node) + _field(2, "ragcite_int8_product")
    graph += _field(11, _tensor("codes", _UINT8, ["rows", dim]))
    graph += _field(11, _tensor("query", _INT8, [dim, 1]))
    graph += _field(11, _tensor("zero", _UINT8, []))
    graph += _field(12, _tensor("y", _INT32, ["rows", 1]))
    opset = _field(1, "") + _field(2, 13)
    return _field(1, 8) + _field(8, opset) + _field(7, graph)


class Int8Product:
    """``codes @ query`` for uint8 codes (code + 128) and an int8 query."""

    def __init__(self, dim: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # The product is bound by memory bandwidth: two threads take ~3.4 ms
        # at 200k passages where one takes ~4.8 (idle 2 cores); more add
        # little. No spinning: waiting threads must not eat a shared core.
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            matmul_integer_model(dim), options, providers=["CPUExecutionProvider"]
        )
        self._zero = np.array(128, dtype=np.uint8)

    def __call__(self, codes: np.ndarray, query: np.ndarray) -> np.ndarray:
        """int32 [rows]: exact while ``|query| <= QUERY_LIMIT``."""
        result = self._session.run(
            None,
            {"codes": codes, "query": query.reshape(-1, 1), "zero": self._zero},
        )[0]
        return np.asarray(result).reshape(-1)
