"""What the CLI and the UI call to undo an approved write_file (workflows/undo.py).

Sent by update, so the workflow answers at once: the undo's own request id (it is then decided as
any request is), or why not, with the file's three states when it changed since. It needs a
running worker: the file is read on the conversation's host.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from core.contract import ERROR_UNDO_REFUSED, ERROR_UNKNOWN_APPROVAL, UPDATE_UNDO
from core.refusals import DecisionRefused
from core.undo import UndoInput, UndoResult
from storage.store import ProjectionStore

UNDO_TIMEOUT = timedelta(seconds=60)  # the workflow reads the file on its host before it answers


class UndoRefused(DecisionRefused):
    def __init__(self, message: str, three_way: str | None) -> None:
        super().__init__(ERROR_UNDO_REFUSED, message)
        self.three_way = three_way


async def ask_undo(client: Client, undo: UndoInput, store: ProjectionStore) -> str:
    """The undo's request id; UndoRefused (or DecisionRefused for an unknown request) otherwise."""
    row = await store.approval(undo.request_id)
    if row is None:
        raise DecisionRefused(ERROR_UNKNOWN_APPROVAL, f"no approval request {undo.request_id}")
    handle = client.get_workflow_handle(row["conversation_id"])
    try:
        result = await handle.execute_update(UPDATE_UNDO, undo, result_type=UndoResult, rpc_timeout=UNDO_TIMEOUT)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError):
            raise UndoRefused(cause.message, None) from None
        raise
    if result.refused is not None or result.request_id is None:
        raise UndoRefused(result.refused or "not undone", result.three_way)
    return result.request_id
