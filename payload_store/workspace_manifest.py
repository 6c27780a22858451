"""A workspace manifest as content-addressed pages, in blob_tree's shape, each page encoded once.

Every save stores the whole manifest, but a tool changes a few files: cut into pages, a changed
entry makes one new page, a new node above it and a new root, and the rest are found in the store.
blob_tree.split would cut it as well, but encodes and hashes every entry at every save; here a
page is keyed by its entries and encoded once per process, so a save of an unchanged workspace
hashes nothing. The shape is blob_tree's (`$ref`, `$cat`, `$map`), so blob_tree.join reads it back
and blob_tree.references walks it (the restore, the collector).

Pages end after an entry whose path's CRC-32 is a multiple of PAGE_SPREAD (a file added or removed
changes its own page only) or at PAGE_MAX; more than LEVEL_MAX references go under nodes one
level up, cut the same way by digest. A file of more than LONG_LIST chunks lists them in runs
(cut after a digest that is a multiple of RUN_SPREAD), so an edit in a big file rewrites one run.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from payload_store.blob_tree import CAT, MAP, REF, digest_of, dumps
from payload_store.workspace_chunks import MANIFEST_VERSION, FileEntry, Manifest

PAGE_SPREAD = 8
PAGE_MAX = 32
LEVEL_MAX = 16
LEVEL_SPREAD = 4
LONG_LIST = 64
RUN_SPREAD = 32
Item = TypeVar("Item")


Encoded = tuple[str, bytes, dict[str, bytes]]  # digest, blob, and the blobs below it


class EncodedPages:
    """Blobs by what they encode (a page's entries, a node's references), for this process."""

    def __init__(self, limit: int = 200_000) -> None:
        self._blobs: dict[Hashable, Encoded] = {}
        self._limit = limit

    def get(self, key: Hashable) -> Encoded | None:
        return self._blobs.get(key)

    def keep(self, key: Hashable, encoded: Encoded) -> None:
        if len(self._blobs) >= self._limit:
            self._blobs.clear()
        self._blobs[key] = encoded


class _Encoder:
    def __init__(self, pages: EncodedPages) -> None:
        self.pages = pages
        self.blobs: dict[str, bytes] = {}

    def ref(self, key: Hashable, value: Callable[[_Encoder], Any]) -> dict[str, str]:
        """A reference to the blob of `value` (built, with what it refers to, only if not encoded before)."""
        found = self.pages.get(key)
        if found is None:
            below = _Encoder(self.pages)
            blob = dumps(value(below))
            found = (digest_of(blob), blob, below.blobs)
            self.pages.keep(key, found)
        digest, blob, blobs_below = found
        self.blobs.update(blobs_below)
        self.blobs[digest] = blob
        return {REF: digest}

    def entry(self, entry: FileEntry) -> dict[str, Any]:
        chunks: Any = list(entry.chunks)
        if len(entry.chunks) > LONG_LIST:
            runs = _cut(entry.chunks, lambda digest: int(digest[:8], 16) % RUN_SPREAD == 0, LONG_LIST)
            chunks = {CAT: [self.ref(("run", *run), partial(_plain, list(run))) for run in runs]}
        return {"mode": entry.mode, "size": entry.size, "chunks": chunks}

    def pairs(self, kind: str, items: dict[str, Any], value: Callable[[_Encoder, Any], Any]) -> dict[str, Any]:
        """`{"$map": ...}` over the sorted (path, item) pairs, cut into pages."""
        pairs = sorted(items.items())
        pages = _cut(pairs, lambda pair: zlib.crc32(pair[0].encode()) % PAGE_SPREAD == 0, PAGE_MAX)
        refs = [self.ref((kind, *page), partial(_page, page, value)) for page in pages]
        return {MAP: self.levels(refs)}

    def levels(self, refs: list[dict[str, str]]) -> dict[str, Any]:
        while len(refs) > LEVEL_MAX:
            runs = _cut(refs, lambda ref: int(ref[REF][:8], 16) % LEVEL_SPREAD == 0, LEVEL_MAX)
            refs = [self.ref(("level", *(r[REF] for r in run)), partial(_plain, {CAT: list(run)})) for run in runs]
        return {CAT: refs}


def encode_manifest(manifest: Manifest, pages: EncodedPages) -> tuple[bytes, dict[str, bytes]]:
    """The root and every blob it reaches, by digest (those encoded for an earlier save come from `pages`)."""
    encoder = _Encoder(pages)
    document = {
        "version": MANIFEST_VERSION,
        "files": encoder.pairs("files", manifest.files, lambda below, entry: below.entry(entry)),
        "links": encoder.pairs("links", manifest.links, lambda _, target: target),
        "dirs": encoder.pairs("dirs", manifest.dirs, lambda _, mode: mode),
    }
    return dumps(document), encoder.blobs


def _plain(value: Any, _: _Encoder) -> Any:
    return value


def _page(page: tuple[tuple[str, Any], ...], value: Callable[[_Encoder, Any], Any], encoder: _Encoder) -> Any:
    return [[path, value(encoder, item)] for path, item in page]


def _cut(items: Sequence[Item], ends_after: Callable[[Item], bool], most: int) -> Iterator[tuple[Item, ...]]:
    run: list[Item] = []
    for item in items:
        run.append(item)
        if ends_after(item) or len(run) >= most:
            yield tuple(run)
            run = []
    if run:
        yield tuple(run)
