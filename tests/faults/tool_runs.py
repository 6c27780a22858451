"""Conversations whose one approved tool leaves a line per run in its workspace, and the counts a fault
scenario reports from them: lost (an approval or a result that vanished, a tool that never ran),
doubled (a tool that ran twice) and stuck (a conversation not idle by the deadline, in Temporal or
in the read model people look at)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput
from doors.control import get_state, send_decision, start_conversation
from tests.support.failure_support import lines
from tests.support.helpers import pending_rows, rows, workspace_of

RAN = "ran.log"


def counted(command: str) -> str:
    """A shell command that leaves one line in ran.log each time it runs to its end."""
    return f"{command}; echo ran >> {RAN}"


@dataclass
class ToolRuns:
    client: Client
    settings: Settings
    ids: list[str] = field(default_factory=list)
    tool_messages: dict[str, list[str]] = field(default_factory=dict)

    @staticmethod
    def request(conversation_id: str) -> str:
        return f"perm_{conversation_id}_call_1"

    async def start(self, count: int, command: str, deadline: float) -> list[str]:
        """`count` conversations, each asking to run `command`, waiting for a person."""
        message = f"run {command}"
        started = [start_conversation(self.client, self.settings, message) for _ in range(count)]
        self.ids = list(await asyncio.gather(*started))
        await until(lambda: len(pending_rows(self.settings.approvals_db)) >= count, deadline)
        return self.ids

    def runs(self, conversation_id: str, name: str = RAN) -> int:
        return len(lines(workspace_of(self.settings, conversation_id) / name))

    async def approve(self, *conversation_ids: str) -> None:
        """A person's approvals through the CLI's door, in this process (no process to start)."""

        async def one(cid: str) -> None:
            decision = DecisionInput(
                request_id=self.request(cid), decision="allow", decided_by="fault-suite", door="cli"
            )
            await send_decision(self.client, self.settings, decision)

        await asyncio.gather(*(one(cid) for cid in conversation_ids))

    def unresolved(self, conversation_id: str) -> bool:
        sql = "SELECT resolved_at FROM ui_pending_approvals WHERE request_id = ?"
        found = rows(self.settings.approvals_db, sql, self.request(conversation_id))
        return not found or found[0]["resolved_at"] is None

    async def stuck(self, deadline: float) -> int:
        """How many are not idle by the deadline, in Temporal or in the read model."""
        end = time.monotonic() + deadline
        waiting = list(self.ids)
        while waiting and time.monotonic() < end:
            waiting = [cid for cid in waiting if not await self._idle(cid)]
            if waiting:
                await asyncio.sleep(0.2)
        return len(waiting)

    def projected_idle(self, conversation_id: str) -> bool:
        """The read model shows the turn ended (its tool's result reached the model, which answered)."""
        sql = "SELECT turn_status FROM ui_conversations WHERE conversation_id = ?"
        projected = rows(self.settings.approvals_db, sql, conversation_id)
        return bool(projected) and projected[0]["turn_status"] == "idle"

    async def _idle(self, conversation_id: str) -> bool:
        if not self.projected_idle(conversation_id):
            return False
        try:
            return (await get_state(self.client, conversation_id)).turn_status == "idle"
        except Exception:  # a query a busy worker did not answer in time: not yet
            return False

    async def lost_and_doubled(self) -> tuple[int, int]:
        """Lost: no run, no real result reaching the model (an error or "outcome unknown" instead),
        or a request still pending; doubled: every run past the first."""
        lost = doubled = 0
        for cid in self.ids:
            runs = self.runs(cid)
            doubled += max(0, runs - 1)
            messages = self.tool_messages[cid] = await self._tool_messages(cid)
            real = len(messages) == 1 and messages[0].startswith("exit code 0\n")
            lost += runs == 0 or not real or self.unresolved(cid)
        return lost, doubled

    async def _tool_messages(self, conversation_id: str) -> list[str]:
        try:
            state = await get_state(self.client, conversation_id)
        except Exception:
            return []
        return [m.content or "" for m in state.messages if m.role == "tool"]


async def until(check: Callable[[], bool], timeout: float) -> bool:
    """Whether check() came true within timeout (polled every 0.1 s)."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.1)
    return True
