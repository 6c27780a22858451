"""`hosts`: every worker host, when a worker last polled it, and the conversations it holds.

The projection lists the hosts (the workers note themselves on start, while running and when
stopping) and, per host, its open conversations and the tools waiting for it. Temporal says when a
worker last polled each host queue; a Temporal that is down or slow makes that column "unknown"
(bounded by --timeout) instead of hanging the listing, which the projection alone can give.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_FAILED, EXIT_OK, CliError
from cli.output import note, print_json, short_time, shown, table
from cli.temporal import Session

if TYPE_CHECKING:
    from temporalio.client import Client

UNKNOWN = "unknown"  # Temporal could not say when the host was last polled


async def hosts(args: argparse.Namespace, session: Session) -> int:
    rows = await session.store().hosts()
    for row in rows:
        row["task_queue"] = row["task_queue"] or _host_queue_of(session, row["host"])
    polls = await _last_polls(session, [row["task_queue"] for row in rows], args.timeout) if rows else []
    listing = [
        {
            "host": row["host"],
            "task_queue": row["task_queue"],
            "last_poll": poll,
            "last_seen": row["last_seen"],
            "stopped_at": row["stopped_at"],
            "conversations": row["conversations"],
            "waiting_tools": row["waiting_tools"],
        }
        for row, poll in zip(rows, polls, strict=True)
    ]
    if args.json:
        print_json(listing)
        return EXIT_OK
    if not listing:
        print("No worker host yet: a worker notes its host when it starts (python worker.py).")
        return EXIT_OK
    headers = ["HOST", "TASK QUEUE", "LAST POLL", "LAST SEEN", "STOPPED", "CONVERSATIONS", "WAITING TOOLS"]
    print(table(headers, [_cells(item) for item in listing]))
    return EXIT_OK


def _host_queue_of(session: Session, host: str) -> str:
    """A host no worker registered (only a conversation names it): this deployment's host queue for it."""
    from dataclasses import replace

    return replace(session.settings, worker_host=host).host_queue


def _cells(item: dict[str, Any]) -> list[object]:
    poll = item["last_poll"]
    last_poll = poll if poll == UNKNOWN else (short_time(poll) if poll else "none listed")
    return [
        shown(item["host"]),
        shown(item["task_queue"]),
        last_poll,
        short_time(item["last_seen"]),
        short_time(item["stopped_at"]),
        item["conversations"],
        item["waiting_tools"],
    ]


async def _last_polls(session: Session, host_queues: list[str], timeout: float) -> list[str | None]:
    """Per host queue: the newest poll (ISO), None when no worker is listed, UNKNOWN when Temporal
    did not answer within timeout seconds."""
    try:
        client = await asyncio.wait_for(session.client(), timeout)
    except TimeoutError:
        note(f"Last polls unknown: Temporal did not answer within {timeout:g}s.")
        return [UNKNOWN] * len(host_queues)
    except CliError as err:
        if err.code != EXIT_FAILED:  # a bad setting is still bad usage
            raise
        note(f"Last polls unknown: {err}")
        return [UNKNOWN] * len(host_queues)
    return list(await asyncio.gather(*(_last_poll(client, host_queue, timeout) for host_queue in host_queues)))


async def _last_poll(client: Client, host_queue: str, timeout: float) -> str | None:
    from datetime import timedelta

    from config.host_polls import last_poll

    try:
        found: datetime | None = await asyncio.wait_for(
            last_poll(client, host_queue, timeout=timedelta(seconds=timeout)), timeout + 1
        )
    except Exception:  # an RPC error or a timeout: this host's poll is unknown, the rest still shows
        return UNKNOWN
    return found.isoformat() if found is not None else None
