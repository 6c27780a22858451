"""Slack's interactive buttons: Allow and Deny on a notification decide through the same door as the UI.

Slack signs every request: `X-Slack-Signature` is `v0=` and the HMAC-SHA256, keyed by the app's
signing secret, of `v0:TIMESTAMP:BODY`. A request with a bad signature, or a timestamp more than
five minutes away, is refused with 401 and changes nothing. The Slack user must be mapped to an
approver (`[slack] users`); their groups come from the users table, and the approver rules, the
first-decision-wins claim and the workflow's own checks then apply exactly as for the UI. The
message is updated (its `response_url`) to say who decided, or, to the presser alone, why not.
The UI mounts this route because the Slack channel names it as its door's (channels/slack.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any
from urllib.parse import parse_qs

import httpx
from fastapi import APIRouter, BackgroundTasks, Request
from fastapi.responses import JSONResponse
from temporalio.service import RPCError

from channels.slack import SLACK_DOOR, SlackDoor
from channels.slack_text import slack_safe
from core.contract import ERROR_NOT_AN_APPROVER, ERROR_SLACK_SIGNATURE, ERROR_TEMPORAL_REFUSED
from core.conversation_model import Decision, DecisionInput
from core.refusals import DecisionRefused
from doors import control
from ui.bodies import read_body
from ui.errors import BadRequest, NotFound, Unauthorized

SLACK_MAX_AGE_SECONDS = 300
SLACK_BODY_BYTES = 64 * 1024
ACTIONS: dict[str, Decision] = {"approve": "allow", "deny": "deny"}
log = logging.getLogger(__name__)
# Slack posts from its own servers: no token of ours, no Origin; its signature is the check.
router = APIRouter(include_in_schema=False)


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    return f"v0={digest}"


def verify_slack(secret: str, headers: Any, body: bytes, now: float) -> None:
    """Raise Unauthorized unless Slack signed this body within the last five minutes."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    if not timestamp.isdigit() or abs(now - int(timestamp)) > SLACK_MAX_AGE_SECONDS:
        raise Unauthorized("the Slack request is too old or has no timestamp", error_type=ERROR_SLACK_SIGNATURE)
    given = headers.get("x-slack-signature", "")
    if not hmac.compare_digest(given.encode(), slack_signature(secret, timestamp, body).encode()):
        raise Unauthorized("the Slack signature does not match", error_type=ERROR_SLACK_SIGNATURE)


def _config(request: Request) -> SlackDoor:
    state = request.app.state
    if not hasattr(state, "slack"):
        state.slack = state.settings.load_notify().door(SlackDoor)
    return state.slack  # type: ignore[no-any-return]


@router.post("/slack/actions")
async def slack_action(request: Request, background: BackgroundTasks) -> JSONResponse:
    config = _config(request)
    secret = config.signing_secret()
    if secret is None:
        raise NotFound(f"Slack is not set up here ({config.signing_secret_env} is not set)")
    body = await read_body(request, SLACK_BODY_BYTES)
    verify_slack(secret, request.headers, body, time.time())
    try:
        payload = json.loads(parse_qs(body.decode())["payload"][0])
        action = payload["actions"][0]
        user_id, request_id = str(payload["user"]["id"]), str(action["value"])
    except (KeyError, IndexError, ValueError, TypeError, UnicodeDecodeError):
        raise BadRequest("not a Slack block_actions payload") from None
    response_url = payload.get("response_url")
    decision = ACTIONS.get(str(action.get("action_id")))
    if decision is None:  # the Open link button also reports its press
        return JSONResponse({"ok": True, "ignored": action.get("action_id")})
    principal = config.users.get(user_id)
    if principal is None:
        return _refused(
            background, response_url, ERROR_NOT_AN_APPROVER, f"Slack user {user_id} is not mapped to an approver"
        )
    store = request.app.state.store
    decided = DecisionInput(
        request_id=request_id,
        decision=decision,
        reason="decided in Slack",
        decided_by=principal,
        door=SLACK_DOOR,
        principal=principal,
        groups=await store.groups_of(principal),
    )
    try:
        await control.send_decision(
            await request.app.state.client_provider(), request.app.state.settings, decided, store
        )
    except DecisionRefused as err:
        return _refused(background, response_url, err.error_type, str(err))
    except RPCError as err:
        return _refused(
            background, response_url, ERROR_TEMPORAL_REFUSED, f"Temporal refused the decision: {err.message}"
        )
    row = await store.approval(request_id)
    verb = "Allowed" if decision == "allow" else "Denied"
    tool, _ = slack_safe(str(row["tool_name"]) if row else "?")
    text = f"{verb} by {slack_safe(principal)[0]} in Slack: `{tool}` ({slack_safe(request_id)[0]})"
    if response_url:
        background.add_task(_respond, response_url, {"replace_original": True, "text": text})
    return JSONResponse({"ok": True, "request_id": request_id, "decision": decision, "decided_by": principal})


def _refused(background: BackgroundTasks, response_url: str | None, error_type: str, message: str) -> JSONResponse:
    """Slack shows a failed request as an error of the app; a refusal is told to the presser instead."""
    if response_url:
        reply = {"response_type": "ephemeral", "replace_original": False, "text": f"Not decided: {message}"}
        background.add_task(_respond, response_url, reply)
    return JSONResponse({"ok": False, "error": {"type": error_type, "message": message}})


async def _respond(response_url: str, message: dict[str, Any]) -> None:
    try:
        async with httpx.AsyncClient(timeout=10) as http:
            await http.post(response_url, json=message)
    except httpx.HTTPError as err:
        log.warning("could not update the Slack message: %s", err)
