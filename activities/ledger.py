"""The execution ledger: at most once for tools with side effects, across workers on any host.

Temporal retries an activity whose worker died mid-attempt. For `run_shell` or `write_file` that
could run a command twice. Each request id moves through `claimed` (an attempt owns it, the tool
has not started) -> `started` (written durably just before the tool runs) -> `finished` (with
its result). A later attempt that finds it `claimed` runs it (nothing ran yet); one that finds it
`started` does not run it again and reports the outcome as unknown; one that finds it `finished`
returns the recorded result. The worker's tool activities take the first two steps in one
transaction, at once (`begin_at_once`) or while the tool prepares its launch (`begin`), and the
tool starts only once it says `run` (Workspace.ready). Every step is a conditional statement, so
concurrent attempts on different hosts agree on one owner.

A database server that restarts or drops off the network, or a full disk, under a running tool
must neither run it twice nor lose it: `begin` and `finish` try again within the attempt while the
ledger refuses them (activities/store_waits.py, heartbeating). A lost connection leaves a
statement's fate unknown, so `begin` marks the row it writes with its own timestamp and, on a
later try, takes the row it finds with its attempt and that mark as its own: the tool then runs,
once.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from activities.store_waits import when_stored
from core.tool_run_model import ToolResult
from storage.backend import Backend, Tx, open_backend, run_autocommit, run_short
from storage.writes import now_iso


@dataclass(frozen=True)
class Claim:
    verdict: Literal["run", "finished", "unknown"]
    result: ToolResult | None = None


class Ledger:
    def __init__(self, location: str | Path) -> None:
        self._backend: Backend = open_backend(location, "ledger")

    async def claim(self, request_id: str, tool_name: str, attempt: int) -> Claim:
        """Decide whether this attempt may run the tool (it must still call `start` right before)."""

        async def operation(tx: Tx) -> Claim:
            if await tx.execute(
                "INSERT INTO tool_executions (request_id, tool_name, state, attempt, started_at)"
                " VALUES (?, ?, 'claimed', ?, ?) ON CONFLICT (request_id) DO NOTHING",
                (request_id, tool_name, attempt, now_iso()),
            ):
                return Claim("run")
            if await tx.execute(
                "UPDATE tool_executions SET attempt = ? WHERE request_id = ? AND state = 'claimed'",
                (attempt, request_id),
            ):
                return Claim("run")  # an earlier attempt claimed it but never started the tool
            return await _settled(tx, request_id, attempt)

        return await self._backend.run(operation)

    async def begin(self, request_id: str, tool_name: str, attempt: int) -> Claim:
        """Claim and start in one step, for a caller that starts the tool right after:
        `run` means this attempt now owns the request and the ledger counts the tool as started."""
        mark = now_iso()  # this call's own: a try whose answer a lost connection took is known by it
        return await when_stored(
            lambda: self._begin(request_id, tool_name, attempt, mark),
            f"not running {request_id} until the ledger records it",
        )

    async def _begin(self, request_id: str, tool_name: str, attempt: int, mark: str) -> Claim:
        # The first attempt's one insert, atomic by itself, commits alone; a later attempt finds the
        # row and settles it in a transaction.
        if await run_autocommit(self._backend, _first_start(request_id, tool_name, attempt, mark)):
            return Claim("run")

        async def operation(tx: Tx) -> Claim:
            if await tx.execute(
                "UPDATE tool_executions SET state = 'started', attempt = ?, started_at = ?"
                " WHERE request_id = ? AND state = 'claimed'",
                (attempt, mark, request_id),
            ):
                return Claim("run")  # claimed by an attempt that never started the tool
            if await tx.fetchone(
                "SELECT 1 AS ours FROM tool_executions WHERE request_id = ? AND state = 'started'"
                " AND attempt = ? AND started_at = ?",
                (request_id, attempt, mark),
            ):
                return Claim("run")  # this call's earlier try started it, and its answer was lost
            return await _settled(tx, request_id, attempt)

        return await self._backend.run(operation)

    def begin_at_once(self, request_id: str, tool_name: str, attempt: int) -> Claim | None:
        """`begin` for the first attempt, on the caller's thread, when the store takes the insert
        without waiting (an embedded file no other writer holds: about 0.1 ms). The tool's launch
        then waits for no worker thread. None: the request is not this simple case (a later
        attempt, a busy file, a server) or nothing was written: call `begin`."""
        done = self._backend.try_now(_first_start(request_id, tool_name, attempt, now_iso()))
        return Claim("run") if done is not None and done.value else None

    async def start(self, request_id: str, attempt: int) -> bool:
        """The tool is about to run: True only for the attempt that still owns the claim."""
        return bool(
            await self._backend.run(
                lambda tx: tx.execute(
                    "UPDATE tool_executions SET state = 'started', started_at = ?"
                    " WHERE request_id = ? AND state = 'claimed' AND attempt = ?",
                    (now_iso(), request_id, attempt),
                )
            )
        )

    async def finish(self, request_id: str, result: ToolResult) -> None:
        """Record the result of a tool that ran; repeated while the ledger refuses it, since a retry
        that found no result would report the run as an unknown outcome."""
        finished = (now_iso(), result.model_dump_json(), request_id)
        await when_stored(
            lambda: run_short(
                self._backend,
                lambda tx: tx.execute(
                    "UPDATE tool_executions SET state = 'finished', finished_at = ?, result_json = ?"
                    " WHERE request_id = ?",
                    finished,
                ),
            ),
            f"{request_id} ran: its result is kept once the ledger records it",
        )

    async def release(self, request_id: str) -> None:
        """Forget an attempt known not to have taken effect (a refused connection), so the next one runs."""
        await self._backend.run(
            lambda tx: tx.execute(
                "DELETE FROM tool_executions WHERE request_id = ? AND state IN ('claimed', 'started', 'unknown')",
                (request_id,),
            )
        )

    async def state_of(self, request_id: str) -> str | None:
        row = await self._backend.run(
            lambda tx: tx.fetchone("SELECT state FROM tool_executions WHERE request_id = ?", (request_id,)),
            write=False,
        )
        return None if row is None else str(row["state"])

    async def finished_under(self, prefix: str, tool_name: str) -> dict[str, ToolResult]:
        """Every finished key that starts with `prefix` (a request's notifications), with its result."""
        found = await self._backend.run(
            lambda tx: tx.fetchall(
                "SELECT request_id, result_json FROM tool_executions"
                " WHERE tool_name = ? AND state = 'finished' AND substr(request_id, 1, ?) = ?",
                (tool_name, len(prefix), prefix),
            ),
            write=False,
        )
        return {str(row["request_id"]): ToolResult.model_validate_json(row["result_json"]) for row in found}

    async def close(self) -> None:
        await self._backend.close()


def _first_start(request_id: str, tool_name: str, attempt: int, mark: str) -> Callable[[Tx], Awaitable[bool]]:
    """The first attempt's claim and start, one insert: True when it added the row."""

    async def insert(tx: Tx) -> bool:
        return bool(
            await tx.execute(
                "INSERT INTO tool_executions (request_id, tool_name, state, attempt, started_at)"
                " VALUES (?, ?, 'started', ?, ?) ON CONFLICT (request_id) DO NOTHING",
                (request_id, tool_name, attempt, mark),
            )
        )

    return insert


async def _settled(tx: Tx, request_id: str, attempt: int) -> Claim:
    """An attempt finds the tool started (its outcome unknown) or finished (its result recorded)."""
    if await tx.execute(
        "UPDATE tool_executions SET state = 'unknown', attempt = ?"
        " WHERE request_id = ? AND state IN ('started', 'unknown')",
        (attempt, request_id),
    ):
        return Claim("unknown")
    row = await tx.fetchone("SELECT result_json FROM tool_executions WHERE request_id = ?", (request_id,))
    assert row is not None and row["result_json"] is not None, "a finished row holds its result"
    return Claim("finished", ToolResult.model_validate_json(row["result_json"]))


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
