"""The run every model fault shares (tests/faults/model_faults.py): conversations that each ask for
two commands, a fault begun and ended around them, and what was lost, doubled or left stuck.

Each conversation's first message asks to run `echo ID-1 >> effects.log`, its second (sent once
the fault has begun, so it waits in the conversation's inbox) `echo ID-2 >> effects.log`; every
request is approved as soon as the read model shows it. The side effect is the line in the file:
each marker must be there exactly once. A fault the service cannot ride out must fail the first
turn with its reason and run nothing of it (`first_turn_fails`: the second message is sent once
the first turn failed, and `show` is run then); the second message then goes on.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState, DecisionInput
from doors.control import get_state, send_decision, send_message, start_conversation
from storage.store import ProjectionStore
from tests.faults.model_fault_sight import (
    FailedModelCalls,
    ModelFaultSight,
    deltas,
    fill_sight,
    stream_doubles,
    watched,
)
from tests.faults.outcome import FaultOutcome
from tests.support.fault_models import FaultModelServer
from tests.support.helpers import workspace_of
from tests.support.processes import run_cli
from worker import build_worker

TICK = 0.05
When = Literal["asking", "before_reply", "mid_stream"]


@dataclass
class Fault:
    """One fault: how it begins and ends, when it begins (before the conversations ask the model
    for their first command, before the model call that follows a decided tool, or once that call's
    reply streams) and how long it lasts (0: it ends by itself, as a rate limit's refusals run out;
    `ended_at` then says when)."""

    name: str
    begin: Callable[[], None]
    end: Callable[[], None]
    when: When
    seconds: float
    ended_at: Callable[[], float | None] | None = None


def ask(conversation_id: str, round_: int) -> str:
    return f"run echo {marker(conversation_id, round_)} >> effects.log"


def marker(conversation_id: str, round_: int) -> str:
    return f"{conversation_id}-{round_}"


class Rounds:
    """Approves every request the read model shows, and notes when each marker reached the file."""

    def __init__(self, client: Client, settings: Settings, store: ProjectionStore, ids: list[str]) -> None:
        self.client, self.settings, self.store, self.ids = client, settings, store, ids
        self.rounds: tuple[int, ...] = (1, 2)  # whose command must run (a first turn that fails closed runs none)
        self.decided: dict[str, tuple[float, str]] = {}  # request id: when it was decided, its command
        self.ran: dict[str, float] = {}  # marker: when its line was first seen

    async def tick(self, approve: bool = True) -> None:
        for cid in self.ids:
            for row in (await self.store.approvals("pending", cid)).items:
                if approve and row["request_id"] not in self.decided:
                    self.decided[row["request_id"]] = (time.monotonic(), row["arguments"].get("command", ""))
                    decision = DecisionInput(request_id=row["request_id"], decision="allow", decided_by="fault-suite")
                    await send_decision(self.client, self.settings, decision, self.store)
            for line in self.lines(cid):
                self.ran.setdefault(line, time.monotonic())

    def lines(self, cid: str) -> list[str]:
        path = workspace_of(self.settings, cid) / "effects.log"
        return path.read_text().split() if path.exists() else []

    async def asked(self) -> bool:
        return all([(await self.store.approvals("pending", cid)).items for cid in self.ids])

    async def failed(self) -> bool:
        rows = [await self.store.conversation(cid) for cid in self.ids]
        return all(row is not None and row["turn_status"] == "failed" for row in rows)

    async def done(self) -> bool:
        for cid in self.ids:
            row = await self.store.conversation(cid)
            if row is None or row["turn_status"] != "idle" or marker(cid, 2) not in self.ran:
                return False
        return True

    async def until(self, check: Callable[[], Awaitable[bool]], deadline: float, approve: bool = True) -> None:
        while time.monotonic() < deadline and not await check():
            await self.tick(approve)
            await asyncio.sleep(TICK)


async def streaming_after_tool(store: ProjectionStore, ids: list[str]) -> bool:
    """Every conversation's second model call (the one after its decided tool) has streamed text."""
    for cid in ids:
        if len({(d["turn_id"], d["call_id"]) for d in await deltas(store, cid) if d["text"]}) < 2:
            return False
    return True


async def count_conversation(
    rounds: Rounds, state: ConversationState | None, cid: str, sight: ModelFaultSight
) -> tuple[int, int, int]:
    """(lost, doubled, stuck) of one conversation."""
    lines = Counter(rounds.lines(cid))
    doubled = sum(n - 1 for n in lines.values() if n > 1)
    doubled += sum(1 for line in lines if line not in {marker(cid, r) for r in rounds.rounds})  # ran, never due
    rows = (await rounds.store.approvals("all", cid)).items
    asked = Counter(row["arguments"].get("command", "") for row in rows)
    doubled += sum(n - 1 for n in asked.values() if n > 1)
    ids = {row["request_id"] for row in rows}
    lost = sum(1 for rid in rounds.decided if f"_{cid}_" in rid and rid not in ids)  # a decided row that vanished
    for row in rows:
        if row["request_id"] in rounds.decided:
            ran = any(word in lines for word in row["arguments"].get("command", "").split())
            lost += not ran or row["decision"] != "allow"
    finished = state is not None and state.turn_status == "idle"
    finished = finished and all(marker(cid, r) in lines for r in rounds.rounds)
    pieces = await deltas(rounds.store, cid)
    sight.watched[cid] = watched(pieces)
    if state is not None:
        replies = [m.content or "" for m in state.messages if m.role == "assistant"]
        doubled += max(0, len(replies) - 2 * len(rounds.rounds))
        doubled += stream_doubles(pieces, [r for r in replies if r], sight)
    return lost, doubled, int(not finished)


def fault_settings(workdir: Path, model_url: str, timeout_seconds: float, database: str | Path | None) -> Settings:
    """A worker of the run's own: its task queue, read model, workspace, model and client timeout."""
    return Settings(
        task_queue=f"faults-{uuid.uuid4().hex[:8]}",
        approvals_db=database or workdir / "approvals.db",
        workspace_dir=workdir / "workspace",
        openai_base_url=model_url,
        openai_api_key="fault-key",
        llm_model="scripted-demo",
        llm_stream=True,
        llm_timeout_seconds=timeout_seconds,
        approval_timeout=3600.0,
    )


async def drive(
    client: Client,
    workdir: Path,
    model_url: str,
    fault: Fault,
    conversations: int,
    timeout_seconds: float,
    database: str | Path | None,
    sight: ModelFaultSight | None,
    front: FaultModelServer | None,
    *,
    first_turn_fails: bool = False,
    deadline_seconds: float = 30.0,
) -> FaultOutcome:
    workdir.mkdir(parents=True, exist_ok=True)
    settings = fault_settings(workdir, model_url, timeout_seconds, database)
    show_cli = sight is not None  # a CLI run costs a Python start: only when asked what a user saw
    sight = sight if sight is not None else ModelFaultSight()
    ids = [f"mf-{uuid.uuid4().hex[:8]}-{n}" for n in range(conversations)]
    store = ProjectionStore(settings.approvals_db)
    rounds = Rounds(client, settings, store, ids)
    if first_turn_fails:
        rounds.rounds = (2,)
    lost = doubled = stuck = 0
    try:
        with FailedModelCalls(settings.task_queue).listening() as failures:
            async with build_worker(client, settings):
                if fault.when == "asking":
                    fault.begin()
                for cid in ids:
                    await start_conversation(client, settings, ask(cid, 1), cid)
                if fault.when != "asking":
                    await rounds.until(rounds.asked, time.monotonic() + deadline_seconds, approve=False)
                    if fault.when == "before_reply":
                        fault.begin()
                    await rounds.tick()
                    if fault.when == "mid_stream":
                        await rounds.until(lambda: streaming_after_tool(store, ids), time.monotonic() + 10)
                        fault.begin()
                began = time.monotonic()
                if first_turn_fails:
                    await rounds.until(rounds.failed, began + deadline_seconds)
                    for cid in ids if show_cli else ():
                        shown = await run_cli(settings, client, "show", cid)
                        sight.shown[cid] = (shown.returncode, shown.stdout + shown.stderr)
                for cid in ids:
                    await send_message(client, cid, ask(cid, 2))

                # The fault lasts its time, and until it has met every conversation's model call:
                # on busy cores a tool may run longer than the fault, which would then meet nothing.
                async def bitten() -> bool:
                    return time.monotonic() >= began + fault.seconds and len(failures.conversations) >= len(ids)

                await rounds.until(bitten, began + deadline_seconds)
                fault.end()
                ended = time.monotonic()
                await rounds.until(rounds.done, ended + deadline_seconds)
                ended = (fault.ended_at() if fault.ended_at else None) or ended  # a fault that ended by itself
                for cid in ids:
                    state = await _state(client, cid)
                    counted = await count_conversation(rounds, state, cid, sight)
                    lost, doubled, stuck = lost + counted[0], doubled + counted[1], stuck + counted[2]
                    sight.failed_turns.update(await _failed_turns(store, cid))
        fill_sight(sight, failures, front)
    finally:
        await store.close()
    recover = min(_ran_after(rounds, ended), default=deadline_seconds)
    backend = "postgresql" if str(settings.approvals_db).startswith("postgres") else "sqlite"
    return FaultOutcome(fault.name, backend, round(recover, 2), lost, doubled, stuck)


def _ran_after(rounds: Rounds, ended: float) -> list[float]:
    """For each request decided after the fault ended whose command ran: seconds from the end to its run."""
    return [
        rounds.ran[word] - ended
        for at, command in rounds.decided.values()
        if at >= ended
        for word in command.split()
        if word in rounds.ran
    ]


async def _failed_turns(store: ProjectionStore, cid: str) -> dict[str, str]:
    """A failed turn's reason, from the read model's `turn.failed` event (what the inbox and `show` say)."""
    events, _ = await store.events(0, cid, limit=100_000)
    failed = [e["payload"] for e in events if e["event_type"] == "turn.failed"]
    return {cid: str(failed[-1].get("reason") or failed[-1])} if failed else {}


async def _state(client: Client, cid: str) -> ConversationState | None:
    try:
        return await get_state(client, cid)
    except Exception:  # a conversation that cannot answer is counted stuck
        return None
