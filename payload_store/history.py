"""How much of a history is inline and how much sits in the payload store, for tests and the bench."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload

_PAYLOAD = Payload.DESCRIPTOR.full_name


@dataclass(frozen=True)
class PayloadSizes:
    inline: list[int]  # ByteSize of each payload as the history holds it (a reference is small)
    external: list[int]  # size of each payload a reference points to


def payloads_in(message: Message) -> Iterator[Payload]:
    """Every Payload anywhere inside a protobuf message (history events nest them deeply)."""
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


def payload_sizes(message: Message) -> PayloadSizes:
    found = list(payloads_in(message))
    return PayloadSizes(
        inline=[p.ByteSize() for p in found],
        external=[ref.size_bytes for p in found for ref in p.external_payloads],
    )
