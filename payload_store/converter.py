"""The payload converter every process uses: the SDK's pydantic converter, with one cache of
pydantic TypeAdapters per process instead of one per converter.

The SDK makes a new payload converter for every workflow run and for every activity task (each
with its own serialization context), and each starts with an empty cache: the first payload of a
type in it builds that type's TypeAdapter again. A conversation's decision, for one, decoded its
DecisionInput through an adapter built for that one decision, 18% of the decision's activation in
a profile. The adapters hold only a type's schema, validator and serializer; the types they are
built for are the workflows' and activities' own (passed through the sandbox), so sharing them
changes no payload and no value.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter, PydanticPayloadConverter

MAX_SHARED_ADAPTERS = 1024  # the SDK's own bound per converter

shared_type_adapter: functools._lru_cache_wrapper[TypeAdapter[Any]] = functools.lru_cache(maxsize=MAX_SHARED_ADAPTERS)(
    TypeAdapter
)


class SharedAdaptersPayloadConverter(PydanticPayloadConverter):
    """PydanticPayloadConverter whose JSON converter builds each type's adapter once per process."""

    def __init__(self) -> None:
        super().__init__()
        for converter in self.converters.values():
            if isinstance(converter, PydanticJSONPlainPayloadConverter):
                converter._type_adapter = shared_type_adapter
