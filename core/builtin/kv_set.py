"""kv_set: remember a JSON value for the rest of the conversation (kept in the workflow's state)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.builtin.tool import BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    kv.set(args["key"], args["value"])
    return f"Remembered {args['key']}"


TOOL = BuiltinTool(
    name="kv_set",
    description="Remember a JSON value under a key for the rest of the conversation.",
    permission_type="state",
    arguments={"key": {"type": "string"}, "value": {"description": "any JSON value"}},
    main="key",
    effect="state",
    run=run,
)
