"""A conversation whose workflow task fails for good shows `failed`, with the reason, everywhere a
person looks (the projection, `show`, `conversations`, `pending`, the inbox API) within 30 s; it
heals once a fixed worker completes the task.

The bad deploy is real: the conversation waits for an approval under the real worker, then only a
worker with broken workflow code (same type name) runs when the decision arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from config.settings import Settings
from core.contract import SIGNAL_SET_AUTO_APPROVE, UPDATE_DECIDE
from core.conversation_model import DecisionInput
from doors.control import send_decision, start_conversation
from maintenance.failure_watch import FailureWatch
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.broken_workflows import DriftedConversation, RaisingConversation
from tests.support.failure_support import address_of, wait_turn
from tests.support.helpers import eventually, pending_rows, rows, tool_messages, wait_pending, workspace_of
from tests.support.processes import REPO_ROOT, process_env
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker


@contextlib.asynccontextmanager
async def failure_watch(client: Client, settings: Settings) -> AsyncIterator[FailureWatch]:
    store = ProjectionStore(settings.approvals_db)
    watch = FailureWatch(client, store, interval=0.5)
    task = asyncio.create_task(watch.run())
    try:
        yield watch
    finally:
        task.cancel()
        await store.close()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def cli_json(client: Client, settings: Settings, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "starter.py", *args, "--json"],
        cwd=REPO_ROOT,
        env=process_env(settings, address_of(client)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def failed_events(settings: Settings, conversation_id: str) -> list[dict[str, Any]]:
    sql = "SELECT payload_json FROM ui_events WHERE conversation_id = ? AND event_type = 'turn.failed'"
    return [json.loads(r["payload_json"]) for r in rows(settings.approvals_db, sql, conversation_id)]


@pytest.mark.parametrize(
    ("broken", "words"),
    [(RaisingConversation, "bad deploy: the conversation code raises"), (DriftedConversation, "nondetermin")],
)
async def test_a_task_failing_for_good_shows_failed_with_its_reason_then_heals(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    broken: type,
    words: str,
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    async with build_worker(client, settings, max_cached_workflows=0):
        cid = histories.track(await start_conversation(client, settings, "write a.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)

    bad_worker = Worker(client, task_queue=settings.task_queue, workflows=[broken], max_cached_workflows=0)
    async with bad_worker, failure_watch(client, settings):
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))

        async def shows_failed() -> dict[str, Any] | None:
            found = rows(settings.approvals_db, "SELECT * FROM ui_conversations WHERE conversation_id = ?", cid)
            return found[0] if found and found[0]["turn_status"] == "failed" else None

        await eventually(shows_failed, timeout=30)
        [event] = failed_events(settings, cid)
        assert words in event["reason"].lower() and event["kind"] == "workflow_task"
        assert event["previous_status"] == "awaiting_approval"

        shown = cli_json(client, settings, "show", cid, "--timeout", "2")
        assert (shown["turn_status"], shown["source"]) == ("failed", "projection")
        assert words in shown["last_error"].lower()
        [listed] = [c for c in cli_json(client, settings, "conversations") if c["conversation_id"] == cid]
        assert listed["turn_status"] == "failed" and words in listed["last_error"].lower()
        [waiting] = cli_json(client, settings, "pending", "--conversation", cid)
        assert waiting["conversation_failed"] and words in waiting["conversation_error"].lower()
        async with api_client(settings, client) as http:
            inbox = (await http.get("/api/conversations")).json()
            [item] = [c for c in inbox if c["conversation_id"] == cid]
            assert item["turn_status"] == "failed" and words in item["last_error"].lower()
            detail = (await http.get(f"/api/conversations/{cid}")).json()
            assert detail["turn_status"] == "failed" and words in detail["last_error"].lower()
            assert words in detail["notice"].lower()

    # The fixed worker completes the task: the decision applies, the turn ends, the row heals.
    async with build_worker(client, settings), failure_watch(client, settings):
        state = await wait_turn(client, cid, "idle", timeout=60)
        assert tool_messages(state) == ["Wrote 2 bytes to a.txt"]

        async def healed() -> bool:
            found = rows(
                settings.approvals_db, "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?", cid
            )
            return found[0]["turn_status"] == "idle"

        await eventually(healed, timeout=30)
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "ok"
    assert len(failed_events(settings, cid)) == 1


async def test_the_watch_heals_a_row_the_workflow_has_no_reason_to_write(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    """A signal the workflow ignores (a malformed payload) fails under the bad deploy; after the fix
    the workflow writes nothing, so the watch asks it for its status and writes that back. (A valid
    auto-approve switch would not do: it is recorded in the read model, which heals the row itself.)"""
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    async with build_worker(client, settings, max_cached_workflows=0):
        cid = histories.track(await start_conversation(client, settings, "write a.txt"))
        await wait_pending(settings.approvals_db, cid, 1)

    bad_worker = Worker(client, task_queue=settings.task_queue, workflows=[RaisingConversation], max_cached_workflows=0)
    async with bad_worker, failure_watch(client, settings):
        await client.get_workflow_handle(cid).signal(SIGNAL_SET_AUTO_APPROVE, {"enabled": "not a boolean"})

        async def status() -> str:
            sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
            return str(rows(settings.approvals_db, sql, cid)[0]["turn_status"])

        await eventually(lambda: _is(status, "failed"), timeout=30)

    async with build_worker(client, settings), failure_watch(client, settings):
        await eventually(lambda: _is(status, "awaiting_approval"), timeout=30)
    sql = "SELECT payload_json FROM ui_events WHERE conversation_id = ? AND event_type = 'turn.recovered'"
    [recovered] = rows(settings.approvals_db, sql, cid)
    assert json.loads(recovered["payload_json"]) == {"turn_status": "awaiting_approval"}
    assert len(pending_rows(settings.approvals_db, cid)) == 1


async def _is(read: Callable[[], Awaitable[str]], expected: str) -> bool:
    return await read() == expected


async def test_an_oversized_update_shows_payloads_too_large(
    client: Client, settings: Settings, model: ScriptedModel
) -> None:
    """A client without the payload store (the project's own doors store a payload this big and
    send a reference) sends an update of more than 2 MB; the server takes it, but the worker must
    echo the request back and cannot (TMPRL1103): every task of the conversation fails from then
    on. The watch says so."""
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    storeless = await Client.connect(address_of(client), data_converter=pydantic_data_converter)
    async with build_worker(client, settings), failure_watch(client, settings):
        cid = await start_conversation(client, settings, "write a.txt")
        await wait_pending(settings.approvals_db, cid, 1)
        oversized = storeless.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, "x" * 2_200_000)
        sending = asyncio.create_task(asyncio.wait_for(oversized, timeout=30))

        async def reason() -> str | None:
            found = failed_events(settings, cid)
            return str(found[0]["reason"]) if found else None

        assert "payloads_too_large" in await eventually(reason, timeout=30)
        shown = cli_json(client, settings, "show", cid, "--timeout", "2")
        assert shown["turn_status"] == "failed" and "TMPRL1103" in shown["last_error"]
        sending.cancel()
        with contextlib.suppress(BaseException):
            await sending
    await client.get_workflow_handle(cid).terminate("an oversized update cannot be taken back")
