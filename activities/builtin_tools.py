"""The built-in tools, confined to the workspace. Each returns the text the model will read.

Each implementation is checked at import against its spec in core.tool_specs (builtin_contract)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from activities.builtin_contract import check_builtin_tools
from activities.file_tools import list_dir, read_file, write_file
from activities.sandbox_run import run_sandboxed
from activities.tool_text import MAX_RESULT_CHARS, truncate
from activities.workspaces import Workspace
from core.tool_specs import TOOL_SPECS

__all__ = ["BUILTIN_TOOLS", "MAX_RESULT_CHARS", "KvStore", "Workspace", "truncate"]

SHELL_TIMEOUT_SECONDS = 300.0


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


async def run_shell(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    """Runs in the sandbox; raises SandboxUnavailable (the command never runs) when none starts."""
    argv = ["/bin/sh", "-c", args["command"]]
    done = await run_sandboxed(
        argv, ws.root, ws.sandbox, beat, SHELL_TIMEOUT_SECONDS, merge_stderr=True, ready=ws.ready
    )
    if done.returncode is None:
        return f"Error: the command ran longer than {SHELL_TIMEOUT_SECONDS:g} seconds and was killed"
    return truncate(f"exit code {done.returncode}\n{done.stdout.decode(errors='replace')}")


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

check_builtin_tools(TOOL_SPECS, BUILTIN_TOOLS)  # at import: a spec without its implementation fails here
