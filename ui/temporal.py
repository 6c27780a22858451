"""The UI's way to Temporal: one lazily connected client, and state reads that survive a missing worker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio.client import Client, WorkflowQueryFailedError, WorkflowQueryRejectedError
from temporalio.service import RPCError, RPCStatusCode

from config.settings import Settings
from core.conversation_model import ConversationState
from doors import control
from payload_store.connection import connect
from ui.errors import NotFound, ServiceUnavailable
from workflows.status import TURN_STATUS_KEY

ClientProvider = Callable[[], Awaitable[Client]]
# Short: the page waits on it, and with no worker a query only ends when its timeout does.
STATE_QUERY_TIMEOUT = timedelta(seconds=2)
CONNECT_TIMEOUT_SECONDS = 5.0


class LazyClient:
    """Connects on first use, so the UI starts (and reads the projection) while Temporal is down."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: Client | None = None
        self._lock = asyncio.Lock()

    async def __call__(self) -> Client:
        async with self._lock:
            if self._client is None:
                try:
                    self._client = await asyncio.wait_for(connect(self._settings), CONNECT_TIMEOUT_SECONDS)
                except Exception as err:
                    raise ServiceUnavailable(
                        f"cannot reach Temporal at {self._settings.temporal_address}: {err}"
                    ) from None
            return self._client


class WorkerUnavailable(Exception):
    """The workflow exists but nothing answered its query: no worker runs for its task queue."""


async def query_state(client: Client, conversation_id: str) -> ConversationState:
    try:
        return await control.get_state(client, conversation_id, timeout=STATE_QUERY_TIMEOUT)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(f"no conversation {conversation_id}") from None
        raise WorkerUnavailable(str(err)) from None
    except (WorkflowQueryFailedError, WorkflowQueryRejectedError) as err:
        raise WorkerUnavailable(str(err)) from None


async def status_from_search_attributes(client: Client, conversation_id: str) -> str | None:
    """TurnStatus as the workflow last published it; a describe needs no worker, unlike a query."""
    try:
        description = await client.get_workflow_handle(conversation_id).describe(rpc_timeout=STATE_QUERY_TIMEOUT)
    except RPCError:
        return None
    return description.typed_search_attributes.get(TURN_STATUS_KEY)


def rpc_error_to_http(err: RPCError, conversation_id: str) -> Exception:
    if err.status == RPCStatusCode.NOT_FOUND:
        return NotFound(f"conversation {conversation_id} is not running in Temporal")
    return ServiceUnavailable(f"Temporal refused the request: {err.message}")
