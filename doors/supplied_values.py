"""What a door does with the values a person supplies for a call (`supplied_by_approver`): refuses
an empty one, and seals each for this one request before it leaves the door (config/supplied_secret.py),
so the decision it sends, its claim and the workflow's history hold sealed text only."""

from __future__ import annotations

from typing import Any

from config.settings import Settings
from config.supplied_secret import seal_all
from core.contract import ERROR_SUPPLY_REFUSED
from core.refusals import DecisionRefused
from core.supplied_arguments import not_repeatable


def sealed_values(settings: Settings, request_id: str, values: dict[str, str]) -> dict[str, str]:
    """The values sealed for `request_id`; a refusal naming any that is empty (never a value)."""
    if not all(_is_text(name) and _is_text(value) for name, value in values.items()):
        raise DecisionRefused(ERROR_SUPPLY_REFUSED, f"{request_id}: a supplied name or value is not valid text")
    empty = sorted(name for name, value in values.items() if not value)
    if empty:
        raise DecisionRefused(ERROR_SUPPLY_REFUSED, f"{request_id}: nothing was supplied for {', '.join(empty)}")
    return seal_all(settings.supplied_secret_key(), request_id, values) if values else {}


def _is_text(text: str) -> bool:
    """Encodable as UTF-8 (JSON may carry a lone surrogate, which no tool could be given)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def grant_refusal(row: dict[str, Any]) -> str | None:
    """Why no grant may be made from this request: its call needs values a person supplies each time."""
    names = list(row.get("supplied_by_approver") or [])
    return not_repeatable(row["request_id"], names) if names else None
