"""A subagent's request at every door: the API, `pending` and `show` say which conversation asks
and whom it works for, on both projection backends."""

from __future__ import annotations

import subprocess
import sys

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState
from doors.control import close_conversation, start_conversation
from maintenance.rebuild import rebuild_projection
from tests.conftest import HistoryRecorder
from tests.support.failure_support import address_of
from tests.support.helpers import execute, rows, wait_pending
from tests.support.postgres import on_both_backends
from tests.support.processes import REPO_ROOT, process_env
from tests.support.scripts import ScriptedModel, delegation
from tests.support.ui_fixtures import api_client
from worker import build_worker
from workflows.delegation import child_conversation_id

pytestmark = on_both_backends
TASK = "write the report to report.txt"


def cli(settings: Settings, client: Client, *args: str) -> str:
    command = [sys.executable, "starter.py", *args]
    env = process_env(settings, address_of(client))
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_subagents_request_names_its_conversation_and_parent(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("w1", "write_file", {"path": "report.txt", "content": "x"}))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "please delegate the report"))
        child = histories.track(child_conversation_id(cid, "d1"))
        [row] = await wait_pending(settings.approvals_db, child, 1)
        async with api_client(settings, client) as http:
            [approval] = (await http.get("/api/approvals", params={"status": "pending"})).json()
            listed = {c["conversation_id"]: c for c in (await http.get("/api/conversations")).json()}
        pending = cli(settings, client, "pending")
        shown_child = cli(settings, client, "show", child)
        shown_parent = cli(settings, client, "show", cid)
        watched = cli(settings, client, "watch", cid)
        await close_conversation(client, cid)
        await client.get_workflow_handle(cid, result_type=ConversationState).result()
    # A lost projection is rebuilt from Temporal, the parent link with it.
    execute(settings.approvals_db, "DELETE FROM ui_conversations")
    await rebuild_projection(client, settings)
    rebuilt = rows(settings.approvals_db, "SELECT conversation_id, parent_id FROM ui_conversations")

    assert (approval["request_id"], approval["conversation_id"], approval["parent_id"]) == (
        row["request_id"],
        child,
        cid,
    )
    assert listed[child]["parent_id"] == cid and listed[cid]["parent_id"] is None
    assert f"{child} (subagent of {cid})" in pending
    assert f"subagent of: {cid}" in shown_child
    assert f"subagent: {child} (awaiting_approval)" in shown_parent
    assert f"Conversation {cid} is running; its subagent {child} is awaiting_approval." in watched
    assert {r["conversation_id"]: r["parent_id"] for r in rebuilt} == {cid: None, child: cid}
