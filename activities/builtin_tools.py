"""The built-in tools, confined to the workspace. Each returns the text the model will read."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from activities.heartbeat import heartbeating
from activities.sandbox import SandboxPolicy, sandboxed_launch
from workflows.tool_specs import InvalidToolCall

MAX_RESULT_CHARS = 16_000
SHELL_TIMEOUT_SECONDS = 300.0


def truncate(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """Keep one huge output from pushing a payload past Temporal's limits."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated: {len(text) - limit} more characters not shown ...]"


class Workspace:
    """The one directory the tools may touch; processes started in it run under `sandbox`."""

    def __init__(self, root: Path, sandbox: SandboxPolicy | None = None) -> None:
        self.root = root
        self.sandbox = sandbox or SandboxPolicy()

    def resolve(self, relative: str) -> Path:
        """Resolve symlinks too: a link inside the workspace must not lead out of it."""
        root = self.root.resolve()
        target = (root / relative).resolve()
        if target != root and not target.is_relative_to(root):
            raise InvalidToolCall(f"path {relative!r} resolves outside the workspace")
        return target


class KvStore:
    """The conversation's key/value state as a tool sees it: JSON values only."""

    def __init__(self, initial: dict[str, Any]) -> None:
        self.values = dict(initial)
        self.changed = False

    def set(self, key: str, value: Any) -> None:
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"kv value for {key!r} is not JSON ({type(value).__name__}): {err}") from None
        self.values[key] = value
        self.changed = True


Heartbeat = Callable[[], None]


async def list_dir(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    target = ws.resolve(args["path"])
    if not target.is_dir():
        return f"Error: {args['path']} is not a directory"
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir())
    return "\n".join(entries) if entries else "(empty directory)"


async def read_file(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    target = ws.resolve(args["path"])
    if not target.is_file():
        return f"Error: {args['path']} does not exist or is not a file"
    return truncate(target.read_text(errors="replace"))


async def write_file(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    target = ws.resolve(args["path"])
    target.parent.mkdir(parents=True, exist_ok=True)
    data = args["content"].encode()
    target.write_bytes(data)
    return f"Wrote {len(data)} bytes to {args['path']}"


async def run_shell(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    """Runs in the sandbox; raises SandboxUnavailable (the command never runs) when none starts."""
    ws.root.mkdir(parents=True, exist_ok=True)
    launch = await asyncio.to_thread(sandboxed_launch, ["/bin/sh", "-c", args["command"]], ws.root, ws.sandbox)
    proc = await asyncio.create_subprocess_exec(
        *launch.argv,
        cwd=launch.cwd,
        env=launch.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await heartbeating(asyncio.wait_for(proc.communicate(), SHELL_TIMEOUT_SECONDS), beat)
    except TimeoutError:
        return f"Error: the command ran longer than {SHELL_TIMEOUT_SECONDS:g} seconds and was killed"
    finally:
        # Timed out or canceled: end the command's whole process group, not just its shell.
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    text = output.decode(errors="replace")
    return truncate(f"exit code {proc.returncode}\n{text}")


async def kv_set(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    kv.set(args["key"], args["value"])
    return f"Remembered {args['key']}"


async def kv_get(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    if args["key"] not in kv.values:
        return f"Nothing is remembered under {args['key']!r}"
    return json.dumps(kv.values[args["key"]])


ToolFunction = Callable[[Workspace, KvStore, dict[str, Any], Heartbeat], Awaitable[str]]

BUILTIN_TOOLS: dict[str, ToolFunction] = {
    "list_dir": list_dir,
    "read_file": read_file,
    "write_file": write_file,
    "run_shell": run_shell,
    "kv_set": kv_set,
    "kv_get": kv_get,
}
