"""Large payloads out of the event history, with the SDK's External Storage.

`data_converter(settings)` is the one converter the worker, the CLI, the UI, the tests' replayer
and the bench use: the pydantic converter, plus External Storage that puts every payload of at
least PAYLOAD_STORE_THRESHOLD bytes in the payload store and leaves a small reference in the
history. A reader needs the same store as the writer, so every process builds it from the same
settings.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, ExternalStorage, StorageDriver, StorageDriverSelectContext

from config.settings import ConfigError, Settings
from payload_store.local import LocalFileDriver, PayloadStoreError

__all__ = ["LocalFileDriver", "PayloadStoreError", "data_converter", "external_storage"]


def external_storage(settings: Settings) -> ExternalStorage:
    location = settings.payload_store_location
    if location.startswith("s3://"):
        from payload_store.s3 import s3_driver

        try:
            writer: StorageDriver = s3_driver(location, settings.s3_endpoint_url)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        # The local directory stays readable: histories written before a move to S3 still resolve.
        readers: list[StorageDriver] = [writer, LocalFileDriver(settings.local_payload_dir)]
    elif "://" in location and not location.startswith("file://"):
        raise ConfigError(f"PAYLOAD_STORE={location!r}: use a directory, file:///path or s3://bucket/prefix")
    else:
        writer = LocalFileDriver(Path(location.removeprefix("file://")))
        readers = [writer]

    def always_the_writer(_: StorageDriverSelectContext, __: Payload) -> StorageDriver:
        return writer

    return ExternalStorage(
        drivers=readers,
        driver_selector=always_the_writer if len(readers) > 1 else None,
        payload_size_threshold=settings.payload_store_threshold,
    )


def data_converter(settings: Settings | None = None) -> DataConverter:
    settings = settings or Settings()
    return dataclasses.replace(pydantic_data_converter, external_storage=external_storage(settings))
