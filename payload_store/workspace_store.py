"""Where workspace saves live in the payload store: chunks, manifest parts, one pointer per workspace.

Chunks are the files' bytes (kind `chunks`); a manifest is cut into pages (workspace_manifest, in
blob_tree's shape), its pages and root stored with the payloads' blobs (kind `blobs`, JSON like
theirs), so a save that changed one entry of a large manifest stores a few small parts. Both are
named by their SHA-256 and written only when the store lacks them, which is what `put_new` counts.
The pointer (`workspaces/NAME.json` under the local directory or the S3 prefix) is the one mutable
object: the latest save of a workspace, read by a restore on another host and by the collector
(`saved_digests`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from payload_store import blob_tree
from payload_store.blob_files import (
    KnownDigests,
    LocalBlobFiles,
    ObjectClient,
    S3BlobFiles,
    checked,
    found_again,
    missing,
)
from payload_store.local import stored_or_said, write_atomically
from payload_store.workspace_chunks import Manifest, ManifestError, parse_manifest
from payload_store.workspace_manifest import EncodedPages, encode_manifest

CHUNKS = "chunks"
MANIFEST_PARTS = "blobs"
POINTERS = "workspaces"
_DIGEST = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_PARALLEL_WRITES = 8


def pointer_name(name: str) -> str:
    """A workspace's name as one safe path segment (what workspace_dir_name gives), else ValueError."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"workspace name {name!r} is not a single safe path segment")
    return f"{name}.json"


_FOUND: dict[str, KnownDigests] = {}  # by store location: what one WorkspaceSaves found, the next need not look for


def _found_in(where: str) -> KnownDigests:
    return _FOUND.setdefault(where, KnownDigests())


class WorkspaceStore(Protocol):
    def where(self) -> str: ...

    async def put_new(self, kind: str, blobs: Mapping[str, bytes]) -> int: ...

    def put_new_from_thread(self, kind: str, blobs: Mapping[str, bytes], loop: asyncio.AbstractEventLoop) -> int:
        """put_new from a worker thread (a save reading files); the bytes that were new to the store."""
        ...

    def get_from_thread(
        self, kind: str, digests: Iterable[str], loop: asyncio.AbstractEventLoop
    ) -> dict[str, bytes]: ...

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]: ...

    async def read_pointer(self, name: str) -> bytes | None: ...

    async def write_pointer(self, name: str, data: bytes) -> None: ...


class LocalWorkspaceStore:
    """`ROOT/chunks/XX/DIGEST`, the manifest parts in `ROOT/blobs/XX/DIGEST`, `ROOT/workspaces/NAME.json`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._files = LocalBlobFiles(self.root)
        self._found = _found_in(self.where())

    def where(self) -> str:
        return str(self.root)

    async def put_new(self, kind: str, blobs: Mapping[str, bytes]) -> int:
        return await asyncio.to_thread(self.put_new_from_thread, kind, blobs, asyncio.get_running_loop())

    def put_new_from_thread(self, kind: str, blobs: Mapping[str, bytes], loop: asyncio.AbstractEventLoop) -> int:
        # Right here: a save's reading thread waiting on the loop's thread pool could starve it.
        return stored_or_said(lambda: self._put_now(kind, blobs), self.root)

    def _put_now(self, kind: str, blobs: Mapping[str, bytes]) -> int:
        new: dict[Path, bytes] = {}
        for digest, blob in blobs.items():
            if self._found.fresh(kind + digest):
                continue
            target = self._files.path_for(kind, digest)
            if found_again(target, len(blob)):
                self._found.add(kind + digest)
                continue
            new[target] = blob
        # Each write waits for its fsyncs: a few at once share the filesystem's journal commits. One
        # alone (a small edit's chunk, a manifest's root) is written here, with no pool to start.
        if len(new) == 1:
            _write_blob(next(iter(new.items())))
        elif new:
            with ThreadPoolExecutor(max_workers=_PARALLEL_WRITES) as pool:
                list(pool.map(_write_blob, new.items()))
        for target in new:
            self._found.add(kind + target.name)
        return sum(map(len, new.values()))

    def get_from_thread(self, kind: str, digests: Iterable[str], loop: asyncio.AbstractEventLoop) -> dict[str, bytes]:
        return {digest: self._read(kind, digest) for digest in digests}

    def _read(self, kind: str, digest: str) -> bytes:
        try:
            return checked(digest, self._files.path_for(kind, digest).read_bytes(), self.where())
        except FileNotFoundError:
            raise missing(digest, self.where()) from None

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]:
        return await self._files.get(kind, digests)

    def pointer_path(self, name: str) -> Path:
        return self.root / POINTERS / pointer_name(name)

    async def read_pointer(self, name: str) -> bytes | None:
        path = self.pointer_path(name)

        def read() -> bytes | None:
            try:
                return path.read_bytes()
            except FileNotFoundError:
                return None

        return await asyncio.to_thread(read)

    async def write_pointer(self, name: str, data: bytes) -> None:
        path = self.pointer_path(name)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)

        await asyncio.to_thread(stored_or_said, write, self.root)


class S3WorkspaceStore:
    """`prefix/cas/chunks/DIGEST`, the manifest parts in `prefix/cas/blobs/DIGEST`, `prefix/workspaces/NAME.json`."""

    def __init__(self, client: ObjectClient, bucket: str, location: str | None = None, parallel: int = 16) -> None:
        self._client, self._bucket = client, bucket
        self._location = location or f"s3://{bucket}"  # with the prefix: two prefixes are two stores
        self._files = S3BlobFiles(client, bucket, parallel)
        self._parallel = parallel
        self._found = _found_in(self.where())

    def where(self) -> str:
        return self._location

    async def put_new(self, kind: str, blobs: Mapping[str, bytes]) -> int:
        gate = asyncio.Semaphore(self._parallel)

        async def one(digest: str, blob: bytes) -> int:
            key = S3BlobFiles.key_for(kind, digest)
            async with gate:
                if await self._client.object_exists(bucket=self._bucket, key=key):
                    self._found.add(kind + digest)
                    return 0
                await self._client.put_object(bucket=self._bucket, key=key, data=blob)
            self._found.add(kind + digest)
            return len(blob)

        todo = [(d, b) for d, b in blobs.items() if not self._found.fresh(kind + d)]
        return sum(await asyncio.gather(*(one(d, b) for d, b in todo)))

    def put_new_from_thread(self, kind: str, blobs: Mapping[str, bytes], loop: asyncio.AbstractEventLoop) -> int:
        return asyncio.run_coroutine_threadsafe(self.put_new(kind, blobs), loop).result()

    def get_from_thread(self, kind: str, digests: Iterable[str], loop: asyncio.AbstractEventLoop) -> dict[str, bytes]:
        return asyncio.run_coroutine_threadsafe(self._files.get(kind, digests), loop).result()

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]:
        return await self._files.get(kind, digests)

    async def read_pointer(self, name: str) -> bytes | None:
        try:
            return await self._client.get_object(bucket=self._bucket, key=f"{POINTERS}/{pointer_name(name)}")
        except Exception as err:
            if "NoSuchKey" in repr(err) or "404" in repr(err):
                return None
            raise

    async def write_pointer(self, name: str, data: bytes) -> None:
        await self._client.put_object(bucket=self._bucket, key=f"{POINTERS}/{pointer_name(name)}", data=data)


def _write_blob(item: tuple[Path, bytes]) -> None:
    target, blob = item
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, blob)


def workspace_store(location: str, endpoint_url: str | None = None) -> WorkspaceStore:
    """The store for PAYLOAD_STORE's location: a directory, file:///path, or s3://bucket/prefix."""
    if location.startswith("s3://"):
        from payload_store.s3 import LoopBoundS3Client, S3Location

        where = S3Location.parse(location)
        client = LoopBoundS3Client(where.prefix, endpoint_url)
        return S3WorkspaceStore(client, where.bucket, f"s3://{where.bucket}/{where.prefix}@{endpoint_url or 'aws'}")
    if "://" in location and not location.startswith("file://"):
        raise ValueError(f"PAYLOAD_STORE={location!r}: use a directory, file:///path or s3://bucket/prefix")
    return LocalWorkspaceStore(Path(location.removeprefix("file://")))


ENCODED_PAGES = EncodedPages()  # one per process: a page encoded for one save is found by the next


async def put_manifest(store: WorkspaceStore, manifest: Manifest) -> tuple[str, int]:
    """The manifest's digest (its root's), and the bytes new to the store; the parts go first, so a
    stored root never names a missing part."""
    root, parts = await asyncio.to_thread(encode_manifest, manifest, ENCODED_PAGES)
    digest = blob_tree.digest_of(root)
    written = await store.put_new(MANIFEST_PARTS, parts)
    return digest, written + await store.put_new(MANIFEST_PARTS, {digest: root})


async def get_manifest(store: WorkspaceStore, digest: str) -> Manifest:
    """The manifest a save stored, read level by level; ManifestError when it is not one to trust."""
    parsed: dict[str, Any] = {}
    frontier = {digest}
    while frontier:
        for found, raw in (await store.get(MANIFEST_PARTS, frontier)).items():
            parsed[found] = json.loads(raw)
        frontier = {ref for d in frontier for ref in blob_tree.references(parsed[d])} - parsed.keys()
    try:
        return parse_manifest(blob_tree.join(parsed[digest], parsed))
    except (KeyError, TypeError) as err:
        raise ManifestError(f"workspace manifest sha256:{digest} is malformed: {err}") from None


def saved_digests(root: Path) -> tuple[set[str], set[str]]:
    """The manifest parts and the chunks that the latest save of each workspace reaches, in a local
    store: what the collector must keep. A pointer or part it cannot read keeps what it could reach."""
    parts: set[str] = set()
    chunks: set[str] = set()
    for pointer in sorted((root / POINTERS).glob("*.json")):
        try:
            digest = json.loads(pointer.read_bytes())["manifest"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            continue
        parsed: dict[str, Any] = {}
        frontier = {digest}
        while frontier:
            parts |= frontier
            for found in frontier:
                path = root / MANIFEST_PARTS / found[:2] / found
                if path.is_file():
                    parsed[found] = json.loads(path.read_bytes())
            frontier = {ref for d in frontier if d in parsed for ref in blob_tree.references(parsed[d])} - parts
        try:
            chunks |= parse_manifest(blob_tree.join(parsed[digest], parsed)).chunk_digests()
        except (KeyError, TypeError, ValueError):
            continue
    return parts, chunks
