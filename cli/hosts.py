"""`move CONVERSATION --to HOST`: re-pin a conversation whose host is gone to another worker host.

A conversation's tools run on the host that ran its first tool, whose workspace holds what they
wrote. When that host leaves for good, its conversations would wait for it forever; a move sends
their next tools to HOST (the WORKER_HOST of a worker that is up) instead. The workflow records
the move in its history and refuses it while a tool of the conversation runs (exit 3).
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK, refused
from cli.output import shown
from cli.temporal import Session, rpc
from cli.users import who_decides


async def move(args: argparse.Namespace, session: Session) -> int:
    from dataclasses import replace

    from core.refusals import DecisionRefused
    from doors.control import move_conversation

    host_queue = replace(session.settings, worker_host=args.to).host_queue
    by = (await who_decides(args, session))[0]
    client = await session.client()
    try:
        moved = await rpc(
            move_conversation(client, args.conversation, host_queue, by, "cli"), f"moving {args.conversation}"
        )
    except DecisionRefused as err:
        raise refused(f"moving {args.conversation}: {err}") from None
    before = shown(moved.moved_from) if moved.moved_from else "no host yet"
    print(f"Moved {shown(args.conversation)}: its tools run on {shown(args.to)} from now on (before: {before}).")
    return EXIT_OK
