"""Where the content-addressed blobs live: files under a directory, or objects under an S3 prefix.

Two kinds of blob: `roots` (one per stored payload: what a history's reference names) and `blobs`
(the parts the roots share). Both are named by the SHA-256 of their bytes, so a write that finds
its name taken has nothing to do. A blob found again is touched (its mtime refreshed, at most every
TOUCH_EVERY seconds per process) so the collector, which spares everything younger than its grace,
never deletes a blob a payload being written right now refers to.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from payload_store.blob_tree import digest_of
from payload_store.local import PayloadStoreError, stored_or_said, write_atomically

TOUCH_EVERY = 600.0
_KNOWN_LIMIT = 200_000


class BlobFiles(Protocol):
    def where(self) -> str: ...

    async def put(self, kind: str, blobs: Mapping[str, bytes]) -> None: ...

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]: ...


class KnownDigests:
    """Digests this process wrote or found lately: no second look at the store for them."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def fresh(self, key: str) -> bool:
        seen = self._seen.get(key)
        return seen is not None and time.monotonic() - seen < TOUCH_EVERY

    def add(self, key: str) -> None:
        if len(self._seen) >= _KNOWN_LIMIT:
            self._seen.clear()
        self._seen[key] = time.monotonic()


def checked(digest: str, blob: bytes, where: str) -> bytes:
    if digest_of(blob) != digest:
        raise PayloadStoreError(f"stored blob sha256:{digest} in {where} does not match its digest: it was changed")
    return blob


def missing(digest: str, where: str) -> PayloadStoreError:
    return PayloadStoreError(
        f"stored payload sha256:{digest} is missing from the payload store {where}: every worker, CLI and UI"
        " must share one PAYLOAD_STORE, and its files must be kept while a history refers to them"
    )


def found_again(target: Path, size: int) -> bool:
    """The blob is stored already (named by its digest, of its size): touched, since it is in use
    again and the collector's grace starts over."""
    try:
        if target.stat().st_size == size:
            os.utime(target)
            return True
    except FileNotFoundError:
        pass
    return False


class LocalBlobFiles:
    """`ROOT/roots/XX/DIGEST` and `ROOT/blobs/XX/DIGEST` (XX: the digest's first two characters)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._known = KnownDigests()

    def where(self) -> str:
        return str(self.root)

    def path_for(self, kind: str, digest: str) -> Path:
        return self.root / kind / digest[:2] / digest

    async def put(self, kind: str, blobs: Mapping[str, bytes]) -> None:
        todo = {d: b for d, b in blobs.items() if not self._known.fresh(kind + d)}
        if todo:
            await asyncio.to_thread(stored_or_said, lambda: self._put_now(kind, todo), self.root)

    def _put_now(self, kind: str, blobs: Mapping[str, bytes]) -> None:
        for digest, blob in blobs.items():
            target = self.path_for(kind, digest)
            if found_again(target, len(blob)):
                self._known.add(kind + digest)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, blob)
            self._known.add(kind + digest)

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]:
        wanted = list(digests)
        return await asyncio.to_thread(lambda: {d: self._read(kind, d) for d in wanted})

    def _read(self, kind: str, digest: str) -> bytes:
        try:
            return checked(digest, self.path_for(kind, digest).read_bytes(), self.where())
        except FileNotFoundError:
            raise missing(digest, self.where()) from None


class ObjectClient(Protocol):
    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None: ...

    async def object_exists(self, *, bucket: str, key: str) -> bool: ...

    async def get_object(self, *, bucket: str, key: str) -> bytes: ...


class S3BlobFiles:
    """`prefix/cas/roots/DIGEST` and `prefix/cas/blobs/DIGEST` in one bucket (the client adds the prefix)."""

    def __init__(self, client: ObjectClient, bucket: str, parallel: int = 16) -> None:
        self._client, self._bucket = client, bucket
        self._known = KnownDigests()
        self._parallel = parallel

    def where(self) -> str:
        return f"s3://{self._bucket}"

    @staticmethod
    def key_for(kind: str, digest: str) -> str:
        return f"cas/{kind}/{digest}"

    async def _each(self, jobs: list[tuple[str, bytes | None]], kind: str) -> list[bytes | None]:
        gate = asyncio.Semaphore(self._parallel)

        async def one(digest: str, blob: bytes | None) -> bytes | None:
            key = self.key_for(kind, digest)
            async with gate:
                if blob is None:
                    try:
                        return checked(
                            digest, await self._client.get_object(bucket=self._bucket, key=key), self.where()
                        )
                    except PayloadStoreError:
                        raise
                    except Exception as err:
                        if "NoSuchKey" in repr(err) or "404" in repr(err):
                            raise missing(digest, self.where()) from None
                        raise
                if not await self._client.object_exists(bucket=self._bucket, key=key):
                    await self._client.put_object(bucket=self._bucket, key=key, data=blob)
                self._known.add(kind + digest)
                return None

        return list(await asyncio.gather(*(one(d, b) for d, b in jobs)))

    async def put(self, kind: str, blobs: Mapping[str, bytes]) -> None:
        await self._each([(d, b) for d, b in blobs.items() if not self._known.fresh(kind + d)], kind)

    async def get(self, kind: str, digests: Iterable[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(digests))
        found = await self._each([(d, None) for d in wanted], kind)
        out: dict[str, bytes] = {}
        for digest, blob in zip(wanted, found, strict=True):
            assert blob is not None
            out[digest] = blob
        return out
