"""Support for the tests of arguments only a person supplies (`supplied_by_approver`): the vault probe
(an MCP server that records what it received), a scripted model that asks for it, the UI as its own
process, and the search for a secret everywhere it must not be."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from demo_model.server import text_reply, tool_reply
from tests.support.processes import REPO_ROOT, _kill, free_port, process_env, wait_for_port
from tests.support.scripts import Behaviour, last_role, tool_results

PROBE = REPO_ROOT / "tests" / "support" / "secret_probe_mcp_server.py"
LOGIN = "mcp__vault__login"


# A recording run fixes the canary, so the committed history can be searched for it
# (tests/durability/test_supplied_history.py); every other run draws a new one.
CANARY_FOR_RECORDING = "SUPPLIED_TEST_CANARY"


def new_canary() -> str:
    return os.environ.get(CANARY_FOR_RECORDING) or f"canary-{secrets.token_hex(16)}"


def vault_server(tmp_path: Path, supplied: bool = True) -> dict[str, Any]:
    """The probe's [mcp_servers.vault] table: outside every workspace, readable in the sandbox."""
    installed = tmp_path / "vault-install"
    installed.mkdir(exist_ok=True)
    shutil.copy(PROBE, installed / PROBE.name)
    server: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(installed / PROBE.name)],
        "readonly": [str(installed)],
    }
    if supplied:
        server["supplied_by_approver"] = {"login": ["password"]}
    return server


def fills_then_asks(user: str, model_guess: str) -> Behaviour:
    """A model that first fills the password itself (refused), then calls without it, then reports."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(("c1", LOGIN, {"user": user, "password": model_guess}))
        results = tool_results(messages)
        if results and results[-1]["tool_call_id"] == "c1":
            return tool_reply(("c2", LOGIN, {"user": user}))
        return text_reply("done: " + " | ".join(str(m["content"]) for m in results))

    return behave


def received(workspace_dir: Path) -> dict[str, str]:
    """What the probe recorded, in whichever workspace the conversation had (exactly one)."""
    found = list(workspace_dir.rglob("received.json"))
    assert len(found) == 1, found
    seen: dict[str, str] = json.loads(found[0].read_text())
    return seen


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class UiProcess:
    """`python starter.py ui` on a free port, its output in its own log file."""

    url: str
    log_file: Path


@contextmanager
def ui_process(settings: Settings, client: Client, log_file: Path) -> Iterator[UiProcess]:
    port = free_port()
    env = process_env(settings, client.service_client.config.target_host, UI_PORT=str(port))
    log = log_file.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "starter.py", "ui"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port)
        yield UiProcess(f"http://127.0.0.1:{port}", log_file)
    finally:
        _kill(proc, signal.SIGTERM)
        log.close()


async def history_bytes(client: Client, conversation_id: str) -> bytes:
    """Every event of every run of the conversation, as the server keeps them (payloads raw)."""
    out = b""
    async for execution in client.list_workflows(f"WorkflowId = '{conversation_id}'"):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        history = await handle.fetch_history()
        out += b"".join(event.SerializeToString() for event in history.events)
        out += json.dumps(history.to_json_dict()).encode()
    return out


def files_under(*roots: Path) -> Iterator[Path]:
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (path for path in root.rglob("*") if path.is_file())


def where_found(secret: str, places: dict[str, bytes]) -> list[str]:
    """The places whose bytes hold the secret (as text, or base64-encoded as some encoders write it)."""
    import base64

    forms = [secret.encode(), base64.b64encode(secret.encode())[:-4], base64.urlsafe_b64encode(secret.encode())[:-4]]
    return sorted(name for name, data in places.items() if any(form in data for form in forms))


def stored_places(settings: Settings, *logs: Path) -> dict[str, bytes]:
    """Every file of the read model and ledger (WAL included), the payload store and the logs."""
    data = settings.data_dir
    payloads = Path(settings.payload_store_location)
    files = [*data.glob("*.db*"), *files_under(payloads), *logs]
    return {str(path): path.read_bytes() for path in files if path.is_file()}
