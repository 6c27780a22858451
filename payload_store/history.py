"""How much of a history is inline and how much sits in the payload store, for tests and the bench."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.api.sdk.v1.external_storage_pb2 import ExternalStorageReference
from temporalio.client import WorkflowHistory
from temporalio.converter import JSONProtoPayloadConverter

_PAYLOAD = Payload.DESCRIPTOR.full_name


@dataclass(frozen=True)
class PayloadSizes:
    inline: list[int]  # ByteSize of each payload as the history holds it (a reference is small)
    external: list[int]  # size of each payload a reference points to


def payloads_in(message: Message | WorkflowHistory) -> Iterator[Payload]:
    """Every Payload anywhere inside a history or a protobuf message (events nest them deeply)."""
    if isinstance(message, WorkflowHistory):
        for event in message.events:
            yield from payloads_in(event)
        return
    for descriptor, value in message.ListFields():
        kind = descriptor.message_type
        if kind is None:
            continue
        if kind.GetOptions().map_entry:
            value_field = kind.fields_by_name["value"]
            items = list(value.values()) if value_field.message_type is not None else []
        elif descriptor.is_repeated:
            items = list(value)
        else:
            items = [value]
        for item in items:
            if item.DESCRIPTOR.full_name == _PAYLOAD:
                yield item
            else:
                yield from payloads_in(item)


def payload_sizes(message: Message | WorkflowHistory) -> PayloadSizes:
    found = list(payloads_in(message))
    return PayloadSizes(
        inline=[p.ByteSize() for p in found],
        external=[ref.size_bytes for p in found for ref in p.external_payloads],
    )


def references(message: Message | WorkflowHistory) -> list[ExternalStorageReference]:
    """The payload-store references a history holds (driver name and claim of each)."""
    converter = JSONProtoPayloadConverter()
    found = []
    for payload in payloads_in(message):
        if payload.external_payloads:
            reference = converter.from_payload(payload, ExternalStorageReference)
            assert isinstance(reference, ExternalStorageReference)
            found.append(reference)
    return found
