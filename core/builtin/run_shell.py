"""run_shell: a shell command run in the sandbox, the workspace its working directory.

Rules match each simple command of it (core/shell_words.py); its preview names those commands and
the rule that asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace

SHELL_TIMEOUT_SECONDS = 300.0


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    """Raises SandboxUnavailable (the command never runs) when no sandbox starts."""
    from activities.sandbox_run import run_sandboxed
    from activities.tool_text import truncate

    argv = ["/bin/sh", "-c", args["command"]]
    done = await run_sandboxed(
        argv, ws.root, ws.sandbox, beat, SHELL_TIMEOUT_SECONDS, merge_stderr=True, ready=ws.ready
    )
    if done.returncode is None:
        return f"Error: the command ran longer than {SHELL_TIMEOUT_SECONDS:g} seconds and was killed"
    return truncate(f"exit code {done.returncode}\n{done.stdout.decode(errors='replace')}")


TOOL = BuiltinTool(
    name="run_shell",
    description="Run a shell command with the workspace as its working directory.",
    permission_type="execute",
    arguments={"command": {"type": "string"}},
    main="command",
    effect="shell",
    preview=True,
    run=run,
)
