"""Request bodies: parsed by hand so every malformed body is a 4xx with a clear message, never a 500."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Request
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from core.conversation_model import MAX_EXTENSION_SECONDS, Decision
from core.ids import CONVERSATION_ID_RULE, check_conversation_id
from core.wire_model import WireModel
from ui.errors import BadRequest, Unprocessable, UnsupportedMediaType
from ui.limits import MAX_BODY_BYTES, too_large

# A batch decides calls as they are: an edit carries one call's own new arguments.
BatchDecision = Literal["allow", "deny", "always_allow"]

Body = TypeVar("Body", bound=BaseModel)


class StrictBody(WireModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GrantOffer(StrictBody):
    """With an approval: also allow calls like this one (see docs/decisions.md, Grants)."""

    pattern: str = Field(min_length=1, max_length=100_000, description="a rule: tool or tool(glob)")
    scope: Literal["conversation", "everywhere"] = Field(description="conversation: the request's top conversation")
    for_seconds: int | float | None = Field(default=None, gt=0, description="its lifetime; none: until revoked")


class GrantBody(GrantOffer):
    conversation_id: str | None = Field(default=None, max_length=1000, description="with scope conversation")
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who grants; default web")


class DecisionBody(StrictBody):
    decision: Decision
    reason: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who decides; default web")
    args_hash: str | None = Field(
        default=None, max_length=64, description="the arguments hash the card showed; other arguments are refused (409)"
    )
    arguments: dict[str, Any] | None = Field(
        default=None, description="with decision edit: the new arguments the call runs with (checked by the workflow)"
    )
    grant: GrantOffer | None = Field(default=None, description="with decision allow: also make this grant")
    supplied: dict[str, Annotated[str, StringConstraints(max_length=10_000)]] | None = Field(
        default=None,
        description="with an approval: the value of each argument the call's approver supplies (a secret),"
        " sealed by the server before it goes anywhere",
    )


class BatchItem(StrictBody):
    request_id: str = Field(min_length=1, max_length=1000)
    args_hash: str | None = Field(default=None, max_length=64, description="the arguments hash the card showed")


class BatchDecisionBody(StrictBody):
    """One decision for several calls: each still gets its own decision, and its own result."""

    decision: BatchDecision
    items: list[BatchItem] = Field(min_length=1, max_length=100)
    reason: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who decides; default web")


class ExtendBody(StrictBody):
    seconds: int | float = Field(gt=0, le=MAX_EXTENSION_SECONDS)
    reason: str | None = Field(default=None, max_length=2000)
    name: str | None = Field(default=None, min_length=1, max_length=100, description="who extends; default web")


class StartBody(StrictBody):
    message: str = Field(min_length=1, max_length=100_000)
    conversation_id: str | None = Field(default=None, description=CONVERSATION_ID_RULE)

    @field_validator("conversation_id")
    @classmethod
    def _in_alphabet(cls, value: str | None) -> str | None:
        return value if value is None else check_conversation_id(value)


class AutoApproveBody(StrictBody):
    enabled: bool


class MessageBody(StrictBody):
    text: str = Field(min_length=1, max_length=100_000)


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that parses its body with read_json_body(model): the
    schema shows the same model that validates, while parsing keeps its own 4xx answers."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, refused with 413 as soon as it passes the limit (ui.limits.BodyLimit also guards
    every route; this keeps a handler safe on its own)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_body(request: Request, model: type[Body]) -> Body:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise UnsupportedMediaType("send the body as application/json")
    raw = await read_body(request)
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
