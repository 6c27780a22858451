"""kv_get: recall a value remembered with kv_set."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.builtin.tool import BuiltinTool, Heartbeat

if TYPE_CHECKING:
    from activities.builtin_tools import KvStore
    from activities.workspaces import Workspace


async def run(ws: Workspace, kv: KvStore, args: dict[str, Any], beat: Heartbeat) -> str:
    if args["key"] not in kv.values:
        return f"Nothing is remembered under {args['key']!r}"
    return json.dumps(kv.values[args["key"]])


TOOL = BuiltinTool(
    name="kv_get",
    description="Recall a value remembered with kv_set.",
    permission_type="state",
    arguments={"key": {"type": "string"}},
    main="key",
    effect="state",
    run=run,
)
