"""What the audit says about how approvals go: the figures (`/api/stats`, and the `/analytics`
page behind the inbox's login) and rule suggestions for calls approved every time
(`/api/rules/suggest`, shown only, never applied)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from config.errors import ConfigError
from core.fatigue import FatigueLimits, suggest_rules
from core.policy_rules import PolicyRules
from core.stats import approval_stats
from storage.audit import parse_since
from storage.figures import escalated_requests
from ui.analytics_page import analytics_html
from ui.errors import Unprocessable
from ui.route_support import api_router, ledger_of, settings_of, store_of
from ui.security import authenticated

router = api_router()
page_router = APIRouter(include_in_schema=False)  # the page: a login redirect rather than a 401


async def figures(request: Request, since: str | None, suggestions: bool = False) -> dict[str, Any]:
    """The stats; with suggestions, the page's rule suggestions too (default limits), from one read."""
    escalated = await ledger_of(request).run(escalated_requests, write=False)
    rows = await store_of(request).audit(since_of(since))
    found = approval_stats(rows, escalated)
    if suggestions:
        found["suggestions"] = [item.as_dict() for item in suggest_rules(rows, policy=current_policy(request))]
    return found


@router.get("/stats")
async def stats(request: Request, since: str | None = None) -> dict[str, Any]:
    """Time to decision per day (median, p90), per tool (approval rate, expired, escalated), decisions
    per person and door, and the slowest tools; `since`: 30m, 12h, 7d or an ISO time."""
    return await figures(request, since)


@page_router.get("/analytics", response_model=None)
async def analytics(request: Request, since: str | None = None) -> Response:
    if not await authenticated(request):
        return RedirectResponse("/login", status_code=303)
    page = analytics_html(await figures(request, since, suggestions=True), since)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})


def since_of(since: str | None) -> str | None:
    try:
        return parse_since(since) if since else None
    except (ValueError, OverflowError) as err:
        raise Unprocessable(f"since: {err}") from None


@router.get("/rules/suggest")
async def rule_suggestions(
    request: Request, since: str | None = None, min_count: int = 20, max_median: float = 5.0
) -> list[dict[str, Any]]:
    """Allow rules that would have covered calls approved every time, quickly: each with the calls
    it covers and those of its tool it would still ask about. Copy one into POLICY_FILE to use it."""
    if min_count < 1 or max_median <= 0:
        raise Unprocessable("min_count must be at least 1 and max_median above 0")
    rows = await store_of(request).audit(since_of(since))
    limits = FatigueLimits(min_count=min_count, max_median_seconds=max_median)
    return [suggestion.as_dict() for suggestion in suggest_rules(rows, limits, current_policy(request))]


def current_policy(request: Request) -> PolicyRules:
    """POLICY_FILE's rules, so a suggestion names the ask rule that would block it."""
    try:
        return settings_of(request).load_policy()
    except ConfigError as err:
        raise Unprocessable(str(err)) from None
