"""The UI's /metrics over a seeded read model and ledger, on SQLite and on PostgreSQL: each figure
is what the rows say, deliveries and escalations come from the ledger, refusals from their counts."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from activities.ledger import Ledger
from config.settings import Settings
from core.tool_run_model import ToolResult
from storage.store import ProjectionStore
from tests.observability.seeding import Decided, seed_decided
from tests.support.postgres import on_both_backends
from tests.support.ui_fixtures import api_client, seed_pending
from ui.metrics_routes import DECISION_BUCKETS

pytestmark = on_both_backends


async def deliver(settings: Settings, *keys: str) -> None:
    ledger = Ledger(settings.ledger_db)
    try:
        for key in keys:
            await ledger.claim(key, "notify:webhook", 1)
            await ledger.start(key, 1)
            await ledger.finish(key, ToolResult(content="{}"))
        await ledger.claim("perm_c_1:ops:request:decided", "notify:slack-update", 1)  # an update: not counted
    finally:
        await ledger.close()


async def test_metrics_count_the_rows(settings: Settings) -> None:
    ids = await seed_decided(
        settings,
        [
            Decided("write_file", {"path": "a", "content": "secret-words"}, "allow", 0.5),
            Decided("write_file", {"path": "b", "content": "c"}, "always_allow", 7.0, door="cli"),
            Decided("write_file", {"path": "c", "content": "c"}, "edit", 40.0),
            Decided("run_shell", {"command": "ls"}, "deny", 2.0, door="slack"),
            Decided("run_shell", {"command": "ls"}, "expired", 3600.0),
            Decided("run_shell", {"command": "ls"}, "canceled", 5.0),
        ],
    )
    await seed_pending(settings, "conv-waiting", "call_1", "run_shell", {"command": "make zorblat"})
    await deliver(settings, f"{ids[3]}:ops:request", f"{ids[3]}:ops:escalation", f"{ids[3]}:chat:request")
    store = ProjectionStore(settings.approvals_db)
    try:
        await store.count_refusal("StaleApproval", "ui")
        await store.count_refusal("StaleApproval", "ui")
        await store.count_refusal("UnknownApproval", None)
    finally:
        await store.close()
    async with api_client(settings, None) as http:
        text = (await http.get("/metrics")).text

    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }

    def value(name: str, **labels: str) -> float | None:
        return found.get((name, tuple(sorted(labels.items()))))

    assert value("approvals_waiting", tool="run_shell") == 1
    assert value("approvals_decisions_total", outcome="allow", door="ui", tool="write_file") == 1
    assert value("approvals_decisions_total", outcome="allow", door="cli", tool="write_file") == 1
    assert value("approvals_decisions_total", outcome="edit", door="ui", tool="write_file") == 1
    assert value("approvals_decisions_total", outcome="deny", door="slack", tool="run_shell") == 1
    assert value("approvals_decisions_total", outcome="expired", door="none", tool="run_shell") == 1
    assert value("approvals_decisions_total", outcome="canceled", door="none", tool="run_shell") == 1
    assert value("approvals_expired_total", tool="run_shell") == 1
    ui_writes = {
        bound: value("approvals_time_to_decision_seconds_bucket", tool="write_file", door="ui", le=str(bound))
        for bound in DECISION_BUCKETS
    }
    assert ui_writes[1.0] == 1 and ui_writes[30.0] == 1 and ui_writes[60.0] == 2
    assert value("approvals_time_to_decision_seconds_sum", tool="write_file", door="ui") == 40.5
    assert value("approvals_time_to_decision_seconds_count", tool="run_shell", door="none") is None  # no person
    assert value("approvals_notifications_delivered_total", channel="ops") == 2
    assert value("approvals_notifications_delivered_total", channel="chat") == 1
    assert value("approvals_escalations_total", channel="ops") == 1
    assert value("approvals_decisions_refused_total", reason="StaleApproval", door="ui") == 2
    assert value("approvals_decisions_refused_total", reason="UnknownApproval", door="none") == 1
    assert value("approvals_decisions_stale_total", door="ui") == 2
    assert "secret-words" not in text and "zorblat" not in text  # no argument value in a label
