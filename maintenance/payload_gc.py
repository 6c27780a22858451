"""Delete the payload store's files that no live workflow refers to.

A blob is shared by every payload that holds its message or tool result, so no write can delete
one: only a walk over what is still referred to can. Live means a workflow that runs, or that
closed less than PAYLOAD_STORE_RETENTION_SECONDS ago (its history stays readable that long). The
walk reads each live history's references, the roots they name and every blob those reach
(mark), then deletes every other file of the local store older than the same retention (sweep):
a file written or found again lately may belong to a payload being stored right now, which no
history names yet (the writer refreshes a blob's mtime when it reuses it, blob_files.py).
Files of earlier releases (one whole payload per file) are collected the same way. The latest save
of each workspace (its pointer under `workspaces/`) is live too: its manifest parts and chunks stay.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus

from config.settings import ConfigError, Settings
from payload_store import blob_tree
from payload_store.content_driver import LOCAL_DRIVER_NAME, root_references
from payload_store.history import references
from payload_store.local import DRIVER_NAME as WHOLE_DRIVER_NAME
from payload_store.workspace_store import CHUNKS, saved_digests


@dataclass
class CollectReport:
    live_workflows: int = 0
    kept_files: int = 0
    deleted_files: int = 0
    deleted_bytes: int = 0


async def live_references(client: Client, retention: timedelta) -> tuple[int, dict[str, set[str]]]:
    """How many workflows are live, and the digests their histories name, by driver name."""
    cutoff = datetime.now(UTC) - retention
    named: dict[str, set[str]] = {LOCAL_DRIVER_NAME: set(), WHOLE_DRIVER_NAME: set()}
    live = 0
    async for execution in client.list_workflows():
        running = execution.status == WorkflowExecutionStatus.RUNNING
        if not running and execution.close_time is not None and execution.close_time < cutoff:
            continue
        live += 1
        history = await client.get_workflow_handle(execution.id, run_id=execution.run_id).fetch_history()
        for reference in references(history):
            digest = reference.claim_data.get("hash_value")
            if digest and reference.driver_name in named:
                named[reference.driver_name].add(digest)
    return live, named


def reachable(root: Path, roots: set[str]) -> set[str]:
    """Every blob the given roots reach, read from the local store (a missing one is skipped)."""
    seen: set[str] = set()
    frontier: set[str] = set()
    for digest in roots:
        path = root / "roots" / digest[:2] / digest
        if path.is_file():
            payload = Payload()
            payload.ParseFromString(path.read_bytes())
            frontier.update(root_references(payload))
    while frontier:
        seen |= frontier
        found: set[str] = set()
        for digest in frontier:
            path = root / "blobs" / digest[:2] / digest
            if path.is_file():
                found.update(blob_tree.references(json.loads(path.read_bytes())))
        frontier = found - seen
    return seen


def sweep(root: Path, keep: dict[str, set[str]], older_than: float) -> CollectReport:
    report = CollectReport()
    for directory, kept in keep.items():
        for path in sorted((root / directory).glob("*/*")):
            if path.name.startswith(".") or path.name in kept:
                report.kept_files += 1
                continue
            stat = path.stat()
            if stat.st_mtime >= older_than:  # written or reused lately: maybe not named by a history yet
                report.kept_files += 1
                continue
            path.unlink(missing_ok=True)
            report.deleted_files += 1
            report.deleted_bytes += stat.st_size
    return report


async def collect_payloads(client: Client, settings: Settings, retention_seconds: float | None = None) -> CollectReport:
    """Mark what live workflows refer to, then delete the rest of the local store older than the retention."""
    location = settings.payload_store_location
    if "://" in location and not location.startswith("file://"):
        raise ConfigError(f"PAYLOAD_STORE={location!r}: collecting works on a local payload store only")
    root = Path(location.removeprefix("file://"))
    retention = settings.payload_store_retention if retention_seconds is None else retention_seconds
    started = time.time()
    live, named = await live_references(client, timedelta(seconds=retention))
    saved_parts, saved_chunks = saved_digests(root)  # what the latest save of each workspace reaches
    keep = {
        "roots": named[LOCAL_DRIVER_NAME],
        "blobs": reachable(root, named[LOCAL_DRIVER_NAME]) | saved_parts,
        "sha256": named[WHOLE_DRIVER_NAME],
        CHUNKS: saved_chunks,
    }
    report = sweep(root, keep, older_than=started - retention)
    report.live_workflows = live
    return report
