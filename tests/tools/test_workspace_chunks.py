"""The pure parts of workspace saves: content-defined chunks, and the manifest stored as pages."""

from __future__ import annotations

import dataclasses
import json
import random

from payload_store import blob_tree
from payload_store.workspace_chunks import (
    MAX_BYTES,
    MIN_BYTES,
    FileEntry,
    Manifest,
    iter_chunks,
    parse_manifest,
    split_chunks,
)
from payload_store.workspace_manifest import EncodedPages, encode_manifest
from tests.tools.test_workspace_saves import text_lines


def test_chunks_are_bounded_cut_at_line_ends_and_resynchronise_after_an_edit() -> None:
    lines = text_lines(40_000)
    data = "".join(lines).encode()
    chunks = split_chunks(data)
    assert b"".join(chunks) == data and all(c.endswith(b"\n") for c in chunks)
    assert all(MIN_BYTES <= len(c) <= MAX_BYTES for c in chunks[:-1])
    assert split_chunks(data) == chunks  # deterministic
    lines.insert(100, "a line added near the top\n")
    edited = split_chunks("".join(lines).encode())
    assert len(set(edited) - set(chunks)) <= 2 and len(set(chunks) - set(edited)) <= 2
    binary = random.Random(1).randbytes(MAX_BYTES * 3 + 5).replace(b"\n", b"-")
    assert [len(c) for c in split_chunks(binary)] == [MAX_BYTES] * 3 + [5]
    assert split_chunks(b"") == [] and split_chunks(b"short") == [b"short"]
    pieces = [data[i : i + 100_003] for i in range(0, len(data), 100_003)]  # a file read piece by piece
    assert list(iter_chunks(pieces)) == chunks


def test_a_stored_manifest_reads_back_and_one_changed_entry_stores_little() -> None:
    def digest(k: int) -> str:
        return blob_tree.digest_of(str(k).encode())

    files = {f"src/m{k // 50}/f{k}.py": FileEntry(0o644, 1000 + k, (digest(k),)) for k in range(5000)}
    files["data/big.csv"] = FileEntry(0o600, 300 * 65536, tuple(digest(-k) for k in range(300)))
    manifest = Manifest(files, links={"latest": "data/big.csv"}, dirs={f"src/m{k}": 0o755 for k in range(100)})
    root, blobs = encode_manifest(manifest, EncodedPages())
    parsed = {d: json.loads(b) for d, b in blobs.items()}
    assert parse_manifest(blob_tree.join(json.loads(root), parsed)) == manifest
    assert set(blob_tree.references(json.loads(root))) <= blobs.keys()
    stored = sum(map(len, blobs.values())) + len(root)

    pages = EncodedPages()
    encode_manifest(manifest, pages)
    for path, changed in (
        ("src/m7/f377.py", (digest(-1),)),
        ("data/big.csv", (digest(1), *files["data/big.csv"].chunks[1:])),
    ):
        edited = dataclasses.replace(manifest, files={**files, path: FileEntry(0o644, 5, changed)})
        new_root, new_blobs = encode_manifest(edited, pages)
        new_bytes = len(new_root) + sum(len(b) for d, b in new_blobs.items() if d not in blobs)
        assert new_bytes < 0.02 * stored, (path, new_bytes, stored)
        assert (new_root, new_blobs) == encode_manifest(edited, EncodedPages())  # the cache changes nothing
