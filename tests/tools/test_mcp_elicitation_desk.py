"""The desk that puts MCP servers' questions in the inbox, on its own: a call that ends while its
question waits takes the card away, and what the inbox cannot answer is declined at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp import types

from activities.mcp_elicitation import Asker, ElicitationDesk
from core.tool_model import ToolDef
from storage import elicitations
from storage.store import ProjectionStore

TOOL = ToolDef(
    name="mcp__forms__ask", description="asks", parameters={"type": "object"}, permission_type="write", origin="forms"
)
FORM = types.ElicitRequestFormParams(message="Who?", requested_schema={"type": "object", "properties": {}})


async def test_a_call_that_ends_while_its_question_waits_takes_the_card_away(tmp_path: Path) -> None:
    store = ProjectionStore(tmp_path / "approvals.db")
    try:
        desk = ElicitationDesk(store, poll_seconds=0.05)
        asking = asyncio.create_task(desk.ask(Asker("conv-a", "perm_conv-a_c1", TOOL, {}), FORM, 60))
        while not await elicitations.open_questions(store):
            await asyncio.sleep(0.05)
        (waiting,) = await elicitations.open_questions(store)
        asking.cancel()
        await asyncio.gather(asking, return_exceptions=True)
        assert await elicitations.open_questions(store) == []
        answer = await elicitations.answer_of(store, waiting["question_id"])
        assert answer is not None and (answer["action"], answer["by"]) == ("cancel", "call ended")
    finally:
        await store.close()


async def test_what_the_inbox_cannot_answer_is_declined_without_a_card(tmp_path: Path) -> None:
    store = ProjectionStore(tmp_path / "approvals.db")
    try:
        desk = ElicitationDesk(store)
        url = types.ElicitRequestURLParams(message="Open this", url="https://example.com", elicitation_id="e1")
        opened = await desk.ask(Asker("conv-a", "perm_conv-a_c1", TOOL, {}), url, 60)
        unowned = await desk.ask(None, FORM, 60)
        assert (opened.action, unowned.action) == ("decline", "decline")
        assert await elicitations.open_questions(store) == []
    finally:
        await store.close()
