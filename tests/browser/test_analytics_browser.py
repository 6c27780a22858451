"""The analytics page in real Chromium over a seeded audit: each chart carries the figures the
projection's rows give (counted here straight from the rows), the tables say the same without
JavaScript, and a screenshot is kept for the docs."""

from __future__ import annotations

from datetime import timedelta

import httpx
from playwright.async_api import Browser, expect

from activities.ledger import Ledger
from config.settings import Settings
from core.tool_run_model import ToolResult
from tests.observability.seeding import START, Decided, seed_decided
from tests.support.browser_support import screenshot
from tests.support.helpers import rows
from tests.support.ui_fixtures import served_app

CHARTS = ["chart-days", "chart-tools", "chart-people", "chart-undecided", "chart-slowest"]


def audit() -> list[Decided]:
    calls = []
    for day in range(3):
        at = START + timedelta(days=day)
        for n in range(6):
            calls.append(
                Decided(
                    "write_file", {"path": f"notes/{day}-{n}.txt", "content": "c"}, "allow", 2.0 + n + day * 10, at=at
                )
            )
        calls.append(Decided("run_shell", {"command": "make test"}, "allow", 30.0 + day, by="bob", door="cli", at=at))
        calls.append(Decided("run_shell", {"command": "rm -rf build"}, "deny", 60.0, by="bob", door="slack", at=at))
    calls.append(Decided("write_file", {"path": "late.txt", "content": "c"}, "expired", 3600.0, at=START))
    calls.append(Decided("run_shell", {"command": "deploy"}, "expired", 3600.0, at=START))
    calls.append(Decided("write_file", {"path": "x.txt", "content": "c"}, "edit", 5.0, at=START))
    return calls


async def escalate(settings: Settings, request_id: str) -> None:
    """The ledger's record of an escalation delivered to a channel, as the notify activity leaves it."""
    ledger = Ledger(settings.ledger_db)
    try:
        key = f"{request_id}:ops:escalation"
        await ledger.claim(key, "notify:webhook", 1)
        await ledger.start(key, 1)
        await ledger.finish(key, ToolResult(content="{}"))
    finally:
        await ledger.close()


def from_rows(settings: Settings) -> dict:
    """The figures, counted straight from the projection's rows."""
    found = rows(settings.approvals_db, "SELECT tool_name, decision, created_at, resolved_at FROM ui_pending_approvals")
    rate = {}
    for tool in ("run_shell", "write_file"):
        mine = [row for row in found if row["tool_name"] == tool and row["decision"] in ("allow", "deny", "edit")]
        rate[tool] = round(100 * sum(row["decision"] == "allow" for row in mine) / len(mine))
    expired = {tool: sum(row["tool_name"] == tool and row["decision"] == "expired" for row in found) for tool in rate}
    return {"rate": rate, "expired": expired}


async def test_the_analytics_page_plots_the_audit(browser: Browser, settings: Settings) -> None:
    ids = await seed_decided(settings, audit())
    await escalate(settings, ids[6])  # a run_shell request
    expected = from_rows(settings)
    served = served_app(settings, "127.0.0.1:1")  # the page needs no Temporal
    page = await browser.new_page(viewport={"width": 1100, "height": 900})
    try:
        async with httpx.AsyncClient(base_url=served.url) as http:
            plain = (await http.get("/analytics")).text
        assert '<table id="table-tools"' in plain and "<td>write_file</td>" in plain
        await page.goto(f"{served.url}/analytics")
        await expect(page.locator("body")).to_have_attribute("data-charted", "yes")
        data = await page.evaluate(
            """(ids) => Object.fromEntries(ids.map((id) => { const c = Chart.getChart(id);
                 return [id, {labels: c.data.labels, sets: c.data.datasets.map((s) => s.data)}]; }))""",
            CHARTS,
        )
        await screenshot(page, "analytics.png")  # docs/analytics.png is a copy of it
    finally:
        await page.close()
        served.stop()

    tools = data["chart-tools"]
    assert dict(zip(tools["labels"], tools["sets"][0], strict=True)) == expected["rate"]
    undecided = data["chart-undecided"]
    assert dict(zip(undecided["labels"], undecided["sets"][0], strict=True)) == expected["expired"]
    assert dict(zip(undecided["labels"], undecided["sets"][1], strict=True)) == {"run_shell": 1, "write_file": 0}
    days = data["chart-days"]
    assert days["labels"] == ["2026-11-20", "2026-11-21", "2026-11-22"]
    first_day = [2.0 + n for n in range(6)] + [30.0, 60.0, 5.0]
    assert days["sets"][0][0] == sorted(first_day)[4]  # nearest-rank median of nine: the fifth
    assert days["sets"][1][0] == 60.0  # nearest-rank p90 of nine: the ninth
    people = data["chart-people"]
    assert dict(zip(people["labels"], people["sets"][0], strict=True)) == {
        "alice (ui)": 19,
        "bob (cli)": 3,
        "bob (slack)": 3,
    }
    assert data["chart-slowest"]["labels"][0] == "run_shell"
