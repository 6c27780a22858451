"""S3 (or any S3-compatible store such as MinIO) through the SDK's own S3 driver.

The SDK's driver takes an S3 client adapter that must stay open while the process runs; an
aioboto3 client belongs to the event loop that opened it. So the adapter here opens one client
per event loop on first use, and puts every object under the prefix of `s3://bucket/prefix`.
Credentials and region come from the standard AWS sources (environment, profile, instance role).
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from temporalio.contrib.aws.s3driver import S3StorageDriver, S3StorageDriverClient

from payload_store.blob_files import S3BlobFiles
from payload_store.local import PayloadStoreUnavailable

# The standard variables botocore reads, listed here so the deployment files may set them.
S3_ENVIRONMENT = (
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_PROFILE",
)


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        rest = url.removeprefix("s3://")
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise ValueError(f"PAYLOAD_STORE={url!r} names no bucket (s3://bucket/prefix)")
        prefix = prefix.strip("/")
        return cls(bucket, f"{prefix}/" if prefix else "")


class LoopBoundS3Client(S3StorageDriverClient):
    """The SDK's aioboto3 adapter, opened lazily per event loop, with keys under a prefix."""

    def __init__(self, prefix: str = "", endpoint_url: str | None = None) -> None:
        self._prefix = prefix
        self._endpoint_url = endpoint_url
        self._open: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[_Opened]] = (
            weakref.WeakKeyDictionary()
        )
        _CLIENTS.add(self)

    async def _client(self) -> S3StorageDriverClient:
        loop = asyncio.get_running_loop()
        task = self._open.get(loop)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            # Opened once per loop; a failed opening is tried again by the next call.
            task = self._open[loop] = loop.create_task(self._connect())
        return (await asyncio.shield(task)).adapter

    async def _connect(self) -> _Opened:
        import aioboto3
        from aiobotocore.config import AioConfig
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client

        # A custom endpoint (MinIO, a test server) rarely serves bucket.host names: use path-style URLs.
        config = AioConfig(s3={"addressing_style": "path"}) if self._endpoint_url else None
        stack = contextlib.AsyncExitStack()
        raw = await stack.enter_async_context(
            aioboto3.Session().client("s3", endpoint_url=self._endpoint_url, config=config)
        )
        return _Opened(new_aioboto3_client(raw), stack)

    async def aclose(self) -> None:
        """Close this loop's client (a process that exits needs no call)."""
        task = self._open.pop(asyncio.get_running_loop(), None)
        if task is not None:
            await (await task).stack.aclose()

    def describe(self) -> Mapping[str, str]:
        return {"prefix": self._prefix, "endpoint": self._endpoint_url or "aws"}

    async def put_object(self, *, bucket: str, key: str, data: bytes) -> None:
        try:
            await (await self._client()).put_object(bucket=bucket, key=self._prefix + key, data=data)
        except Exception as err:
            unavailable = _unavailable(err, bucket)
            if unavailable is None:
                raise
            raise unavailable from err

    async def object_exists(self, *, bucket: str, key: str) -> bool:
        try:
            return await (await self._client()).object_exists(bucket=bucket, key=self._prefix + key)
        except Exception as err:
            unavailable = _unavailable(err, bucket)
            if unavailable is None:
                raise
            raise unavailable from err

    async def get_object(self, *, bucket: str, key: str) -> bytes:
        return await (await self._client()).get_object(bucket=bucket, key=self._prefix + key)


_CLIENTS: weakref.WeakSet[LoopBoundS3Client] = weakref.WeakSet()


def _unavailable(err: Exception, bucket: str) -> PayloadStoreUnavailable | None:
    """A write the store could not take now, once botocore's own retries are spent: a 5xx or 429
    answer (S3's 503 SlowDown under load), no answer in time, or no connection. None for anything
    else (no such bucket, access denied), which waiting would not mend."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as NoConnection

    if isinstance(err, ClientError):
        status = int(err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if status < 500 and status != 429:
            return None
    elif not isinstance(err, HTTPClientError | NoConnection | TimeoutError):
        return None
    said = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return PayloadStoreUnavailable(f"the payload store s3://{bucket} cannot be written now: {said}")


async def close_s3_clients() -> None:
    """Close every S3 connection this event loop opened (a long-lived process never needs to)."""
    for client in list(_CLIENTS):
        await client.aclose()


@dataclass
class _Opened:
    adapter: S3StorageDriverClient
    stack: contextlib.AsyncExitStack


def s3_driver(url: str, endpoint_url: str | None) -> S3StorageDriver:
    """The SDK's driver for `s3://bucket/prefix` (whole payloads: how earlier releases wrote them, still
    read); the bucket must exist (it is never created here)."""
    location = S3Location.parse(url)
    return S3StorageDriver(client=LoopBoundS3Client(location.prefix, endpoint_url), bucket=location.bucket)


def s3_blob_files(url: str, endpoint_url: str | None) -> S3BlobFiles:
    """The content-addressed blobs under `s3://bucket/prefix/cas/`."""
    location = S3Location.parse(url)
    return S3BlobFiles(LoopBoundS3Client(location.prefix, endpoint_url), location.bucket)
