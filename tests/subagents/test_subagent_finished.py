"""A subagent that answers its task ends as finished, not as closed: its state, `show` and the
audit say it finished for its parent, and no unnamed caller appears to have closed it."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import ConversationState
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, wait_status
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, delegation
from worker import build_worker
from workflows.delegation import child_conversation_id

TASK = "list the workspace"


async def test_a_finished_subagent_is_recorded_as_finished(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = delegation(TASK, ("l1", "list_dir", {"path": "."}))
    settings.workspace_dir.mkdir(parents=True, exist_ok=True)
    async with build_worker(client, settings):
        parent = histories.track(await start_conversation(client, settings, "delegate the listing"))
        await wait_status(client, parent, "idle")
        child = histories.track(child_conversation_id(parent, "d1"))
        state = await client.get_workflow_handle(child, result_type=ConversationState).result()

        async def ended() -> list[dict] | None:
            store = ProjectionStore(settings.approvals_db)
            try:
                found = await store.switches(child)
            finally:
                await store.close()
            return found or None

        [row] = await eventually(ended)
        shown = await run_cli(settings, client, "show", child)
        audit = await run_cli(settings, client, "audit")

    assert state.turn_status == "closed"
    assert (state.closed_by, state.closed_door) == (parent, "subagent")
    assert (row["switch"], row["by"], row["door"]) == ("close", parent, "subagent")
    assert f"finished its task for {parent} (subagent)" in shown.stdout
    assert "unnamed caller" not in shown.stdout and "unnamed caller" not in audit.stdout
