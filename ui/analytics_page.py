"""The `/analytics` page: the approvals' figures as tables, readable without JavaScript, with a
canvas beside each that ui/static/analytics.js fills with a chart (Chart.js, served from
ui/static, no CDN). Every value is escaped; the page carries no inline script."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _table(table_id: str, caption: str, head: list[str], rows: list[list[Any]]) -> str:
    cells = "".join(f'<th scope="col">{html.escape(name)}</th>' for name in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    empty = "" if rows else f'<tr><td colspan="{len(head)}">Nothing yet.</td></tr>'
    return (
        f'<table id="{table_id}" class="stats-table"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{cells}</tr></thead><tbody>{body}{empty}</tbody></table>"
    )


def _section(chart_id: str, title: str, table: str) -> str:
    return (
        f'<section class="stats-section"><h2>{html.escape(title)}</h2>'
        f'<div class="chart-box"><canvas id="{chart_id}" role="img" aria-label="{html.escape(title)}"></canvas></div>'
        f"{table}</section>"
    )


def analytics_html(figures: dict[str, Any], since: str | None) -> str:
    totals = figures["totals"]
    summary = (
        f"{totals['requests']} requests, {totals['decided']} decided ({_rate(totals['approval_rate'])} approved),"
        f" {totals['expired']} expired, {totals['escalated']} escalated, {totals['waiting']} waiting;"
        f" time to decision median {_seconds(totals['median_seconds'])} s, p90 {_seconds(totals['p90_seconds'])} s"
    )
    days = [
        [d["day"], d["decisions"], _seconds(d["median_seconds"]), _seconds(d["p90_seconds"])]
        for d in figures["per_day"]
    ]
    tools = [
        [t["tool"], t["requests"], t["allowed"], t["denied"], t["edited"], _rate(t["approval_rate"])]
        for t in figures["per_tool"]
    ]
    people = [[p["person"], p["door"], p["decisions"]] for p in figures["per_person"]]
    undecided = [[t["tool"], t["expired"], t["escalated"], t["canceled"]] for t in figures["per_tool"]]
    slowest = [[t["tool"], _seconds(t["median_seconds"]), _seconds(t["p90_seconds"])] for t in figures["slowest_tools"]]
    sections = [
        _section(
            "chart-days",
            "Time to decision per day",
            _table(
                "table-days", "Seconds from request to decision", ["Day", "Decisions", "Median (s)", "p90 (s)"], days
            ),
        ),
        _section(
            "chart-tools",
            "Approval rate per tool",
            _table(
                "table-tools",
                "Decisions per tool",
                ["Tool", "Requests", "Allowed", "Denied", "Edited", "Approval rate"],
                tools,
            ),
        ),
        _section(
            "chart-people",
            "Decisions per person and door",
            _table("table-people", "Who decided, through which door", ["Person", "Door", "Decisions"], people),
        ),
        _section(
            "chart-undecided",
            "Expired and escalated",
            _table(
                "table-undecided",
                "Requests nobody decided in time, or that went up",
                ["Tool", "Expired", "Escalated", "Canceled"],
                undecided,
            ),
        ),
        _section(
            "chart-slowest",
            "Slowest tools to get a decision",
            _table("table-slowest", "Median seconds to a decision", ["Tool", "Median (s)", "p90 (s)"], slowest),
        ),
    ]
    suggested = [
        [item["rule"], item["covers"], _seconds(item["median_seconds"]), item["not_covered"]]
        for item in figures.get("suggestions", [])
    ]
    sections.append(
        '<section class="stats-section"><h2>Rules you could add</h2>'
        "<p>Calls approved every time, quickly (at least 20, none denied or edited, median under 5 s)."
        " Nothing is applied: copy a rule into POLICY_FILE's <code>allow</code> list to stop asking.</p>"
        + _table(
            "table-suggestions", "Suggested allow rules", ["Rule", "Covers", "Median (s)", "Still asked"], suggested
        )
        + "</section>"
    )
    period = f"since {since}" if since else "all time"
    query = html.escape(f"?since={quote(since)}") if since else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Approvals analytics</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/style.css">
<script src="/static/chart.umd.min.js" defer></script>
<script src="/static/analytics.js" defer></script>
</head>
<body class="analytics" data-stats="/api/stats{query}">
<header class="topbar"><h1><a href="/">Approvals inbox</a> · Analytics</h1></header>
<main class="analytics-main">
<p id="stats-summary">{html.escape(summary)} ({html.escape(period)}).</p>
<form method="get" action="/analytics" class="stats-since">
<label>Since <input name="since" value="{html.escape(since or "")}" placeholder="7d, 12h, 2026-11-01"></label>
<button type="submit">Show</button></form>
{"".join(sections)}
</main>
</body>
</html>"""
