"""`extend`: give a waiting request more time, as someone who may decide it (the approver rules apply).

Sent by update, so the workflow answers at once with the new deadline or why not (exit 3); it needs
a running worker.
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK, refused
from cli.output import shown
from cli.temporal import Session, rpc


async def extend(args: argparse.Namespace, session: Session) -> int:
    from cli.users import who_decides
    from core.conversation_model import ExtensionInput
    from core.refusals import DecisionRefused
    from doors.control import extend_approval

    name, groups, _ = await who_decides(args, session)
    extension = ExtensionInput(
        request_id=args.request_id,
        seconds=args.by,
        reason=args.reason,
        decided_by=name,
        door="cli",
        principal=name,
        groups=groups,
    )
    client = await session.client()
    try:
        result = await rpc(extend_approval(client, extension, session.store()), f"extending {args.request_id}")
    except DecisionRefused as err:
        raise refused(str(err)) from None
    print(f"Extended {shown(args.request_id)}: it now expires at {result.expires_at.isoformat()}.")
    return EXIT_OK
