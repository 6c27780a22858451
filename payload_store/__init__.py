"""Large payloads out of the event history, with the SDK's External Storage.

`data_converter(settings)` is the one converter the worker, the CLI, the UI, the tests' replayer
and the bench use: the pydantic converter (its adapters built once per process, converter.py),
plus External Storage that puts every payload of at least PAYLOAD_STORE_THRESHOLD bytes in the
payload store and leaves a small reference in the history. A reader needs the same store as the
writer, so every process builds it from the same settings. Payloads are written content-addressed
(content_driver: each message or tool result once); the drivers of earlier releases (a whole
payload per file or object) stay registered as readers, so every history written before still
resolves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, ExternalStorage, StorageDriver, StorageDriverSelectContext

from config.settings import ConfigError, Settings
from payload_store.blob_files import LocalBlobFiles
from payload_store.content_driver import LOCAL_DRIVER_NAME, S3_DRIVER_NAME, ContentAddressedDriver
from payload_store.converter import SharedAdaptersPayloadConverter
from payload_store.local import LocalFileDriver, PayloadStoreError

__all__ = ["LocalFileDriver", "PayloadStoreError", "data_converter", "external_storage"]


def external_storage(settings: Settings) -> ExternalStorage:
    location = settings.payload_store_location
    if location.startswith("s3://"):
        from payload_store.s3 import s3_blob_files, s3_driver

        try:
            writer: StorageDriver = ContentAddressedDriver(
                s3_blob_files(location, settings.s3_endpoint_url), S3_DRIVER_NAME
            )
            whole: StorageDriver = s3_driver(location, settings.s3_endpoint_url)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        # The local directory stays readable: histories written before a move to S3 still resolve.
        readers: list[StorageDriver] = [writer, whole, *local_drivers(settings.local_payload_dir)]
    elif "://" in location and not location.startswith("file://"):
        raise ConfigError(f"PAYLOAD_STORE={location!r}: use a directory, file:///path or s3://bucket/prefix")
    else:
        readers = local_drivers(Path(location.removeprefix("file://")))
        writer = readers[0]

    def always_the_writer(_: StorageDriverSelectContext, __: Payload) -> StorageDriver:
        return writer

    return ExternalStorage(
        drivers=readers,
        driver_selector=always_the_writer,
        payload_size_threshold=settings.payload_store_threshold,
    )


def local_drivers(root: Path) -> list[StorageDriver]:
    """The content-addressed writer of a directory and the whole-payload reader of earlier releases."""
    return [ContentAddressedDriver(LocalBlobFiles(root), LOCAL_DRIVER_NAME), LocalFileDriver(root)]


def data_converter(settings: Settings | None = None) -> DataConverter:
    settings = settings or Settings()
    return dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=SharedAdaptersPayloadConverter,
        external_storage=external_storage(settings),
    )
