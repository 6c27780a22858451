"""Secrets only a person supplies (`supplied_by_approver`), on a real stack: a worker process, the
scripted model, an MCP server in the tool sandbox that records what it received, the CLI and the UI
as processes. The model is never offered the password and may not fill it; the approver supplies it
(from stdin, or the card's field) and the tool gets exactly that value; and the value is nowhere
else: not in the workflow's history, the read model or ledger files (WAL included), the payload
store, the worker's or the UI's log, any request the model received, the audit or the CLI's output.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from config.settings import Settings
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import wait_pending, wait_status
from tests.support.mcp_support import with_config
from tests.support.processes import REPO_ROOT, WorkerProcess, process_env
from tests.support.scripts import ScriptedModel
from tests.support.supplied_support import (
    LOGIN,
    fills_then_asks,
    history_bytes,
    new_canary,
    received,
    sha256,
    stored_places,
    ui_process,
    vault_server,
    where_found,
)


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    """An allow rule covers the tool: a call that needs a person's value is asked all the same. The
    password is configured on the MCP server's table, or (`tools_table`) in the tool's own
    `[tools.NAME]` table."""
    own_table = getattr(request, "param", "server") == "tools_table"
    servers = {"vault": vault_server(tmp_path, supplied=not own_table)}
    configured = with_config(settings, tmp_path / "policy.toml", {"allow": [LOGIN]}, servers)
    if own_table:
        policy = Path(str(configured.policy_file))
        policy.write_text(policy.read_text() + f'[tools.{LOGIN}]\nsupplied_by_approver = ["password"]\n')
    return configured


@pytest.fixture
def worker(settings: Settings, client: Client, tmp_path: Path) -> Iterator[WorkerProcess]:
    env = process_env(settings, client.service_client.config.target_host)
    process = WorkerProcess(env, tmp_path / "worker.log").start().wait_ready()
    yield process
    process.stop()


async def cli(settings: Settings, client: Client, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`python starter.py ARGS` with `stdin` on its standard input."""
    env = process_env(settings, client.service_client.config.target_host)
    command = [sys.executable, "starter.py", *args]
    return await asyncio.to_thread(
        subprocess.run, command, cwd=REPO_ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=90
    )


# The model's own guess at the password, and the user it logs in as: values the model did give,
# which the same search finds where they belong (so it is known to read those places).
GUESS = "the-models-own-guess"
USER = "vault-user-7f3a"


async def asked(settings: Settings, client: Client, model: ScriptedModel, histories: HistoryRecorder) -> dict:
    """A conversation whose model filled the password (refused), then called without it: one request."""
    model.behaviour = fills_then_asks(USER, model_guess=GUESS)
    conversation_id = histories.track(await start_conversation(client, settings, "log in to the vault"))
    [row] = await wait_pending(settings.approvals_db, conversation_id, 1)
    return dict(row, conversation_id=conversation_id)


def model_saw(model: ScriptedModel) -> bytes:
    return json.dumps(model.requests).encode()


def assert_the_search_reads(places: dict[str, bytes], settings: Settings) -> None:
    """The values the model gave are found where they were kept: the places searched for the
    canary are read whole (the history's payloads, the read model's files, the model's requests)."""
    assert {"workflow history", "model requests"} <= set(where_found(GUESS, places))
    found_user = where_found(USER, places)
    assert {"workflow history", "model requests"} <= set(found_user)
    assert any(name.startswith(str(settings.data_dir)) and ".db" in name for name in found_user), found_user


async def test_the_cli_supplies_it_from_stdin_and_it_reaches_the_tool_alone(
    settings: Settings, client: Client, model: ScriptedModel, worker: WorkerProcess, histories: HistoryRecorder
) -> None:
    canary = new_canary()
    row = await asked(settings, client, model, histories)
    request_id, conversation_id = row["request_id"], row["conversation_id"]
    offered = model.requests[0]["tools"]
    login = next(tool["function"]["parameters"] for tool in offered if tool["function"]["name"] == LOGIN)
    assert "password" not in login["properties"] and "password" not in login.get("required", [])

    async def approve(*options: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return await cli(settings, client, "approve", request_id, "--as", "alice", *options, stdin=stdin)

    refused = [
        await approve(),
        await approve("--always", "--supply", "password=-", stdin=canary + "\n"),
        await approve("--grant", LOGIN, "--supply", "password=-", stdin=canary + "\n"),
        await approve("--supply", "password=on-the-command-line"),
        await approve("--supply", "password=-"),
    ]
    assert [done.returncode for done in refused] == [3, 3, 3, 2, 2]
    assert "needs password supplied by the approver" in refused[0].stderr
    assert "on every call: approve this call alone" in refused[1].stderr
    assert "on every call: approve this call alone" in refused[2].stderr
    assert "on-the-command-line" not in refused[3].stderr and "NAME=-" in refused[3].stderr
    assert "stdin ended before its value" in refused[4].stderr
    assert all(len([line for line in done.stderr.splitlines() if line.strip()]) == 1 for done in refused)

    approved = await approve("--supply", "password=-", stdin=canary + "\n")
    assert approved.returncode == 0, approved.stderr
    assert "supplied: password" in approved.stdout
    state = await wait_status(client, conversation_id, "idle", tool_results=2)

    seen = received(settings.workspace_dir)
    assert seen == {"user": USER, "password_sha256": sha256(canary)}, "the tool got exactly the value supplied"
    first, second = [m.content or "" for m in state.messages if m.role == "tool"]
    assert "which a person supplies when approving it" in first and GUESS not in first
    assert "password: supplied by alice" in second and f"logged in as {USER}" in second
    audit = await cli(settings, client, "audit", "--json")
    [request] = [entry for entry in json.loads(audit.stdout) if entry.get("request_id") == request_id]
    assert request["supplied"] == {"password": "alice"} and request["arguments"] == {"user": USER}
    table = await cli(settings, client, "audit")
    assert "supplied: password (by alice)" in table.stdout

    history = await history_bytes(client, conversation_id)
    assert b"sealed1:" in history, "the decision's sealed value is in the history this search reads"
    places = stored_places(settings, worker.log_file) | {
        "workflow history": history,
        "model requests": model_saw(model),
        "cli output": "".join(d.stdout + d.stderr for d in [*refused, approved, audit, table]).encode(),
    }
    assert where_found(canary, places) == []
    assert_the_search_reads(places, settings)


@pytest.mark.parametrize("settings", ["tools_table"], indirect=True)
async def test_the_ui_supplies_it_from_the_card_and_refuses_an_approval_without_it(
    settings: Settings, client: Client, model: ScriptedModel, worker: WorkerProcess, histories: HistoryRecorder,
    tmp_path: Path,
) -> None:  # fmt: skip
    canary = new_canary()
    row = await asked(settings, client, model, histories)
    request_id, conversation_id = row["request_id"], row["conversation_id"]

    with ui_process(settings, client, tmp_path / "ui.log") as ui:
        async with httpx.AsyncClient(base_url=ui.url, timeout=30) as http:
            card = (await http.get(f"/api/approvals/{request_id}")).json()
            assert card["supplied_by_approver"] == ["password"] and card["grant_offer"] is None
            decide = f"/api/approvals/{request_id}/decision"
            without = await http.post(decide, json={"decision": "allow", "name": "carol"})
            always = await http.post(
                decide, json={"decision": "always_allow", "name": "carol", "supplied": {"password": canary}}
            )
            empty = await http.post(decide, json={"decision": "allow", "name": "carol", "supplied": {"password": ""}})
            approved = await http.post(
                decide, json={"decision": "allow", "name": "carol", "supplied": {"password": canary}}
            )
            state = await wait_status(client, conversation_id, "idle", tool_results=2)
            audit = await http.get("/api/audit")
    assert [r.status_code for r in (without, always, empty)] == [422, 422, 422]
    assert {r.json()["error"]["type"] for r in (without, always, empty)} == {"SupplyRefused"}
    assert "needs password supplied by the approver" in without.json()["error"]["message"]
    assert approved.status_code == 200, approved.text
    assert approved.json()["decision"]["supplied"] == ["password"]

    assert received(settings.workspace_dir) == {"user": USER, "password_sha256": sha256(canary)}
    assert "password: supplied by carol" in (state.messages[-2].content or "")
    [request] = [entry for entry in audit.json() if entry.get("request_id") == request_id]
    assert request["supplied"] == {"password": "carol"}

    places = stored_places(settings, worker.log_file, ui.log_file) | {
        "workflow history": await history_bytes(client, conversation_id),
        "model requests": model_saw(model),
        "ui answers": (approved.text + audit.text + always.text).encode(),
    }
    assert where_found(canary, places) == []
    assert_the_search_reads(places, settings)
