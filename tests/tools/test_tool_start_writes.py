"""The read-model writes beside a tool run start at its first heartbeat, not before its launch, and
the activity returns only once they are done; a failed write fails the activity after the tool ran."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import ActivityEnvironment

from activities.tools import ToolStartWrites


async def test_writes_wait_for_the_tools_first_heartbeat_and_end_before_it_returns() -> None:
    order: list[str] = []

    async def write(name: str) -> None:
        order.append(f"{name} started")
        await asyncio.sleep(0.01)
        order.append(f"{name} done")

    async def tool(beside: ToolStartWrites) -> str:
        await asyncio.sleep(0.01)  # the launch: nothing written yet
        order.append("tool started")
        beside.beat()
        await asyncio.sleep(0)
        beside.beat()  # a later heartbeat starts nothing again
        await asyncio.sleep(0.05)
        order.append("tool ended")
        return "ok"

    async def activity() -> str:
        beside = ToolStartWrites()
        beside.add(lambda: write("resolution"))
        beside.add(lambda: write("running"))
        try:
            return await tool(beside)
        finally:
            await beside.finish()
            order.append("returned")

    heartbeats: list[object] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: heartbeats.append(details)
    assert await env.run(activity) == "ok"
    assert order[0] == "tool started"
    assert order.index("resolution started") < order.index("resolution done") < order.index("tool ended")
    assert order.count("running started") == 1 and order[-1] == "returned"
    assert len(heartbeats) == 2


async def test_a_tool_that_never_beats_has_its_writes_at_its_end_and_a_failed_one_raises() -> None:
    written: list[str] = []

    async def fails() -> None:
        raise RuntimeError("projection down")

    async def succeeds() -> None:
        written.append("mark")

    async def activity() -> None:
        beside = ToolStartWrites()
        beside.add(fails)
        beside.add(succeeds)
        assert written == []  # nothing before the tool's end when it never beats
        await beside.finish()

    with pytest.raises(RuntimeError, match="projection down"):
        await ActivityEnvironment().run(activity)
    assert written == ["mark"]  # the other write still ran to its end
