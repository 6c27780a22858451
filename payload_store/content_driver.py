"""The storage driver that stores each part of a payload once (see blob_tree for the splitting).

A JSON payload handed to the payload store is split into blobs; the root (a Payload whose data is
the document with references, marked TREE_MARKER) is what the history's reference names. Reading
fetches the root, then the blobs it reaches level by level, and gives back the payload as it was
(the same JSON value; the bytes re-encoded compactly). Payloads that are not JSON are stored whole
as their own root. The same driver runs over local files or S3 (blob_files).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from payload_store import blob_tree
from payload_store.blob_files import BlobFiles
from payload_store.local import PayloadStoreError

LOCAL_DRIVER_NAME = "local-blobs"
S3_DRIVER_NAME = "s3-blobs"
TREE_MARKER = "blob-tree"
_JSON = (b"json/plain",)
_CACHE_BYTES = 32 * 2**20


def split_payload(payload: Payload) -> tuple[bytes, dict[str, bytes]]:
    """The root Payload's bytes and the blobs it refers to (none for a payload that is not JSON)."""
    if payload.metadata.get("encoding") in _JSON:
        try:
            document = json.loads(payload.data)
        except ValueError:
            document = None
        else:
            tree, blobs = blob_tree.split(document)
            root = Payload()
            root.CopyFrom(payload)
            root.data = tree
            root.metadata[TREE_MARKER] = b"1"
            return root.SerializeToString(deterministic=True), blobs
    return payload.SerializeToString(deterministic=True), {}


def root_references(root: Payload) -> list[str]:
    """The blobs a root refers to directly."""
    if root.metadata.get(TREE_MARKER) != b"1":
        return []
    return list(blob_tree.references(json.loads(root.data)))


class _ParsedBlobs:
    """Blobs read lately, parsed: a long conversation reads the same messages at every call."""

    def __init__(self, limit: int = _CACHE_BYTES) -> None:
        self._items: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self._bytes, self._limit = 0, limit

    def get(self, digest: str) -> Any | None:
        found = self._items.get(digest)
        if found is None:
            return None
        self._items.move_to_end(digest)
        return found

    def add(self, digest: str, size: int, value: Any) -> None:
        if digest in self._items or size > self._limit:
            return
        self._items[digest] = (size, value)
        self._bytes += size
        while self._bytes > self._limit:
            _, (gone, _) = self._items.popitem(last=False)
            self._bytes -= gone


class ContentAddressedDriver(StorageDriver):
    def __init__(self, files: BlobFiles, name: str) -> None:
        self.files = files
        self._name = name
        self._parsed = _ParsedBlobs()

    def name(self) -> str:
        return self._name

    def type(self) -> str:
        return "content-addressed-blobs"

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        roots: dict[str, bytes] = {}
        blobs: dict[str, bytes] = {}
        claims = []
        for payload in payloads:
            root, parts = split_payload(payload)
            digest = blob_tree.digest_of(root)
            roots[digest] = root
            blobs.update(parts)
            claims.append(StorageDriverClaim(claim_data={"hash_algorithm": "sha256", "hash_value": digest}))
        await self.files.put("blobs", blobs)  # the parts first: a root never names a missing blob
        await self.files.put("roots", roots)
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        digests = []
        for claim in claims:
            if claim.claim_data.get("hash_algorithm") != "sha256":
                raise PayloadStoreError(f"unsupported claim for {self._name}: {dict(claim.claim_data)}")
            digests.append(claim.claim_data.get("hash_value", ""))
        found = await self.files.get("roots", digests)
        return [await self._rebuild(found[digest]) for digest in digests]

    async def _rebuild(self, blob: bytes) -> Payload:
        payload = Payload()
        payload.ParseFromString(blob)
        if payload.metadata.get(TREE_MARKER) != b"1":
            return payload
        tree = json.loads(payload.data)
        parsed: dict[str, Any] = {}
        frontier = set(blob_tree.references(tree))
        while frontier:  # one read per level of the tree, every blob of a level at once
            wanted = []
            for digest in frontier:
                cached = self._parsed.get(digest)
                if cached is None:
                    wanted.append(digest)
                else:
                    parsed[digest] = cached[1]
            for digest, raw in (await self.files.get("blobs", wanted)).items():
                parsed[digest] = json.loads(raw)
                self._parsed.add(digest, len(raw), parsed[digest])
            frontier = {ref for digest in frontier for ref in blob_tree.references(parsed[digest])} - parsed.keys()
        del payload.metadata[TREE_MARKER]
        payload.data = blob_tree.dumps(blob_tree.join(tree, parsed))
        return payload
