"""`undo REQUEST`: ask to restore what an approved write_file replaced.

The undo is a request of its own (approve it like any other); refused (exit 3) when the file
changed since the write, with what changed printed escaped (before -> as written -> now).
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK, refused
from cli.output import note, shown
from cli.temporal import Session, rpc


async def undo(args: argparse.Namespace, session: Session) -> int:
    from cli.users import who_decides
    from core.refusals import DecisionRefused
    from core.undo import UndoInput
    from doors.undo_control import UndoRefused, ask_undo

    name, _, _ = await who_decides(args, session)
    client = await session.client()
    asking = UndoInput(request_id=args.request_id, by=name, door="cli")
    try:
        request_id = await rpc(ask_undo(client, asking, session.store()), f"undoing {args.request_id}")
    except UndoRefused as err:
        if err.three_way:
            print("\n".join(shown(line) for line in err.three_way.splitlines()))
        raise refused(str(err)) from None
    except DecisionRefused as err:
        raise refused(str(err)) from None
    print(shown(request_id))
    note(f"Asked: approve {request_id} to restore the previous content.")
    return EXIT_OK
