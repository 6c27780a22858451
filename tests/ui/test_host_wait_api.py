"""A tool waiting for a gone host, as the UI serves it: the API's conversation rows and view carry
the wait (raw, and as the line people read), and /metrics counts the waiting tools per host."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from temporalio.client import Client

from config.settings import Settings
from tests.storage.test_hosts import one_waiting_one_fine, projected, wait_payload, waiting, write
from tests.support.postgres import on_both_backends
from tests.support.ui_fixtures import api_client

pytestmark = on_both_backends
LINE = "waiting for host pod-a: no worker since 10:02:03; moving at 10:04:03"


async def test_conversation_rows_and_view_carry_the_wait(client: Client, settings: Settings) -> None:
    await one_waiting_one_fine(settings.approvals_db)
    async with api_client(settings, client) as http:
        listed = (await http.get("/api/conversations")).json()
        view = await http.get("/api/conversations/conv-waits")  # no workflow: the projection's view

    rows = {row["conversation_id"]: row for row in listed}
    waits = rows["conv-waits"]
    assert (waits["tool_host"], waits["host_wait"], waits["host_wait_text"]) == ("pod-a", wait_payload(), LINE)
    fine = rows["conv-fine"]
    assert (fine["tool_host"], fine["host_wait"], fine["host_wait_text"]) == (None, None, None)
    assert view.status_code == 200
    body = view.json()
    assert (body["tool_host"], body["host_wait"], body["host_wait_text"]) == ("pod-a", wait_payload(), LINE)


async def test_metrics_count_the_tools_waiting_for_each_host(settings: Settings) -> None:
    await write(
        settings.approvals_db,
        waiting("a1", 1),
        waiting("a2", 1),
        waiting("z1", 1, host="pod-z"),
        waiting("closed", 1, host="pod-z"),
        projected("closed", 2, status="closed"),
    )
    async with api_client(settings, None) as http:
        text = (await http.get("/metrics")).text

    found = {
        sample.labels["host"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "approvals_tools_waiting_for_host"
    }
    assert found == {"pod-a": 2, "pod-z": 1}
