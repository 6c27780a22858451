"""The embedded payload store: one file per payload under a directory, named by its SHA-256.

Content addressing makes a retried write harmless: the same payload lands on the same name, and a
name that already holds the right bytes is not written again. A write goes to a temporary file in
the same directory and is renamed into place after an fsync, so a reader (or a worker killed
mid-write) never sees half a payload under a real name.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

T = TypeVar("T")
DRIVER_NAME = "local-files"
_DIGEST = re.compile(r"[0-9a-f]{64}")


class PayloadStoreError(RuntimeError):
    """A stored payload that cannot be read back: missing, corrupt, or a claim that is not ours."""


class PayloadStoreUnavailable(RuntimeError):
    """A write the store cannot take now (its disk full, an S3 store answering 503 or not at all):
    nothing was stored under its name, and the same write succeeds once the store takes writes again."""


_NO_ROOM = {errno.ENOSPC: "its disk is full", errno.EFBIG: "a file size limit", errno.EDQUOT: "a disk quota"}


def stored_or_said(write: Callable[[], T], root: Path) -> T:
    """Run a write into the store; an OS error for want of room says so, naming the store."""
    try:
        return write()
    except OSError as err:
        why = _NO_ROOM.get(err.errno or 0)
        if why is None:
            raise
        raise PayloadStoreUnavailable(f"the payload store at {root} cannot be written: {why} ({err.strerror})") from err


class LocalFileDriver(StorageDriver):
    """Stores each payload as `ROOT/sha256/XX/DIGEST` (XX: the digest's first two characters)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def name(self) -> str:
        return DRIVER_NAME

    def type(self) -> str:
        return DRIVER_NAME

    def path_for(self, digest: str) -> Path:
        if not _DIGEST.fullmatch(digest):
            raise PayloadStoreError(f"not a sha256 digest: {digest!r}")
        return self.root / "sha256" / digest[:2] / digest

    async def store(self, context: StorageDriverStoreContext, payloads: Sequence[Payload]) -> list[StorageDriverClaim]:
        blobs = [payload.SerializeToString() for payload in payloads]
        # File writes and fsyncs block: off the event loop that also runs workflow tasks.
        return await asyncio.to_thread(lambda: [self.write(blob) for blob in blobs])

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self.read(claim) for claim in claims])

    def write(self, blob: bytes) -> StorageDriverClaim:
        digest = hashlib.sha256(blob).hexdigest()
        target = self.path_for(digest)
        if not (target.exists() and target.stat().st_size == len(blob)):

            def write() -> None:
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomically(target, blob)

            stored_or_said(write, self.root)
        return StorageDriverClaim(claim_data={"hash_algorithm": "sha256", "hash_value": digest})

    def read(self, claim: StorageDriverClaim) -> Payload:
        if claim.claim_data.get("hash_algorithm") != "sha256":
            raise PayloadStoreError(f"unsupported claim for {DRIVER_NAME}: {dict(claim.claim_data)}")
        digest = claim.claim_data.get("hash_value", "")
        path = self.path_for(digest)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            raise PayloadStoreError(
                f"stored payload sha256:{digest} is missing from the payload store {self.root}: every worker,"
                " CLI and UI must share one PAYLOAD_STORE, and its files must be kept while a history refers"
                " to them"
            ) from None
        if hashlib.sha256(blob).hexdigest() != digest:
            raise PayloadStoreError(f"stored payload {path} does not match its digest: the file was changed")
        payload = Payload()
        payload.ParseFromString(blob)
        return payload


def write_atomically(target: Path, blob: bytes) -> None:
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    # The rename itself must survive a power cut before the history refers to the file.
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
