"""The execution ledger: at most once for tools with side effects.

Temporal retries an activity whose worker died mid-attempt. For `run_shell` or `write_file` that
could run a command twice. Before such a tool starts, its request id is written here durably; a
later attempt that finds it started-but-unfinished does not run the tool again and reports the
outcome as unknown, and one that finds it finished returns the recorded result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from projection.db import Writer
from projection.writes import now_iso
from workflows.models import ToolResult

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_executions (
    request_id TEXT PRIMARY KEY,
    tool_name TEXT NOT NULL,
    state TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    result_json TEXT
);
"""


@dataclass(frozen=True)
class Claim:
    verdict: Literal["run", "finished", "unknown"]
    result: ToolResult | None = None


class Ledger:
    def __init__(self, path: Path) -> None:
        self._writer = Writer(path, LEDGER_SCHEMA)

    def claim(self, request_id: str, tool_name: str, attempt: int) -> Claim:
        """Atomically decide whether this attempt may run the tool."""
        with self._writer.transaction() as conn:
            row = conn.execute(
                "SELECT state, result_json FROM tool_executions WHERE request_id = ?", (request_id,)
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO tool_executions (request_id, tool_name, state, attempt, started_at)"
                    " VALUES (?, ?, 'started', ?, ?)",
                    (request_id, tool_name, attempt, now_iso()),
                )
                return Claim("run")
            if row["state"] == "finished":
                return Claim("finished", ToolResult.model_validate_json(row["result_json"]))
            conn.execute(
                "UPDATE tool_executions SET state = 'unknown', attempt = ? WHERE request_id = ?",
                (attempt, request_id),
            )
            return Claim("unknown")

    def finish(self, request_id: str, result: ToolResult) -> None:
        with self._writer.transaction() as conn:
            conn.execute(
                "UPDATE tool_executions SET state = 'finished', finished_at = ?, result_json = ? WHERE request_id = ?",
                (now_iso(), result.model_dump_json(), request_id),
            )

    def state_of(self, request_id: str) -> str | None:
        with self._writer.transaction() as conn:
            row = conn.execute("SELECT state FROM tool_executions WHERE request_id = ?", (request_id,)).fetchone()
        return None if row is None else str(row["state"])


def unknown_outcome_result(tool_name: str, arguments: dict) -> ToolResult:
    return ToolResult(
        content=(
            f"Outcome unknown: an earlier attempt of this {tool_name} call started but its worker stopped "
            f"before it reported back. It was NOT run again, to avoid running it twice. Arguments: "
            f"{json.dumps(arguments, sort_keys=True)}. Check the effect before retrying."
        ),
        is_error=True,
        outcome_unknown=True,
    )
