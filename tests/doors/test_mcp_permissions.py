"""Claude Code's permission prompts as approval requests: `starter.py mcp-permissions`, started as
Claude Code starts it (a subprocess speaking MCP over stdio) and called exactly as Claude Code calls
`approval_prompt`. Each prompt waits as a pending request, any door decides it (approve, deny with
a reason, edit), the same tool use id finds the same request, a deny rule answers at once, a long
wait keeps a progress-resetting client alive, and Temporal being down is a denial, not a hang."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from temporalio.client import Client

from config.settings import Settings
from doors.ask import request_id_for
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, pending_rows, rows, wait_pending
from tests.support.processes import REPO_ROOT, free_port, process_env, run_cli
from worker import build_worker

AGENT = "claude-code"


@asynccontextmanager
async def permission_server(settings: Settings, address: str, **env: str) -> AsyncIterator[ClientSession]:
    """The server as `--mcp-config` names it: `python starter.py mcp-permissions`, over stdio."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["starter.py", "mcp-permissions"],
        env=process_env(settings, address, **env),
        cwd=REPO_ROOT,
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def prompt(session: ClientSession, tool_name: str, tool_input: dict[str, Any], tool_use_id: str) -> Any:
    """One permission prompt, in Claude Code's shape; its answer, parsed from the one text content."""
    arguments = {"tool_name": tool_name, "input": tool_input, "tool_use_id": tool_use_id}
    result = await session.call_tool("approval_prompt", arguments)
    assert not result.is_error, result
    [content] = result.content
    assert content.type == "text"
    return json.loads(content.text)


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


async def test_each_door_decision_reaches_the_prompt_and_a_tool_use_id_asks_once(
    client: Client, settings: Settings, histories: HistoryRecorder
) -> None:
    async with build_worker(client, settings), permission_server(settings, address_of(client)) as mcp:
        approved = asyncio.create_task(prompt(mcp, "Bash", {"command": "ls"}, "toolu_approve"))
        denied = asyncio.create_task(prompt(mcp, "Bash", {"command": "make deploy"}, "toolu_deny"))
        edited = asyncio.create_task(prompt(mcp, "Bash", {"command": "ls -la /"}, "toolu_edit"))
        ids = {
            key: histories.track(request_id_for(AGENT, key)) for key in ("toolu_approve", "toolu_deny", "toolu_edit")
        }
        for request_id in ids.values():
            [row] = await wait_pending(settings.approvals_db, request_id, 1)
            assert row["tool_name"] == "Bash"
        details = json.loads(approval_row(settings.approvals_db, ids["toolu_approve"])["details_json"])
        assert details["arguments"] == {"command": "ls"}
        assert not any(task.done() for task in (approved, denied, edited)), "each prompt waits for its person"

        listed = await run_cli(settings, client, "pending", "--json")
        [card] = [r for r in json.loads(listed.stdout) if r["request_id"] == ids["toolu_approve"]]
        assert card["tool"]["annotations"]["requester"]["agent"] == AGENT
        assert "Claude Code permission prompt" in card["tool"]["annotations"]["context"]

        done = await run_cli(settings, client, "approve", ids["toolu_approve"], "--as", "alice")
        assert done.returncode == 0, done.stderr
        assert await asyncio.wait_for(approved, 30) == {"behavior": "allow", "updatedInput": {"command": "ls"}}

        done = await run_cli(settings, client, "deny", ids["toolu_deny"], "--reason", "not on a Friday", "--as", "bob")
        assert done.returncode == 0, done.stderr
        answer = await asyncio.wait_for(denied, 30)
        assert answer["behavior"] == "deny" and "not on a Friday" in answer["message"] and "bob" in answer["message"]
        assert set(answer) == {"behavior", "message"}

        done = await run_cli(settings, client, "edit", ids["toolu_edit"], "--set", "command=pwd", "--as", "alice")
        assert done.returncode == 0, done.stderr
        assert await asyncio.wait_for(edited, 30) == {"behavior": "allow", "updatedInput": {"command": "pwd"}}

        # Claude Code asks again for the same tool use (a resumed session): the decision stands, at once.
        started = time.monotonic()
        again = await prompt(mcp, "Bash", {"command": "ls"}, "toolu_approve")
        assert again == {"behavior": "allow", "updatedInput": {"command": "ls"}}
        assert time.monotonic() - started < 10, "answered from the decided request, not asked again"
        again = await prompt(mcp, "Bash", {"command": "make deploy"}, "toolu_deny")
        assert again["behavior"] == "deny" and "not on a Friday" in again["message"]
        assert pending_rows(settings.approvals_db) == [], "no second request was opened"
        sql = "SELECT 1 FROM ui_pending_approvals WHERE request_id = ?"
        assert len(rows(settings.approvals_db, sql, ids["toolu_approve"])) == 1


async def test_a_deny_rule_answers_at_once(client: Client, settings: Settings, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('deny = ["Bash(*rm -rf*)"]\n')
    ruled = replace(settings, policy_file=str(policy))
    async with build_worker(client, ruled), permission_server(ruled, address_of(client)) as mcp:
        started = time.monotonic()
        answer = await asyncio.wait_for(prompt(mcp, "Bash", {"command": "rm -rf /tmp/x"}, "toolu_rm"), 30)
        assert answer["behavior"] == "deny" and "rules deny it" in answer["message"], answer
        assert time.monotonic() - started < 15
        assert pending_rows(ruled.approvals_db) == [], "a rule decided: no person was asked"
        result = await client.get_workflow_handle(request_id_for(AGENT, "toolu_rm")).result()
        assert result["door"] == "policy"


async def test_a_long_wait_keeps_a_client_whose_timeout_resets_on_progress(client: Client, settings: Settings) -> None:
    """Claude Code's MCP client (the TypeScript SDK) can reset its request timeout on each progress
    notification. The installed Python SDK's `read_timeout_seconds` does not (it is a plain budget),
    so the client here keeps its own idle timeout, pushed back on each notification: 2 s progress,
    a 5 s idle timeout and a 12 s wait prove what 10 s, 60 s and 90 s would."""
    idle, waited = 5.0, 12.0
    fast = {"APPROVALS_MCP_PROGRESS_SECONDS": "2"}
    async with build_worker(client, settings), permission_server(settings, address_of(client), **fast) as mcp:
        beats: list[float] = []

        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + idle

            async def alive(progress: float, total: float | None, message: str | None) -> None:
                beats.append(time.monotonic())
                scope.deadline = anyio.current_time() + idle

            async def decide_later() -> None:
                request_id = request_id_for(AGENT, "toolu_slow")
                await wait_pending(settings.approvals_db, request_id, 1)
                await asyncio.sleep(waited)
                done = await run_cli(settings, client, "approve", request_id, "--as", "alice")
                assert done.returncode == 0, done.stderr

            decider = asyncio.create_task(decide_later())
            arguments = {"tool_name": "Bash", "input": {"command": "sleep 1"}, "tool_use_id": "toolu_slow"}
            result = await mcp.call_tool("approval_prompt", arguments, progress_callback=alive)
        assert not scope.cancelled_caught, f"the idle timeout fired after {len(beats)} progress notifications"
        await decider
        [content] = result.content
        assert content.type == "text"
        assert json.loads(content.text) == {"behavior": "allow", "updatedInput": {"command": "sleep 1"}}
        assert len(beats) >= waited // 2 - 1, beats
        gaps = [later - earlier for earlier, later in itertools.pairwise(beats)]
        assert max(gaps) < idle, gaps


async def test_temporal_unreachable_or_a_nameless_tool_is_a_denial_not_a_hang(settings: Settings) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    async with permission_server(settings, nowhere) as mcp:
        answer = await asyncio.wait_for(prompt(mcp, "Bash", {"command": "ls"}, "toolu_down"), 40)
        nameless = await asyncio.wait_for(prompt(mcp, "", {}, "toolu_nameless"), 40)
    assert answer["behavior"] == "deny"
    assert answer["message"].startswith("the approvals service is not reachable: "), answer
    assert nameless["behavior"] == "deny" and "not a permission prompt" in nameless["message"], nameless
