"""The run both PostgreSQL faults share (tests/faults/postgres_faults.py): conversations whose
decisions, tool runs and streamed replies are in flight when the fault begins, and what was lost,
doubled or left stuck once it ended.

Each conversation asks for one `run_shell` call that appends its marker to `effects.txt` in its
workspace: the line is the tool's side effect, counted. The conversations take roles in turn:
- tool: approved before the fault; its command sleeps through it, so the fault meets its ledger
  claim held (`started`) and the result is recorded after;
- stream: approved before the fault; the fault begins once the model's reply after its tool streams
  (`message.delta` rows written to the read model);
- cli: approved with `python starter.py approve` as the fault begins (the person's CLI waits
  DATABASE_WAIT_SECONDS for the database, then says in one line that it cannot reach it);
- door: approved through doors.control.send_decision with a store opened before the fault, as the
  UI holds one, as the fault begins;
- probe: approved through the same door once the fault has ended: seconds_to_recover runs from the
  end to its line.
A decision that failed while the fault lasted is sent again once it has ended (a person trying
again), and counted in `retried`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from temporalio.client import Client

from activities.ledger import Ledger
from config.settings import Settings
from core.conversation_model import ConversationState, DecisionInput
from core.refusals import DecisionRefused
from doors.control import get_state, send_decision, start_conversation
from storage.backend import StoreUnavailable
from storage.store import ProjectionStore
from storage.stream_events import EVENT_MESSAGE_DELTA
from tests.faults.outcome import FaultOutcome
from tests.support.helpers import workspace_of
from tests.support.processes import REPO_ROOT
from worker import build_worker

ROLES = ("tool", "stream", "cli", "door", "probe")
TOOL_SECONDS = 2  # the tool role's command outlasts the fault's start
TICK = 0.05
DECIDER = "fault-suite"
RETRY_WAIT = 10.0  # seconds a decision sent again after the fault waits for the database


@dataclass
class PostgresFaultSight:
    """What people saw while the fault lasted."""

    cli_failures: list[tuple[int, str]] = field(default_factory=list)  # each failed `approve`: exit status, stderr
    door_failures: list[str] = field(default_factory=list)  # each decision the door could not send, as it said why
    retried: int = 0  # decisions sent again once the fault had ended


@dataclass
class Fault:
    """begin() starts the fault; end() returns once it is over (after `cli_done` when it must
    outlast the person's CLI run, so that run meets the fault for sure)."""

    name: str
    begin: Callable[[], Awaitable[None]]
    end: Callable[[Awaitable[object]], Awaitable[None]]


@dataclass
class Run:
    client: Client
    settings: Settings
    env: dict[str, str]
    door: ProjectionStore  # the door's store, used before the fault as a UI's is
    seen: ProjectionStore  # the suite's own look at the read model, on the server directly
    ledger: Ledger
    ids: list[str]
    requests: dict[str, str] = field(default_factory=dict)  # conversation: its request id
    ran: dict[str, float] = field(default_factory=dict)  # conversation: when its line was first seen

    def role(self, cid: str) -> str:
        return ROLES[self.ids.index(cid) % len(ROLES)]

    def of(self, role: str) -> list[str]:
        return [cid for cid in self.ids if self.role(cid) == role]

    def lines(self, cid: str) -> list[str]:
        path = workspace_of(self.settings, cid) / "effects.txt"
        return path.read_text().split() if path.exists() else []

    async def until(self, check: Callable[[], Awaitable[bool]], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for cid in self.ids:
                if cid not in self.ran and cid in self.lines(cid):
                    self.ran[cid] = time.monotonic()
            try:
                if await check():
                    return True
            except StoreUnavailable:
                pass  # the suite's own reads wait out the fault too
            await asyncio.sleep(TICK)
        return False

    async def decide(self, cid: str) -> None:
        decision = DecisionInput(request_id=self.requests[cid], decision="allow", decided_by=DECIDER, door="ui")
        await send_decision(self.client, self.settings, decision, self.door)

    async def approve_by_cli(self, cid: str, wait: float | None = None) -> asyncio.subprocess.Process:
        """`wait`: the CLI's DATABASE_WAIT_SECONDS, when not the run's short one (a retry once the
        fault is over waits as long as a person would, on a machine other tests load)."""
        env = self.env if wait is None else {**self.env, "DATABASE_WAIT_SECONDS": str(wait)}
        return await asyncio.create_subprocess_exec(
            *(sys.executable, "starter.py", "approve", self.requests[cid], "--as", DECIDER),
            cwd=REPO_ROOT,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def deltas(self, cid: str) -> int:
        events, _ = await self.seen.events(0, cid, limit=100_000)
        return sum(1 for event in events if event["event_type"] == EVENT_MESSAGE_DELTA)

    async def done(self, cid: str) -> bool:
        row = await self.seen.conversation(cid)
        approval = await self.seen.approval(self.requests[cid])
        return (
            cid in self.ran
            and row is not None
            and row["turn_status"] == "idle"
            and row["pending_count"] == 0
            and approval is not None
            and approval["execution_state"] == "done"
        )


def ask(cid: str, role: str) -> str:
    wait = f"sleep {TOOL_SECONDS} && " if role == "tool" else ""
    return f"run {wait}echo {cid} >> effects.txt"


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Variables the in-process worker's stores read as they are made (DATABASE_WAIT_SECONDS)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


async def drive(
    run: Run, fault: Fault, worker_wait: float, sight: PostgresFaultSight, deadline_seconds: float
) -> FaultOutcome:
    with environment(DATABASE_WAIT_SECONDS=str(worker_wait)):
        worker = build_worker(run.client, run.settings)
    async with worker:
        for cid in run.ids:
            await start_conversation(run.client, run.settings, ask(cid, run.role(cid)), cid)

        async def asked() -> bool:
            for cid in run.ids:
                rows = (await run.seen.approvals("pending", cid)).items
                if rows:
                    run.requests[cid] = rows[0]["request_id"]
            return len(run.requests) == len(run.ids)

        assert await run.until(asked, deadline_seconds), "not every conversation asked for its tool"
        await _in_flight(run, deadline_seconds)
        await fault.begin()
        cli = [await run.approve_by_cli(cid) for cid in run.of("cli")]
        door = [asyncio.ensure_future(run.decide(cid)) for cid in run.of("door")]
        cli_done = asyncio.ensure_future(asyncio.gather(*(_exited(proc) for proc in cli)))
        await fault.end(cli_done)
        ended = time.monotonic()
        for cid in run.of("probe"):
            await run.decide(cid)
        await _again(run, await cli_done, door, sight)

        async def all_done() -> bool:
            return all([await run.done(cid) for cid in run.ids])

        await run.until(all_done, deadline_seconds)
        outcome = await _count(run, fault.name, ended, deadline_seconds)
    return outcome


async def _in_flight(run: Run, seconds: float) -> None:
    """The tool role's command running (its claim held), the stream role's reply streaming."""
    for cid in run.of("tool"):
        await run.decide(cid)

    async def claimed() -> bool:
        return all([await run.ledger.state_of(run.requests[cid]) == "started" for cid in run.of("tool")])

    assert await run.until(claimed, seconds), "the tool role's commands did not start"
    before = {cid: await run.deltas(cid) for cid in run.of("stream")}
    for cid in run.of("stream"):
        await run.decide(cid)

    async def streaming() -> bool:
        return all([await run.deltas(cid) > before[cid] for cid in run.of("stream")])

    assert await run.until(streaming, seconds), "the replies after the stream role's tools did not stream"


async def _exited(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    _, stderr = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, stderr.decode()


async def _again(
    run: Run, cli: list[tuple[int, str]], door: Sequence[asyncio.Future[None]], sight: PostgresFaultSight
) -> None:
    """Every decision that failed while the fault lasted, sent again, as its person would. Going
    through, or refused as decided already by this same person (a claim that went in while its
    answer was lost: the door then sends that decision again), are both the person's decision made."""
    for cid, (status, stderr) in zip(run.of("cli"), cli, strict=True):
        if status != 0:
            sight.cli_failures.append((status, stderr))
            again = await _exited(await run.approve_by_cli(cid, wait=RETRY_WAIT))
            mine = again[0] == 3 and f"by {DECIDER}" in again[1]
            assert again[0] == 0 or mine, f"approve after the fault exited {again[0]}: {again[1]}"
            sight.retried += 1
    for cid, sent in zip(run.of("door"), door, strict=True):
        try:
            await sent
        except StoreUnavailable as err:
            sight.door_failures.append(str(err))
            try:
                await run.decide(cid)
            except DecisionRefused as refused:
                assert f"by {DECIDER}" in str(refused), refused
            sight.retried += 1


async def _count(run: Run, name: str, ended: float, deadline: float) -> FaultOutcome:
    lost = doubled = stuck = 0
    for cid in run.ids:
        lines = Counter(run.lines(cid))
        lost += lines[cid] == 0
        doubled += max(0, lines[cid] - 1)
        asked = (await run.seen.approvals("all", cid)).items
        doubled += max(0, len(asked) - 1)  # the call asked twice
        lost += not asked  # the approval vanished
        state = await _state(run.client, cid)
        results = [m.content or "" for m in state.messages if m.role == "tool"] if state else []
        doubled += max(0, len(results) - 1)
        replies = [m for m in state.messages if m.role == "assistant"] if state else []
        doubled += max(0, len(replies) - 2)  # the tool call, then the answer: each recorded once
        lost += sum("Outcome unknown" in text or "denied" in text.lower() for text in results)
        stuck += state is None or state.turn_status != "idle" or not await run.done(cid)
    probes = [run.ran[cid] - ended for cid in run.of("probe") if cid in run.ran]
    recover = max(0.0, min(probes, default=deadline))
    return FaultOutcome(name, "postgresql", round(recover, 2), lost, doubled, stuck)


async def _state(client: Client, cid: str) -> ConversationState | None:
    try:
        return await get_state(client, cid)
    except Exception:  # a conversation that cannot answer is counted stuck
        return None


__all__ = ["ROLES", "Fault", "PostgresFaultSight", "Run", "drive"]
