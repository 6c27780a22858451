"""The AG-UI client the tests drive /ag-ui with: @ag-ui/client from npm, run by node.

tests/agui_client holds its package.json, package-lock.json and the driver script (run.mjs);
`npm ci` installs it into a temporary copy (node_modules is never committed), from the npm cache
under build/ that reruns install from. Every event the client applied is checked against the
ag-ui-protocol package's pydantic models, so both sides of the protocol are someone else's.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter

from tests.support.processes import REPO_ROOT

CLIENT_SOURCE = REPO_ROOT / "tests" / "agui_client"
NPM_CACHE = REPO_ROOT / "build" / "npm-cache"
QUIET = ("--no-audit", "--no-fund", "--loglevel=error")
EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def install_client(into: Path) -> Path:
    """`npm ci` of the pinned client into a copy of tests/agui_client; the driver script's path."""
    npm = shutil.which("npm")
    assert npm is not None, "npm is needed for this test (apt-get install npm)"
    for name in ("package.json", "package-lock.json", "run.mjs"):
        shutil.copy(CLIENT_SOURCE / name, into / name)
    subprocess.run(
        [npm, "ci", "--prefix", str(into), "--cache", str(NPM_CACHE), "--prefer-offline", *QUIET],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return into / "run.mjs"


@dataclass
class ClientRun:
    """What one run of the client printed: the events (validated), and how it ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    ending: dict[str, Any] = field(default_factory=dict)
    killed: bool = False

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    @property
    def finished(self) -> dict[str, Any]:
        (finished,) = self.of("RUN_FINISHED")
        return finished

    @property
    def interrupts(self) -> list[dict[str, Any]]:
        outcome = self.finished["outcome"]
        assert outcome["type"] == "interrupt", outcome
        return list(outcome["interrupts"])

    @property
    def error(self) -> dict[str, Any]:
        (error,) = self.of("RUN_ERROR")
        return error

    def text(self) -> str:
        return "".join(e["delta"] for e in self.of("TEXT_MESSAGE_CONTENT"))


async def run_client(script: Path, url: str, token: str | None, thread_id: str, **spec: Any) -> ClientRun:
    """One run in its own node process (an asyncio subprocess: the test's worker shares this loop)."""
    argument = json.dumps({"url": f"{url}/ag-ui", "token": token, "threadId": thread_id, **spec})
    proc = await asyncio.create_subprocess_exec(
        "node", str(script), argument, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    run = ClientRun(killed=proc.returncode == -9)
    for line in out.decode().splitlines():
        item = json.loads(line)
        if "type" in item:
            EVENTS.validate_python(item)  # the protocol package's own models say it is an AG-UI event
            run.events.append(item)
        else:
            run.ending = item
    assert run.killed or run.ending, f"the client printed no ending; stderr: {err.decode()[-2000:]}"
    return run


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def allow(interrupt_id: str) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": {"decision": "allow"}}


def deny(interrupt_id: str, reason: str) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": {"decision": "deny", "reason": reason}}
