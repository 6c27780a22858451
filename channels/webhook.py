"""A signed webhook: one JSON body per notification, retried with the same key until it is taken.

The `X-Approvals-Signature` header is `t=TIMESTAMP,v1=HEX` where HEX is the HMAC-SHA256, keyed by
the channel's secret, of `TIMESTAMP.BODY` (the raw body bytes); `Idempotency-Key` lets the receiver
drop a repeat.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, model_validator

from channels.base import IDEMPOTENCY_HEADER, Channel, Reach, Sent, from_env
from core.conversation_model import NotificationInput

if TYPE_CHECKING:
    import httpx

SIGNATURE_HEADER = "X-Approvals-Signature"


def webhook_body(notification: NotificationInput, link: str) -> bytes:
    body: dict[str, Any] = {
        "type": f"approval.{notification.kind}",
        "idempotency_key": notification.key,
        "number": notification.number,
        "channel": notification.channel,
        "request_id": notification.request_id,
        "conversation_id": notification.conversation_id,
        "tool": notification.tool_name,
        "arguments": notification.arguments,
        "approvers": notification.approvers,
        "created_at": notification.created_at.isoformat(),
        "expires_at": notification.expires_at.isoformat(),
        "url": link,
        # What the call will change and why the agent wants it; null for a request asked without.
        "preview": notification.preview.model_dump(mode="json") if notification.preview else None,
        "why": notification.why.model_dump(mode="json") if notification.why else None,
    }
    return json.dumps(body, sort_keys=True, ensure_ascii=False).encode()


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header's value for a body sent at `timestamp` (Unix seconds)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def webhook_headers(notification: NotificationInput, secret: str, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        IDEMPOTENCY_HEADER: notification.key,
        SIGNATURE_HEADER: sign(secret, int(time.time()), body),
    }


class WebhookChannel(Channel):
    """`kind = "webhook"` (a table without `kind` is one): a URL and the key that signs for it."""

    kind: Literal["webhook"] = "webhook"
    url: str | None = None
    url_env: str | None = Field(default=None, description="the variable holding the URL")
    secret: str | None = Field(default=None, description="the signing key; prefer secret_env")
    secret_env: str | None = None

    name: ClassVar[str] = "webhook"

    @model_validator(mode="after")
    def _complete(self) -> WebhookChannel:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("a channel needs exactly one of url or url_env")
        if (self.secret is None) == (self.secret_env is None):
            raise ValueError("a webhook channel needs exactly one of secret or secret_env (its signing key)")
        return self

    async def send(self, http: httpx.AsyncClient, notification: NotificationInput, reach: Reach) -> Sent:
        body = webhook_body(notification, reach.card_link)
        headers = webhook_headers(notification, self.secret or from_env(self.secret_env), body)
        response = await http.post(self.url or from_env(self.url_env), content=body, headers=headers)
        return Sent(response.status_code)
