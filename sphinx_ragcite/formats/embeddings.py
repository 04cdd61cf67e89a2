"""``embeddings.npy`` + ``embedding_scales.npy``: int8 vectors, a scale per row."""

from __future__ import annotations

import io

import numpy as np

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.formats.files import REBUILD


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 with one float32 scale per vector: 4 x smaller, cosine error ~1e-4."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scale


def dequantize(codes: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return codes.astype(np.float32) * scale[:, None]


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def read_npy_header(
    data: bytes, shape: tuple[int, ...], dtype: str | tuple[str, ...], where: str
) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and body offset of the ``.npy`` whose first bytes are *data*,
    after they matched the *shape* the manifest implies (``-1``: any length)."""
    stream = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(stream)
        read_header = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        header = read_header(stream, max_header_size=10_000)
    except (ValueError, OSError, SyntaxError) as error:
        raise SiteIndexError(f"{where} cannot be read ({error}). {REBUILD}") from None
    found_shape, fortran, found_dtype = header
    found_shape = tuple(found_shape)
    dtypes = {np.dtype(d) for d in ((dtype,) if isinstance(dtype, str) else dtype)}
    fits = len(found_shape) == len(shape) and all(
        want in (-1, got) for want, got in zip(shape, found_shape, strict=True)
    )
    if not fits or found_dtype not in dtypes or fortran:
        raise SiteIndexError(
            f"{where} holds a {found_dtype} array of shape {found_shape}; the "
            f"manifest implies {'/'.join(map(str, sorted(dtypes, key=str)))} "
            f"{shape}. {REBUILD}"
        )
    return found_shape, found_dtype, stream.tell()


def read_npy(
    data: bytes, shape: tuple[int, ...], dtype: str | tuple[str, ...], where: str
) -> np.ndarray:
    """The array, after its header matched the *shape* the manifest implies.

    ``-1`` in *shape* accepts any length there. The header and the byte count
    are checked before any memory is set aside: a header claiming gigabytes
    must not become a MemoryError.
    """
    found_shape, found_dtype, offset = read_npy_header(data, shape, dtype, where)
    body = memoryview(data)[offset:]
    count = int(np.prod(found_shape))
    if len(body) != count * found_dtype.itemsize:
        raise SiteIndexError(f"{where} is truncated or padded. {REBUILD}")
    return np.frombuffer(body, dtype=found_dtype, count=count).reshape(found_shape)


def read_vectors(
    codes: bytes, scales: bytes, rows: int, dim: int, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """The passage vectors' int8 codes and float32 scales, shapes checked.

    Their values are checked by the store that holds them
    (:class:`~sphinx_ragcite.retrieval.dense.DenseVectors`), in the one pass
    over every row it makes anyway.
    """
    return (
        read_npy(codes, (rows, dim), "int8", f"{where}/embeddings"),
        read_npy(scales, (rows,), "float32", f"{where}/embedding_scales"),
    )
