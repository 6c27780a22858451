"""`close` and `auto-approve`: the conversation's two switches, by signal (kept even with no worker).

A conversation that does not exist or has already ended is refused (exit 3): the signal has
nowhere to go. Who switched is recorded as for a decision: the owner of APPROVER_TOKEN, else the
operating-system user.
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK
from cli.output import shown
from cli.temporal import Session, rpc
from cli.users import who_decides


async def close(args: argparse.Namespace, session: Session) -> int:
    from doors.control import close_conversation

    by = (await who_decides(args, session))[0]
    client = await session.client()
    await rpc(close_conversation(client, args.conversation, by, "cli"), f"closing {args.conversation}")
    print(f"Closed {shown(args.conversation)}: its waiting approvals are canceled.")
    return EXIT_OK


async def auto_approve(args: argparse.Namespace, session: Session) -> int:
    from doors.control import set_auto_approve

    enabled = args.mode == "on"
    by = (await who_decides(args, session))[0]
    client = await session.client()
    switching = set_auto_approve(client, args.conversation, enabled, by, "cli")
    await rpc(switching, f"switching auto-approve of {args.conversation}")
    if enabled:
        print(f"Auto-approve is on for {shown(args.conversation)}: every ask is allowed; deny rules still apply.")
    else:
        print(f"Auto-approve is off for {shown(args.conversation)}: calls that ask wait for a person again.")
    return EXIT_OK
