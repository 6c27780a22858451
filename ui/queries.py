"""Reads the UI needs, through the app's projection store (pages, one conversation, one approval)."""

from __future__ import annotations

from typing import Literal, get_args
from urllib.parse import quote

from config.settings import Settings
from storage.reader import Page
from storage.store import ProjectionStore

ApprovalStatus = Literal["pending", "sent", "resolved", "all"]
APPROVAL_STATUSES: tuple[str, ...] = get_args(ApprovalStatus)
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


async def conversations(
    store: ProjectionStore, settings: Settings, limit: int, after: str | None, status: str | None
) -> Page:
    page = await store.conversations(limit, after, status)
    page.items = [{**row, "temporal_url": temporal_url(settings, row["conversation_id"])} for row in page.items]
    return page


async def approvals(
    store: ProjectionStore, status: ApprovalStatus, conversation_id: str | None, limit: int, after: str | None
) -> Page:
    """status: pending (not yet recorded by the workflow, including "sent"), sent, resolved or all."""
    return await store.approvals(status, conversation_id, limit, after)
