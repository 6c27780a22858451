"""`rules reload`: POLICY_FILE's rules sent to every open conversation, which re-judges what waits.

A conversation judges its calls under the rules it started with (they are in its history). Here
the file is read and checked once, and its rules go by signal (SIGNAL_POLICY_CHANGED) to each
conversation the read model shows open: from then on it judges every call under them, and each
request still waiting for a person is judged again (workflows/policy_change.py). A worker watches
the file and does the same when it changes (`watch_policy_file`), so editing the file is enough.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from config.errors import ConfigError
from config.settings import Settings
from core.contract import SIGNAL_POLICY_CHANGED
from storage.store import ProjectionStore

log = logging.getLogger(__name__)
WATCH_EVERY_SECONDS = 5.0
_PARALLEL = 16


@dataclass(frozen=True)
class Reloaded:
    conversations: int  # told the new rules
    gone: int  # ended meanwhile


async def reload_rules(client: Client, settings: Settings, store: ProjectionStore) -> Reloaded:
    """Read and check POLICY_FILE (ConfigError when it is not valid), then tell every open conversation."""
    rules = settings.load_policy()
    open_ids = [row["conversation_id"] for row in await store.open_conversations()]
    gate = asyncio.Semaphore(_PARALLEL)

    async def tell(conversation_id: str) -> bool:
        async with gate:
            try:
                await client.get_workflow_handle(conversation_id).signal(SIGNAL_POLICY_CHANGED, rules)
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
                return False
            return True

    told = sum(await asyncio.gather(*(tell(cid) for cid in open_ids)))
    return Reloaded(conversations=told, gone=len(open_ids) - told)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_mtime_ns, st.st_size)


async def watch_policy_file(client: Client, settings: Settings, store: ProjectionStore) -> None:
    """Until cancelled: when POLICY_FILE changes, reload its rules (a file that does not parse is
    logged and left alone until it changes again)."""
    if settings.policy_file is None:
        return
    path = Path(settings.policy_file)
    seen = _stamp(path)
    while True:
        await asyncio.sleep(WATCH_EVERY_SECONDS)
        now = _stamp(path)
        if now == seen:
            continue
        seen = now
        try:
            reloaded = await reload_rules(client, settings, store)
        except ConfigError as err:
            log.error("POLICY_FILE changed but was not reloaded: %s", err)
            continue
        except RPCError as err:
            log.warning("POLICY_FILE changed; the new rules did not reach every conversation: %s", err)
            continue
        log.info("POLICY_FILE changed: the new rules went to %d open conversation(s)", reloaded.conversations)
