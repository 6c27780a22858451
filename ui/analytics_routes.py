"""What the audit says about how approvals go: rule suggestions for calls approved every time
(`/api/rules/suggest`, shown only, never applied)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from core.fatigue import FatigueLimits, suggest_rules
from storage.audit import parse_since
from ui.errors import Unprocessable
from ui.route_support import api_router, store_of

router = api_router()


def since_of(since: str | None) -> str | None:
    try:
        return parse_since(since) if since else None
    except ValueError as err:
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
    return [suggestion.as_dict() for suggestion in suggest_rules(rows, limits)]
