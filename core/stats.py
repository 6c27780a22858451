"""How approvals go, from the audit: the figures `starter.py stats` prints and `/analytics` plots.

Time to decision counts the decisions people took (allow, deny, edit), from the request to its
resolution; expired and canceled requests are counted apart. Medians and 90th percentiles use
the nearest rank, so each is a time some request really took.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.fatigue import decision_seconds

PEOPLES = {"allow": "allowed", "always_allow": "allowed", "deny": "denied", "edit": "edited"}
UNDECIDED = {"expired": "expired", "canceled": "canceled"}
SLOWEST = 5


def percentile(values: list[float], share: float) -> float | None:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


@dataclass
class _Tool:
    requests: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("allowed", "denied", "edited"), 0))
    expired: int = 0
    canceled: int = 0
    escalated: int = 0
    waiting: int = 0
    seconds: list[float] = field(default_factory=list)

    def as_dict(self, tool: str) -> dict[str, Any]:
        decided = sum(self.counts.values())
        return {
            "tool": tool,
            "requests": self.requests,
            **self.counts,
            "expired": self.expired,
            "canceled": self.canceled,
            "escalated": self.escalated,
            "waiting": self.waiting,
            "approval_rate": _rounded(self.counts["allowed"] / decided) if decided else None,
            "median_seconds": _rounded(percentile(self.seconds, 0.5)),
            "p90_seconds": _rounded(percentile(self.seconds, 0.9)),
        }


def approval_stats(
    rows: Iterable[dict[str, Any]], escalated: set[str] | frozenset[str] = frozenset()
) -> dict[str, Any]:
    """Audit rows (storage/audit.py's shape) and the ids of escalated requests -> the figures."""
    tools: dict[str, _Tool] = {}
    days: dict[str, list[float]] = {}
    people: dict[tuple[str, str], int] = {}
    requests = [row for row in rows if row.get("kind", "request") == "request"]
    for row in requests:
        tool = tools.setdefault(row["tool_name"], _Tool())
        tool.requests += 1
        tool.escalated += row["request_id"] in escalated
        decision = row.get("decision")
        if decision is None:
            tool.waiting += 1
        elif decision in UNDECIDED:
            setattr(tool, UNDECIDED[decision], getattr(tool, UNDECIDED[decision]) + 1)
        elif decision in PEOPLES:
            tool.counts[PEOPLES[decision]] += 1
            key = (row.get("decided_by") or "unnamed", row.get("decided_via") or "signal")
            people[key] = people.get(key, 0) + 1
            took = decision_seconds(row)
            if took is not None:
                tool.seconds.append(took)
                days.setdefault(str(row["resolved_at"])[:10], []).append(took)
    per_tool = [tools[name].as_dict(name) for name in sorted(tools)]
    all_seconds = [value for tool in tools.values() for value in tool.seconds]
    decided = sum(sum(tool.counts.values()) for tool in tools.values())
    allowed = sum(tool.counts["allowed"] for tool in tools.values())
    timed = [item for item in per_tool if item["median_seconds"] is not None]
    return {
        "totals": {
            "requests": len(requests),
            "decided": decided,
            "allowed": allowed,
            "approval_rate": _rounded(allowed / decided) if decided else None,
            "expired": sum(tool.expired for tool in tools.values()),
            "canceled": sum(tool.canceled for tool in tools.values()),
            "escalated": sum(tool.escalated for tool in tools.values()),
            "waiting": sum(tool.waiting for tool in tools.values()),
            "median_seconds": _rounded(percentile(all_seconds, 0.5)),
            "p90_seconds": _rounded(percentile(all_seconds, 0.9)),
        },
        "per_day": [
            {
                "day": day,
                "decisions": len(values),
                "median_seconds": _rounded(percentile(values, 0.5)),
                "p90_seconds": _rounded(percentile(values, 0.9)),
            }
            for day, values in sorted(days.items())
        ],
        "per_tool": per_tool,
        "per_person": [
            {"person": person, "door": door, "decisions": count} for (person, door), count in sorted(people.items())
        ],
        "slowest_tools": sorted(timed, key=lambda item: (-item["median_seconds"], item["tool"]))[:SLOWEST],
    }
