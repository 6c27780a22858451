"""`starter.py hosts`, `show` and `conversations` on a tool waiting for a gone host, run as a
person runs them, against a real Temporal dev server and the projection a worker writes."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.client import Client
from temporalio.worker import Worker

from config.host_polls import last_poll
from config.settings import Settings
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.storage.test_hosts import wait_payload, waiting, write
from tests.support.helpers import eventually
from tests.support.processes import free_port, run_cli

LINE = "waiting for host pod-a: no worker since 10:02:03; moving at 10:04:03"


@activity.defn(name="host_wait_cli_noop")
async def noop() -> None:
    """Never called: the worker is here to poll its host's queue."""


async def test_show_and_conversations_say_what_the_tool_waits_for(client: Client, settings: Settings) -> None:
    cid = await start_conversation(client, settings, "write hello", f"host-wait-{uuid.uuid4().hex[:8]}")
    try:
        store = ProjectionStore(settings.approvals_db)
        try:
            await store.set_tool_host(cid, "pod-a")
        finally:
            await store.close()
        await write(settings.approvals_db, waiting(cid, 2))
        shown = await run_cli(settings, client, "show", cid, "--timeout", "1")
        shown_json = await run_cli(settings, client, "show", cid, "--timeout", "1", "--json")
        listed = await run_cli(settings, client, "conversations")
        listed_json = await run_cli(settings, client, "conversations", "--json")
    finally:
        await client.get_workflow_handle(cid).terminate("test over")

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:3] == [f"Conversation {cid}: running", f"  {LINE}", "  tools run on host: pod-a"]
    state = json.loads(shown_json.stdout)
    assert (state["tool_host"], state["host_wait"]) == ("pod-a", wait_payload())
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split()[-1] == "NOTE" and row.endswith(LINE)
    [conversation] = json.loads(listed_json.stdout)
    assert conversation["host_wait"] == wait_payload()


async def test_hosts_lists_last_polls_and_degrades_when_temporal_is_down(client: Client, settings: Settings) -> None:
    live = f"{settings.task_queue}@pod-live"
    store = ProjectionStore(settings.approvals_db)
    try:
        await store.note_host("pod-live", live)
        await store.set_tool_host("c1", "pod-a")
    finally:
        await store.close()
    await write(settings.approvals_db, waiting("c1", 1))
    async with Worker(client, task_queue=live, activities=[noop]):
        await eventually(lambda: last_poll(client, live))
        listed = await run_cli(settings, client, "hosts", "--json")
        table = await run_cli(settings, client, "hosts")
    down = {"TEMPORAL_ADDRESS": f"127.0.0.1:{free_port()}"}
    unreachable = await run_cli(settings, client, "hosts", "--json", "--timeout", "2", env_extra=down)

    assert listed.returncode == 0, listed.stderr
    hosts = {row["host"]: row for row in json.loads(listed.stdout)}
    assert list(hosts) == ["pod-a", "pod-live"]
    assert set(hosts["pod-a"]) == {
        "host",
        "task_queue",
        "last_poll",
        "last_seen",
        "stopped_at",
        "conversations",
        "waiting_tools",
    }
    gone, up = hosts["pod-a"], hosts["pod-live"]
    assert (gone["task_queue"], gone["last_poll"], gone["last_seen"]) == ("durable-approvals@pod-a", None, None)
    assert (gone["conversations"], gone["waiting_tools"]) == (1, 1)
    assert (up["task_queue"], up["stopped_at"], up["conversations"], up["waiting_tools"]) == (live, None, 0, 0)
    assert datetime.now(UTC) - datetime.fromisoformat(up["last_poll"]) < timedelta(minutes=2)
    assert up["last_seen"] is not None
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split()[:2] == ["HOST", "TASK"]
    assert "none listed" in table.stdout

    assert unreachable.returncode == 0, unreachable.stderr
    assert [row["last_poll"] for row in json.loads(unreachable.stdout)] == ["unknown", "unknown"]
    assert "Last polls unknown: Temporal" in unreachable.stderr
