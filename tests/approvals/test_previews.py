"""An asked call comes with its effect and its reason, and an approval binds to the target it previewed.

A write_file over an existing file is shown as a diff against that file; a file changed between
the asking and the approval is not overwritten: the approval is recorded as stale and the same
call asked again under a new request id, whose preview is against the new content.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from core.previews import EffectPreview
from core.why import WhyContext
from demo_model.server import text_reply, tool_reply
from doors.control import get_state, send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import (
    approval_row,
    eventually,
    new_workspace,
    pending_rows,
    tool_messages,
    wait_pending,
    wait_status,
)
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, last_role, tool_results
from worker import build_worker

OLD = "alpha\nbeta\ngamma\n"
NEW = "alpha\nBETA <b>\ngamma\n"


def preview_of(row: dict[str, Any]) -> EffectPreview:
    return EffectPreview.model_validate_json(row["preview_json"])


def why_of(row: dict[str, Any]) -> WhyContext:
    return WhyContext.model_validate_json(row["why_json"])


async def asked_again(settings: Settings, cid: str, first_id: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        waiting = pending_rows(settings.approvals_db, cid)
        return waiting[0] if len(waiting) == 1 and waiting[0]["request_id"] != first_id else None

    return await eventually(found)


def reasoned_write(path: str, content: str, said: str) -> Any:
    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(("call_1", "write_file", {"path": path, "content": content}), text=said)
        return text_reply("results: " + " | ".join(str(m["content"]) for m in tool_results(messages)))

    return behave


async def test_a_write_over_a_file_is_previewed_as_its_diff_with_the_reason(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    cid, ws = new_workspace(settings)
    (ws / "notes.txt").write_text(OLD)
    model.behaviour = reasoned_write("notes.txt", NEW, "Capitalising beta as asked.")
    async with build_worker(client, settings):
        histories.track(await start_conversation(client, settings, "capitalise <beta> in notes.txt", cid))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        preview = preview_of(row)
        assert preview.kind == "file" and preview.path == "notes.txt" and not preview.new_file
        assert preview.diff is not None and "-beta\n" in preview.diff and "+BETA <b>\n" in preview.diff
        assert (preview.lines_added, preview.lines_removed) == (1, 1)
        assert preview.target_hash == hashlib.sha256(OLD.encode()).hexdigest()
        assert why_of(row).user_message == "capitalise <beta> in notes.txt"
        assert why_of(row).assistant_text == "Capitalising beta as asked."
        shown = await run_cli(settings, client, "show", row["request_id"], "--json")
        assert shown.returncode == 0, shown.stderr
        document = json.loads(shown.stdout)
        assert document["preview"]["diff"] == preview.diff and document["preview"]["target_hash"] == preview.target_hash
        assert document["why"]["user_message"] == "capitalise <beta> in notes.txt"
        text = await run_cli(settings, client, "show", row["request_id"])
        assert "+BETA <b>" in text.stdout and "user asked: capitalise <beta> in notes.txt" in text.stdout
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
    assert (ws / "notes.txt").read_text() == NEW
    assert tool_messages(state) == [f"Wrote {len(NEW)} bytes to notes.txt"]


async def test_a_new_file_and_a_shell_command_are_previewed(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(
                ("call_1", "write_file", {"path": "fresh.txt", "content": "one\ntwo\n"}),
                ("call_2", "run_shell", {"command": "echo hi && time ls  -la"}),
            )
        return text_reply("done")

    model.behaviour = behave
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "make fresh.txt, list"))
        first, second = await wait_pending(settings.approvals_db, cid, 2)
        assert preview_of(first).new_file and preview_of(first).diff == "+one\n+two\n"
        assert preview_of(first).target_hash == "absent"
        assert preview_of(second).words == ["echo hi", "ls -la"]
        assert preview_of(second).rule is None  # no ask rule: asked because no allow rule covers it
        for row in (first, second):
            await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="deny"))
        await wait_status(client, cid, "idle")


async def test_a_file_changed_after_asking_is_not_overwritten_and_the_call_is_asked_again(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    cid, ws = new_workspace(settings)
    target = ws / "notes.txt"
    target.write_text(OLD)
    model.behaviour = reasoned_write("notes.txt", NEW, "Capitalising beta.")
    async with build_worker(client, settings):
        histories.track(await start_conversation(client, settings, "capitalise beta", cid))
        [first] = await wait_pending(settings.approvals_db, cid, 1)
        target.write_text("someone else's edit\n")  # a person changes the file meanwhile
        await send_decision(client, settings, DecisionInput(request_id=first["request_id"], decision="allow"))

        again = await asked_again(settings, cid, first["request_id"])
        assert again["request_id"] == f"perm_{cid}_call_1-again2"
        assert target.read_text() == "someone else's edit\n", "the approved write ran over the change"
        stale = approval_row(settings.approvals_db, first["request_id"])
        assert (stale["decision"], stale["reasked_as"]) == ("stale", again["request_id"])
        assert stale["execution_state"] == "stale"
        fresh = preview_of(again)
        assert fresh.diff is not None and "-someone else's edit\n" in fresh.diff
        assert fresh.changed_since is not None and "changed after the call was asked" in fresh.changed_since
        [earlier] = why_of(again).earlier  # the card lists what became of the first request
        assert (earlier.request_id, earlier.resolution) == (first["request_id"], "stale")

        refused = await run_cli(settings, client, "approve", first["request_id"])
        assert refused.returncode == 3, refused.stderr
        await send_decision(client, settings, DecisionInput(request_id=again["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
        assert (await get_state(client, cid)).resolutions == {
            first["request_id"]: "stale",
            again["request_id"]: "allow",
        }
    assert target.read_text() == NEW
    [message] = tool_messages(state)
    assert "asked again" in message and message.endswith(f"Wrote {len(NEW)} bytes to notes.txt")
