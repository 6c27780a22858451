"""Request bodies: parsed by hand so every malformed body is a 4xx with a clear message, never a 500."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ui.errors import BadRequest, Unprocessable, UnsupportedMediaType
from workflows.ids import CONVERSATION_ID_RULE, check_conversation_id
from workflows.models import Decision

MAX_BODY_BYTES = 256 * 1024
Body = TypeVar("Body", bound=BaseModel)


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DecisionBody(StrictBody):
    decision: Decision
    reason: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who decides; default web")


class StartBody(StrictBody):
    message: str = Field(min_length=1, max_length=100_000)
    conversation_id: str | None = Field(default=None, description=CONVERSATION_ID_RULE)

    @field_validator("conversation_id")
    @classmethod
    def _in_alphabet(cls, value: str | None) -> str | None:
        return value if value is None else check_conversation_id(value)


class MessageBody(StrictBody):
    text: str = Field(min_length=1, max_length=100_000)


async def read_json_body(request: Request, model: type[Body]) -> Body:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise UnsupportedMediaType("send the body as application/json")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"the body is larger than {MAX_BODY_BYTES} bytes")
    try:
        data: Any = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise BadRequest(f"the body is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise Unprocessable("the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in err.errors())
        raise Unprocessable(problems) from None
