"""What a worker does on its way out (SIGTERM, what a rollout sends): hand its conversations over.

By then its workers have stopped taking tasks and its running tools have finished, or been
cancelled at WORKER_STOP_GRACE_SECONDS (their next attempt finds them in the execution ledger:
"outcome unknown"). The host's workspaces are saved once more, the host is noted as stopped, and
every conversation pinned here is told (SIGNAL_HOST_LEFT): its next tool, or the one waiting for
this host right now, moves to a live host at once instead of after HOST_GONE_SECONDS.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from activities.workspace_saves import WorkspaceSaves
from activities.workspaces import CONVERSATIONS_DIR, SHARED_DIR
from core.contract import SIGNAL_HOST_LEFT
from core.hosts import HostLeft
from storage.store import ProjectionStore

logger = logging.getLogger(__name__)
_PARALLEL_SIGNALS = 16


async def save_workspaces(saves: WorkspaceSaves, workspace_dir: Path) -> int:
    """Save every workspace of this host (only what changed since its last save is written)."""
    roots = [workspace_dir / SHARED_DIR, *sorted((workspace_dir / CONVERSATIONS_DIR).glob("*"))]
    saved = 0
    for root in roots:
        if not root.is_dir():
            continue
        result = await saves.save(root.name, root)
        if result.skipped:
            logger.warning("workspace %s not saved: %s", root.name, result.skipped)
        else:
            saved += 1
    return saved


async def hand_over(
    client: Client,
    projection: ProjectionStore,
    host: str,
    host_queue: str,
    saves: WorkspaceSaves | None,
    workspace_dir: Path,
) -> int:
    """Save, note the host as stopped, signal its conversations; how many were told."""
    saved = await save_workspaces(saves, workspace_dir) if saves is not None else 0
    await projection.note_host(host, host_queue, stopping=True)
    conversations = await projection.conversations_on_host(host)
    gate = asyncio.Semaphore(_PARALLEL_SIGNALS)
    left = HostLeft(task_queue=host_queue, saved=saves is not None)

    async def tell(conversation_id: str) -> bool:
        async with gate:
            try:
                await client.get_workflow_handle(conversation_id).signal(SIGNAL_HOST_LEFT, left)
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:  # not found: it ended meanwhile
                    logger.warning("could not hand %s over: %s", conversation_id, err)
                return False
            return True

    told = sum(await asyncio.gather(*(tell(conversation_id) for conversation_id in conversations)))
    logger.info(
        "host %s stopped: %d workspace(s) saved, %d conversation(s) handed over to the other hosts",
        host,
        saved,
        told,
    )
    return told
