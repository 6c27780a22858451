"""Slack's Web API, for channels with a bot token: post a message, and update it later.

An incoming webhook's message cannot be changed afterwards; a message posted with
`chat.postMessage` can, by the channel and `ts` Slack answered, which the notify activity keeps in
the execution ledger beside the key that posted it. Slack answers HTTP 200 with `"ok": false` for
most refusals: that is a refusal too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

RETRIED_ERRORS = {"ratelimited", "service_unavailable", "request_timeout", "internal_error", "fatal_error"}


@dataclass(frozen=True)
class SlackAnswer:
    status: int
    ok: bool
    error: str | None = None
    channel: str | None = None
    ts: str | None = None

    @property
    def retried(self) -> bool:
        return self.status >= 500 or self.status == 429 or self.error in RETRIED_ERRORS


@dataclass(frozen=True)
class WebApi:
    """Where a bot token posts: the API's base URL, the token, and the channel id messages go to."""

    base_url: str
    token: str
    slack_channel: str


async def call(http: httpx.AsyncClient, api: WebApi, method: str, body: dict[str, Any]) -> SlackAnswer:
    url = f"{api.base_url.rstrip('/')}/{method}"
    headers = {"Authorization": f"Bearer {api.token}"}
    response = await http.post(url, json=body, headers=headers)
    try:
        answer = response.json()
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    ok = response.status_code < 300 and bool(answer.get("ok"))
    error = None if ok else str(answer.get("error") or f"HTTP {response.status_code}")
    return SlackAnswer(response.status_code, ok, error, answer.get("channel"), answer.get("ts"))


async def post_message(http: httpx.AsyncClient, api: WebApi, message: dict[str, Any]) -> SlackAnswer:
    return await call(http, api, "chat.postMessage", {"channel": api.slack_channel, **message})


async def update_message(
    http: httpx.AsyncClient, api: WebApi, slack_channel: str, ts: str, message: dict[str, Any]
) -> SlackAnswer:
    return await call(http, api, "chat.update", {"channel": slack_channel, "ts": ts, **message})
