"""One workspace per conversation: what one conversation's tools write, another's cannot see;
a subagent (and its own subagent) works in the workspace of the conversation it serves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.workspaces import workspace_for
from config.settings import Settings
from core.contract import WORKFLOW_TYPE
from core.conversation_model import ConversationInput
from core.policy_rules import PolicyRules
from demo_model.server import text_reply, tool_reply
from doors.control import new_conversation_id, send_message, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, tool_messages, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary, first_user_text
from worker import build_worker
from workflows.delegation import child_conversation_id

PLANT, PEEK = "plant a note", "look for the note"
CHILD_TASK, GRANDCHILD_TASK = "ask your own helper to read notes.txt", "read notes.txt"


def all_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


def with_policy(settings: Settings, tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return replace(settings, policy_file=str(path))


async def test_two_conversations_cannot_see_each_others_files(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = with_policy(settings, tmp_path, 'allow = ["write_file", "read_file", "list_dir", "run_shell"]\n')
    planted: dict[str, str] = {}
    plant = calls_then_summary(("w1", "write_file", {"path": "secret.txt", "content": "only for the first"}))

    def peek(messages: list[dict[str, Any]]) -> dict[str, Any]:
        other = planted["workspace"]
        shell = f"cat secret.txt; cat {other}/secret.txt; ls -a ..; ls -a {other}"
        calls = [("r1", "read_file", {"path": "secret.txt"}), ("l1", "list_dir", {"path": "."})]
        step = len(all_results(messages))
        if step < len(calls):
            return tool_reply(calls[step])
        if step == len(calls):
            return tool_reply(("s1", "run_shell", {"command": shell}))
        return text_reply("done")

    model.behaviour = lambda messages: (plant if first_user_text(messages) == PLANT else peek)(messages)
    async with build_worker(client, settings):
        first = histories.track(await start_conversation(client, settings, PLANT))
        await wait_status(client, first, "idle", tool_results=1)
        planted["workspace"] = str(workspace_of(settings, first).resolve())
        second = histories.track(await start_conversation(client, settings, PEEK))
        state = await wait_status(client, second, "idle", tool_results=3)

    assert (workspace_of(settings, first) / "secret.txt").read_text() == "only for the first"
    assert not (settings.workspace_dir / "secret.txt").exists(), "nothing lands in the shared directory"
    read, listed, shell = tool_messages(state)
    assert read == "Error: secret.txt does not exist or is not a file"
    assert listed == "(empty directory)"
    assert "only for the first" not in shell and "secret.txt\n" not in shell, shell
    assert first not in shell.replace(planted["workspace"], ""), "the other conversation's directory is not there"


async def test_subagents_work_in_the_workspace_of_the_conversation_they_serve(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    settings = with_policy(settings, tmp_path, 'allow = ["write_file", "read_file", "delegate"]\n')
    grandchild = calls_then_summary(("r1", "read_file", {"path": "notes.txt"}))
    child = calls_then_summary(("d2", "delegate", {"task": GRANDCHILD_TASK}))

    def parent(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = all_results(messages)
        if not done:
            return tool_reply(("w1", "write_file", {"path": "notes.txt", "content": "shared by the tree"}))
        if len(done) == 1:
            return tool_reply(("d1", "delegate", {"task": CHILD_TASK}))
        return text_reply("the helpers said: " + str(done[-1]["content"]))

    scripts = {GRANDCHILD_TASK: grandchild, CHILD_TASK: child}
    model.behaviour = lambda messages: scripts.get(first_user_text(messages), parent)(messages)
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write notes, then delegate"))
        kid = histories.track(child_conversation_id(cid, "d1"))
        grandkid = histories.track(child_conversation_id(kid, "d2"))
        state = await wait_status(client, cid, "idle", tool_results=2, timeout=60)

    assert "shared by the tree" in tool_messages(state)[-1], tool_messages(state)
    assert (workspace_of(settings, cid) / "notes.txt").read_text() == "shared by the tree"
    made = sorted(p.name for p in (settings.workspace_dir / "conversations").iterdir())
    assert made == [workspace_of(settings, cid).name], "no workspace of their own for the subagents"
    assert grandkid != kid != cid


async def test_a_conversation_that_kept_the_shared_directory_keeps_it_across_continue_as_new(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    """A conversation whose input says `shared_workspace` (as one started before workspaces were
    per conversation is carried on) uses the shared directory in every run, never its own."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "user":
            name = str(messages[-1]["content"]).replace(" ", "_")
            return tool_reply((f"w_{name}", "write_file", {"path": f"{name}.txt", "content": name}))
        return text_reply("written")

    model.behaviour = behave
    shared = workspace_for(settings.workspace_dir, None)  # WORKSPACE_DIR/shared
    cid = histories.track(new_conversation_id())
    start = ConversationInput(
        conversation_id=cid,
        policy=PolicyRules(allow=["write_file"]),
        inbox=["turn 1"],
        continue_as_new_after_events=10,
        shared_workspace=True,
    )
    async with build_worker(client, settings):
        await client.start_workflow(WORKFLOW_TYPE, start, id=cid, task_queue=settings.task_queue)
        for turn in range(2, 4):
            await wait_status(client, cid, "idle", tool_results=1)
            await send_message(client, cid, f"turn {turn}")
        await eventually(lambda: _exists(shared / "turn_3.txt"))
        runs = [run async for run in client.list_workflows(f"WorkflowId = '{cid}'")]

    assert len(runs) > 1, "it continued as new"
    assert sorted(p.name for p in shared.glob("*.txt")) == ["turn_1.txt", "turn_2.txt", "turn_3.txt"]
    assert not list(settings.workspace_dir.glob("*.txt")), "nothing runs in WORKSPACE_DIR itself"
    assert not (settings.workspace_dir / "conversations").exists()


async def _exists(path: Path) -> bool:
    return path.exists()
