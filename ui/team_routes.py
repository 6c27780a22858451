"""The team routes of the API: who the page is used by (`/api/session`) and who did what
(`/api/audit`, every request, decision and switch)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from storage.audit import parse_since
from ui.errors import Unprocessable
from ui.route_support import api_router, settings_of, store_of
from ui.security import principal_of

router = api_router()


@router.get("/session")
async def session(request: Request) -> dict[str, Any]:
    """What the page needs to know about itself: whether a token guards it (then it offers to log out)."""
    principal = await principal_of(request)
    return {
        "token_required": settings_of(request).ui_token is not None,
        "principal": None if principal is None else {"name": principal.name, "groups": principal.groups},
    }


@router.get("/audit")
async def audit_trail(request: Request, since: str | None = None) -> list[dict[str, Any]]:
    """Every request and decision: who, through which door, on which arguments hash, and the outcome;
    and every switch (kind `switch`): who closed a conversation or switched its auto-approve, and how."""
    try:
        moment = parse_since(since) if since else None
    except ValueError as err:
        raise Unprocessable(f"since: {err}") from None
    return await store_of(request).audit_trail(moment)  # type: ignore[no-any-return]
