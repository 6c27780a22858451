"""Reads the UI needs, through the app's projection store (pages, one conversation, one approval)."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from config.settings import Settings
from core.host_wait import host_wait_text
from storage.reader import Page
from storage.store import ProjectionStore

ApprovalStatus = Literal["pending", "sent", "resolved", "all"]
DEFAULT_PAGE = 100
MAX_PAGE = 1000


def temporal_url(settings: Settings, conversation_id: str, namespace: str | None = None) -> str:
    base, namespace = settings.temporal_ui_url.rstrip("/"), namespace or settings.namespace
    return f"{base}/namespaces/{quote(namespace, safe='')}/workflows/{quote(conversation_id, safe='')}"


def with_requester_link(settings: Settings, approval: dict) -> dict:
    """A request another workflow asked for (an ApprovalRequest) links to that workflow in the
    Temporal Web UI, beside its card."""
    requester = (approval.get("tool") or {}).get("annotations", {}).get("requester") or {}
    if approval.get("tool", {}).get("source") == "external" and requester.get("workflow_id"):
        approval["requester_url"] = temporal_url(settings, requester["workflow_id"], requester.get("namespace"))
    return approval


def with_grant_offer(approval: dict) -> dict:
    """A waiting card offers "and allow calls like this": the narrowest rules covering its call and
    the steps wider (doors/grant_checks.py `offer`); None when no grant may be offered for it."""
    if approval.get("status") == "pending":
        from doors.grant_checks import offer

        approval["grant_offer"] = offer(approval)
    return approval


def host_wait_fields(row: dict[str, Any] | None) -> dict[str, Any]:
    """The host a conversation's tools run on, a wait for a host no worker polls (the raw payload),
    and the line people read about it (core/host_wait.py, as `show` prints it)."""
    wait = row.get("host_wait") if row else None
    return {
        "tool_host": row.get("tool_host") if row else None,
        "host_wait": wait,
        "host_wait_text": host_wait_text(wait) if wait else None,
    }


async def conversations(
    store: ProjectionStore, settings: Settings, limit: int, after: str | None, status: str | None
) -> Page:
    page = await store.conversations(limit, after, status)
    page.items = [
        {**row, **host_wait_fields(row), "temporal_url": temporal_url(settings, row["conversation_id"])}
        for row in page.items
    ]
    return page


async def approvals(
    store: ProjectionStore, status: ApprovalStatus, conversation_id: str | None, limit: int, after: str | None
) -> Page:
    """status: pending (not yet recorded by the workflow, including "sent"), sent, resolved or all."""
    return await store.approvals(status, conversation_id, limit, after)
