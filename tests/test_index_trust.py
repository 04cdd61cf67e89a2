"""A doctored or damaged ``_ragcite/`` fails at load with one clear message.

Each case is a reproduction from the hardening report: the manifest naming
files outside the index, links and FIFOs, malformed manifest fields, and
well-formed files with bad content. ``Site.load`` must raise
:class:`SiteIndexError` (the CLI's exit 2, the server's refusal to start)
before anything is served; nothing may hang, read outside the folder or
run out of memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sphinx_ragcite.errors import SiteIndexError
from sphinx_ragcite.retrieval.site import Site


def manifest_of(site: Path) -> dict[str, Any]:
    return json.loads((site / "_ragcite" / "manifest.json").read_text())


def write_manifest(site: Path, manifest: dict[str, Any]) -> None:
    (site / "_ragcite" / "manifest.json").write_text(json.dumps(manifest))


def replace_role(site: Path, role: str, data: bytes) -> None:
    """Give *role* new content and make the manifest vouch for it."""
    manifest = manifest_of(site)
    (site / "_ragcite" / manifest["files"][role]).write_bytes(data)
    manifest["sha256"][role] = hashlib.sha256(data).hexdigest()
    manifest["bytes"][role] = len(data)
    write_manifest(site, manifest)


def point_role(site: Path, role: str, name: str, data: bytes | None = None) -> None:
    """Make the manifest name *name* for *role*, with a matching digest."""
    manifest = manifest_of(site)
    manifest["files"][role] = name
    if data is not None:
        manifest["sha256"][role] = hashlib.sha256(data).hexdigest()
        manifest["bytes"][role] = len(data)
    write_manifest(site, manifest)


def fails(site: Path, match: str) -> None:
    with pytest.raises(SiteIndexError, match=match):
        Site.load(site)


# -- item 4: every file a plain file inside _ragcite/ --------------------------


def test_a_relative_path_out_of_the_index_is_refused(index_copy: Path) -> None:
    outside = index_copy / "outside"
    outside.mkdir()
    manifest = manifest_of(index_copy)
    data = (index_copy / "_ragcite" / manifest["files"]["passages"]).read_bytes()
    (outside / "passages.jsonl").write_bytes(data)
    point_role(index_copy, "passages", "../outside/passages.jsonl", data)
    fails(index_copy, "outside the index")


def test_an_absolute_path_is_refused(index_copy: Path) -> None:
    manifest = manifest_of(index_copy)
    path = (index_copy / "_ragcite" / manifest["files"]["passages"]).resolve()
    point_role(index_copy, "passages", str(path), path.read_bytes())
    fails(index_copy, "outside the index")


def test_a_symlink_to_an_outside_file_is_refused(
    index_copy: Path, tmp_path: Path
) -> None:
    manifest = manifest_of(index_copy)
    inside = index_copy / "_ragcite" / manifest["files"]["passages"]
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(inside.read_bytes())
    inside.unlink()
    inside.symlink_to(outside)
    fails(index_copy, "symbolic link")


def test_a_symlinked_manifest_is_refused(index_copy: Path, tmp_path: Path) -> None:
    path = index_copy / "_ragcite" / "manifest.json"
    outside = tmp_path / "manifest.json"
    shutil.move(path, outside)
    path.symlink_to(outside)
    fails(index_copy, "symbolic link")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_does_not_hang_the_loader(index_copy: Path) -> None:
    """Run in a child with a deadline: a hang is a failure, not a stuck suite."""
    os.mkfifo(index_copy / "_ragcite" / "trap")
    manifest = manifest_of(index_copy)
    if "moved" not in manifest["files"]:
        pytest.skip("this build has no moved links")
    point_role(index_copy, "moved", "trap")
    code = (
        "import sys\n"
        "from sphinx_ragcite.retrieval.site import Site\n"
        "from sphinx_ragcite.errors import SiteIndexError\n"
        "try:\n"
        f"    Site.load({str(index_copy)!r})\n"
        "except SiteIndexError as e:\n"
        "    print(e); sys.exit(2)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "not a regular file" in result.stdout


def test_dev_zero_is_not_read(index_copy: Path) -> None:
    role = "moved" if "moved" in manifest_of(index_copy)["files"] else "passages"
    point_role(index_copy, role, "/dev/zero")
    fails(index_copy, "outside the index")


def test_a_size_that_disagrees_with_the_manifest(index_copy: Path) -> None:
    manifest = manifest_of(index_copy)
    manifest["bytes"]["passages"] += 1
    write_manifest(index_copy, manifest)
    fails(index_copy, "the manifest says")


# -- item 5: the manifest and the records are validated -------------------------


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m.pop("counts"), "counts"),
        (lambda m: m.update(files=list(m["files"].values())), "files"),
        (lambda m: m["sha256"].update(passages=None), "sha256"),
        (lambda m: m["files"].update(passages=7), "files"),
        (lambda m: m.update(embedding="minilm"), "embedding"),
        (lambda m: m["embedding"].pop("max_tokens"), "max_tokens"),
        (lambda m: m["counts"].update(passages=-1), "counts"),
        (lambda m: m["files"].pop("bm25.vocab"), "bm25.vocab"),
    ],
    ids=[
        "no-counts",
        "files-a-list",
        "sha256-null",
        "passages-an-int",
        "embedding-a-string",
        "no-max-tokens",
        "negative-count",
        "no-vocab",
    ],
)
def test_malformed_manifest_fields(index_copy: Path, edit: Any, match: str) -> None:
    manifest = manifest_of(index_copy)
    edit(manifest)
    write_manifest(index_copy, manifest)
    fails(index_copy, f"damaged.*{match}")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("[1,2]", "not a passage record"),
        ('{"docname": "x"}', "passage_id is missing"),
        ("not json", "not a passage record"),
    ],
)
def test_bad_passage_lines(index_copy: Path, line: str, match: str) -> None:
    manifest = manifest_of(index_copy)
    path = index_copy / "_ragcite" / manifest["files"]["passages"]
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = line.encode() + b"\n"
    replace_role(index_copy, "passages", b"".join(lines))
    fails(index_copy, f"line 4: {match}")


def test_a_repeated_passage_id(index_copy: Path) -> None:
    manifest = manifest_of(index_copy)
    path = index_copy / "_ragcite" / manifest["files"]["passages"]
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[0]
    replace_role(index_copy, "passages", b"".join(lines))
    fails(index_copy, "repeats")


def test_a_moved_value_that_is_not_a_url(index_copy: Path) -> None:
    if "moved" not in manifest_of(index_copy)["files"]:
        point_role(index_copy, "moved", "moved.bad.js")
        manifest = manifest_of(index_copy)
        manifest["files"]["moved"] = "moved.bad.js"
        write_manifest(index_copy, manifest)
        (index_copy / "_ragcite" / "moved.bad.js").write_bytes(b"")
    replace_role(
        index_copy, "moved", b'globalThis.ragcite_moved={"a.html#ch1-sec1-p1":[]};\n'
    )
    fails(index_copy, "not a URL")


def npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def test_an_npy_header_claiming_gigabytes(index_copy: Path) -> None:
    """A header of shape (300M, 128) over a few bytes: refused, not allocated."""
    data = npy(np.zeros((2, 128), dtype=np.int8))
    header_end = data.index(b"\n") + 1
    header = data[:header_end].replace(b"(2, 128)", b"(300000000, 128)")
    header = header[:-1].ljust(header_end - 1) + b"\n"
    replace_role(
        index_copy, "embeddings", header[: len(data[:header_end])] + data[header_end:]
    )
    fails(index_copy, "shape")


def test_embeddings_of_the_wrong_dimension(index_copy: Path) -> None:
    count = manifest_of(index_copy)["counts"]["passages"]
    replace_role(index_copy, "embeddings", npy(np.zeros((count, 16), dtype=np.int8)))
    fails(index_copy, r"shape \(" + str(count) + ", 16\\)")


def test_embeddings_that_are_not_numbers(index_copy: Path) -> None:
    count = manifest_of(index_copy)["counts"]["passages"]
    scales = np.full(count, np.nan, dtype=np.float32)
    replace_role(index_copy, "embedding_scales", npy(scales))
    fails(index_copy, "non-numbers")


def test_sentence_vectors_with_a_flipped_byte(index_copy: Path) -> None:
    """The mapped file is checked like a read one: its digest, at load."""
    manifest = manifest_of(index_copy)
    path = index_copy / "_ragcite" / manifest["files"]["sentence_embeddings"]
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    fails(index_copy, "checksum")


def test_sentence_vectors_of_the_wrong_shape(index_copy: Path) -> None:
    total = manifest_of(index_copy)["embedding"]["sentences"]
    replace_role(
        index_copy, "sentence_embeddings", npy(np.zeros((total, 16), dtype=np.int8))
    )
    fails(index_copy, "sentence_embeddings")


def test_sentence_offsets_that_run_backwards(index_copy: Path) -> None:
    count = manifest_of(index_copy)["counts"]["passages"]
    offsets = np.zeros(count + 1, dtype=np.int64)
    offsets[1] = 5  # then back to 0
    replace_role(index_copy, "sentence_offsets", npy(offsets))
    fails(index_copy, "row starts")


def test_empty_bm25_parameters(index_copy: Path) -> None:
    replace_role(index_copy, "bm25.params", b"{}")
    fails(index_copy, "does not index")


def test_bm25_arrays_that_do_not_fit(index_copy: Path) -> None:
    replace_role(index_copy, "bm25.indptr", npy(np.array([0, 5, 3], dtype=np.int32)))
    fails(index_copy, "do not fit")


@pytest.mark.slow
def test_the_cli_says_what_is_wrong_and_exits_2(index_copy: Path) -> None:
    manifest = manifest_of(index_copy)
    manifest["files"]["passages"] = "../../etc/passwd"
    write_manifest(index_copy, manifest)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx_ragcite",
            "search",
            "bloom",
            "--site",
            str(index_copy),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "outside the index" in result.stderr
    assert "Traceback" not in result.stderr
