"""A JSON document split into content-addressed blobs, so what many payloads share is stored once.

Every model call sends the whole message list again, and every turn's tool result travels in the
tool's result, the next model call and the carried state. Stored whole, a conversation pays for
every earlier turn again at every turn. Split here, a long string, a large object (a message, a
tool result) and a run of list items each become a blob named by the SHA-256 of its bytes, and the
document keeps a reference `{"$ref": digest}` instead: a turn stores only what it adds.

A long list is cut into runs at content-defined boundaries (after an item whose digest ends on a
multiple of CHUNK_SPREAD), and the list becomes `{"$cat": [parts]}`. The boundaries depend on the
items only, so a list that grew at the end, or lost its oldest items to compaction, keeps its
earlier runs: they are found, not stored again. Only the open run at the end (no boundary after it
yet) changes as the list grows; the complete runs before it, once many, go under one reference to
a node built the same way over their references, one level up. A node of level k changes only when
a run of the level below completes, about every CHUNK_SPREAD**k items, so a payload that adds an
item stores the open run, a small root and, on average, a constant number of node bytes, however
long the list already is (a balanced tree would store a node per level, a number that grows with
the list's length).

Pure functions, no I/O: `split` returns the root and the blobs to write; `join` rebuilds the
document from the root and the blobs it reaches (`references` names them, level by level).
An object of many keys (a book of approval requests that grows every turn) is cut the same way,
as a list of its `[key, value]` pairs: `{"$map": ...}`. A document's own objects with a key `$ref`,
`$cat`, `$map` or `$lit` are wrapped as `{"$lit": {...}}`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

REF, CAT, LIT, MAP = "$ref", "$cat", "$lit", "$map"
_MARKERS = frozenset((REF, CAT, LIT, MAP))
STRING_MIN_BYTES = 512  # a string this long is a blob of its own
NODE_MIN_BYTES = 512  # an object or list that encodes this long is a blob of its own
LIST_MIN_ITEMS = 8  # a list this long (and NODE_MIN_BYTES long) is cut into runs
CHUNK_SPREAD = 4  # runs of about this many items on average (the rewritten tail of a level: half that)
CHUNK_MAX_ITEMS = 16


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def digest_of(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()


class _Splitter:
    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def blob(self, blob: bytes) -> dict[str, str]:
        digest = digest_of(blob)
        self.blobs[digest] = blob
        return {REF: digest}

    def node(self, value: Any) -> Any:
        if isinstance(value, str):
            encoded = dumps(value)
            return self.blob(encoded) if len(encoded) >= STRING_MIN_BYTES else value
        if isinstance(value, dict):
            inner = {key: self.node(item) for key, item in value.items()}
            shaped: Any = {LIT: inner} if _MARKERS.intersection(inner) else inner
            encoded = dumps(shaped)
            if len(encoded) < NODE_MIN_BYTES:
                return shaped
            if len(inner) >= LIST_MIN_ITEMS:  # a growing map (a book of requests): runs of its pairs
                return {MAP: self.items([[key, item] for key, item in inner.items()])}
            return self.blob(encoded)
        if isinstance(value, list):
            return self.items([self.node(item) for item in value])
        return value

    def items(self, items: list[Any]) -> Any:
        encoded = dumps(items)
        if len(encoded) < NODE_MIN_BYTES:
            return items
        if len(items) < LIST_MIN_ITEMS:
            return self.blob(encoded)
        return {CAT: self.parts(items, lambda run: dumps(run))}

    def parts(self, elements: list[Any], run_blob: Callable[[list[Any]], bytes]) -> list[Any]:
        """Parts (references, each joining to a list) whose concatenation is `elements` joined.

        The complete runs (ended at a boundary: a list that grows keeps them as they are) come
        first, under one reference to a node built the same way one level up once there are many;
        the open tail run after them, the only part that changes as the list grows, comes last.
        """
        complete, tail = _runs(elements)
        refs = [self.blob(run_blob(run)) for run in complete]
        head = refs if len(refs) < LIST_MIN_ITEMS else [self.blob(dumps({CAT: self.parts(refs, _cat)}))]
        if not tail:
            return head
        # One level up the tail is references already: listed as they are, not a blob of their own.
        return head + (tail if run_blob is _cat else [self.blob(run_blob(tail))])


def _cat(run: list[Any]) -> bytes:
    return dumps({CAT: run})


def _runs(items: list[Any]) -> tuple[list[list[Any]], list[Any]]:
    """The complete runs (each ended after a boundary item, or at CHUNK_MAX_ITEMS) and the open tail."""
    complete: list[list[Any]] = []
    run: list[Any] = []
    for item in items:
        run.append(item)
        mark = item[REF] if isinstance(item, dict) and set(item) == {REF} else digest_of(dumps(item))
        if int(mark[-6:], 16) % CHUNK_SPREAD == 0 or len(run) >= CHUNK_MAX_ITEMS:
            complete.append(run)
            run = []
    return complete, run


def split(document: Any) -> tuple[bytes, dict[str, bytes]]:
    """The root (the document with references) and every blob it reaches, by digest."""
    splitter = _Splitter()
    root = dumps(splitter.node(document))
    return root, splitter.blobs


def references(value: Any) -> Iterator[str]:
    """The digests a decoded JSON value refers to directly (not those inside the blobs)."""
    if isinstance(value, dict):
        if set(value) == {REF}:
            yield value[REF]
            return
        for item in value.values():
            yield from references(item)
    elif isinstance(value, list):
        for item in value:
            yield from references(item)


def join(root: Any, blobs: Mapping[str, Any]) -> Any:
    """The document again, from the parsed root and every blob it reaches (parsed, by digest)."""
    if isinstance(root, list):
        return [join(item, blobs) for item in root]
    if not isinstance(root, dict):
        return root
    if set(root) == {REF}:
        return join(blobs[root[REF]], blobs)
    if set(root) == {CAT}:
        joined: list[Any] = []
        for part in root[CAT]:
            run = join(part, blobs)
            if not isinstance(run, list):
                raise ValueError("a $cat part is not a list")
            joined.extend(run)
        return joined
    if set(root) == {LIT}:
        return {key: join(item, blobs) for key, item in root[LIT].items()}
    if set(root) == {MAP}:
        return {key: item for key, item in join(root[MAP], blobs)}  # the pairs come back joined
    return {key: join(item, blobs) for key, item in root.items()}
