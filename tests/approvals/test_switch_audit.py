"""Who closed a conversation or switched its auto-approve, and through which door: kept in the
workflow's state, shown by `show`, and listed by the audit (CLI and API) with when."""

from __future__ import annotations

import json

from temporalio.client import Client

from config.settings import Settings
from core.contract import SIGNAL_CLOSE, SIGNAL_SET_AUTO_APPROVE, WORKFLOW_TYPE
from core.conversation_model import ConversationInput, ConversationState
from demo_model.server import text_reply
from doors.control import get_state, send_message, set_auto_approve, start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_pending
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

WRITE = ("call_1", "write_file", {"path": "switched.txt", "content": "x"})
AS_BOB = {"LOGNAME": "bob", "USER": "bob"}  # the CLI's operating-system user


async def switches(settings: Settings, conversation_id: str, count: int) -> list[dict]:
    """The conversation's switches once `count` of them are in the projection."""

    async def written() -> list[dict] | None:
        store = ProjectionStore(settings.approvals_db)
        try:
            found = await store.switches(conversation_id)
        finally:
            await store.close()
        return found if len(found) >= count else None

    return await eventually(written)


def who(rows: list[dict], conversation_id: str) -> list[tuple]:
    return [
        (row["switch"], row["enabled"], row["by"], row["door"])
        for row in rows
        if row.get("kind") == "switch" and row["conversation_id"] == conversation_id
    ]


async def test_ui_and_cli_switches_name_who_and_which_door(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    alice = await add_person(settings, "alice", ["sre"])
    signed_in = {"Authorization": f"Bearer {alice}"}
    model.behaviour = calls_then_summary(WRITE)
    async with build_worker(client, settings), api_client(settings, client) as http:
        by_cli = histories.track(await start_conversation(client, settings, "write it"))
        by_ui = histories.track(await start_conversation(client, settings, "write it too"))
        await wait_pending(settings.approvals_db, by_cli, 1)

        on = await http.post(f"/api/conversations/{by_cli}/auto-approve", json={"enabled": True}, headers=signed_in)
        assert on.status_code == 202, on.text
        await switches(settings, by_cli, 1)
        state = await get_state(client, by_cli)
        assert (state.auto_approve, state.auto_approve_by, state.auto_approve_door) == (True, "alice", "ui")
        off = await run_cli(settings, client, "auto-approve", by_cli, "off", env_extra=AS_BOB)
        assert off.returncode == 0, off.stderr
        await switches(settings, by_cli, 2)
        closed = await run_cli(settings, client, "close", by_cli, env_extra=AS_BOB)
        assert closed.returncode == 0, closed.stderr
        cli_final = await client.get_workflow_handle(by_cli, result_type=ConversationState).result()

        closing = await http.post(f"/api/conversations/{by_ui}/close", headers=signed_in)
        assert closing.status_code == 202, closing.text
        ui_final = await client.get_workflow_handle(by_ui, result_type=ConversationState).result()

        shown = await run_cli(settings, client, "show", by_cli)
        shown_ui = await run_cli(settings, client, "show", by_ui)
        audit = await run_cli(settings, client, "audit", "--json")
        audit_table = await run_cli(settings, client, "audit")
        api_rows = (await http.get("/api/audit")).json()

    assert (cli_final.closed_by, cli_final.closed_door) == ("bob", "cli")
    assert (cli_final.auto_approve, cli_final.auto_approve_by, cli_final.auto_approve_door) == (False, "bob", "cli")
    assert (ui_final.closed_by, ui_final.closed_door) == ("alice", "ui")

    assert shown.returncode == 0, shown.stderr
    lines = [line.strip() for line in shown.stdout.splitlines()]
    assert [line.split(" at ")[0] for line in lines if " by " in line] == [
        "auto-approve switched on by alice (ui)",
        "auto-approve switched off by bob (cli)",
        "closed by bob (cli)",
    ]
    assert "closed by alice (ui)" in shown_ui.stdout

    assert audit.returncode == 0, audit.stderr
    listed = json.loads(audit.stdout)
    expected = [
        ("auto_approve", True, "alice", "ui"),
        ("auto_approve", False, "bob", "cli"),
        ("close", None, "bob", "cli"),
    ]
    assert who(listed, by_cli) == expected
    assert who(listed, by_ui) == [("close", None, "alice", "ui")]
    assert all(row["created_at"] for row in listed if row["kind"] == "switch")
    assert who(api_rows, by_cli) == expected and who(api_rows, by_ui) == who(listed, by_ui)
    assert "closed by alice (ui)" in audit_table.stdout and "switched off by bob (cli)" in audit_table.stdout


async def test_the_contract_payloads_without_a_name_still_switch_and_close(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(WRITE)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write it"))
        await wait_pending(settings.approvals_db, cid, 1)
        handle = client.get_workflow_handle(cid, result_type=ConversationState)
        await handle.signal(SIGNAL_SET_AUTO_APPROVE, {"enabled": True})
        await switches(settings, cid, 1)
        await handle.signal(SIGNAL_CLOSE, {})
        final = await handle.result()
        [_, closed] = await switches(settings, cid, 2)
        shown = await run_cli(settings, client, "show", cid)

    assert final.turn_status == "closed" and final.auto_approve is True
    assert (final.closed_by, final.closed_door, final.auto_approve_by) == (None, None, None)
    assert (closed["switch"], closed["by"]) == ("close", None)
    assert "closed by an unnamed caller (signal)" in shown.stdout


async def test_the_last_switcher_is_carried_across_continue_as_new(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = lambda messages: text_reply("noted")
    cid = histories.track("conv-switch-carried")
    start = ConversationInput(conversation_id=cid, continue_as_new_after_events=5)
    async with build_worker(client, settings):
        handle = await client.start_workflow(WORKFLOW_TYPE, start, id=cid, task_queue=settings.task_queue)
        first_run = handle.result_run_id
        await set_auto_approve(client, cid, True, "carol", "cli")
        await switches(settings, cid, 1)
        await send_message(client, cid, "hello")

        async def next_run() -> ConversationState | None:
            described = await client.get_workflow_handle(cid).describe()
            return await get_state(client, cid) if described.run_id != first_run else None

        state = await eventually(next_run)

    assert (state.auto_approve, state.auto_approve_by, state.auto_approve_door) == (True, "carol", "cli")
