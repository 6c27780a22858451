"""The payload converter every process uses: the SDK's pydantic converter, with its converters and
their pydantic TypeAdapters made once per process instead of once per converter.

The SDK makes a new payload converter for every workflow run, every activity task, and again for
every payload of a workflow task's completion that goes through External Storage (a data converter
copied with the payload's storage context). Each new pydantic converter built its own JSON
converter with an empty adapter cache: the first payload of a type in it built that type's
TypeAdapter again (a conversation's decision built its DecisionInput adapter for that one decision,
18% of the decision's activation in a profile), and the constructions alone were 5% of a worker's
busy CPU while it took over 1,000 waiting conversations. The encoding converters hold no state but
the adapters, each only a type's schema, validator and serializer, built for the workflows' and
activities' own types (passed through the sandbox): sharing them changes no payload and no value.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, PydanticPayloadConverter
from temporalio.converter import (
    CompositePayloadConverter,
    DefaultPayloadConverter,
    EncodingPayloadConverter,
    JSONPlainPayloadConverter,
)

MAX_SHARED_ADAPTERS = 1024  # the SDK's own bound per converter

shared_type_adapter: functools._lru_cache_wrapper[TypeAdapter[Any]] = functools.lru_cache(maxsize=MAX_SHARED_ADAPTERS)(
    TypeAdapter
)


@functools.cache
def encoding_converters() -> tuple[EncodingPayloadConverter, ...]:
    """The SDK's default encodings in their order, JSON by pydantic (as PydanticPayloadConverter
    has them), made once."""
    json = PydanticJSONPlainPayloadConverter()
    json._type_adapter = shared_type_adapter
    defaults = DefaultPayloadConverter.default_encoding_payload_converters
    return tuple(json if isinstance(c, JSONPlainPayloadConverter) else c for c in defaults)


class SharedAdaptersPayloadConverter(PydanticPayloadConverter):
    """The pydantic payload converter, made from the process's one set of encoding converters. A
    PydanticPayloadConverter still, so Pydantic AI's Temporal plugin keeps it without a warning; an
    agent's own worker connects as docs/agents-pydantic-ai.md says, and gets the plugin's own."""

    def __init__(self) -> None:
        CompositePayloadConverter.__init__(self, *encoding_converters())
