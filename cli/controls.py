"""`close` and `auto-approve`: the conversation's two switches, by signal (kept even with no worker).

A conversation that does not exist or has already ended is refused (exit 3): the signal has
nowhere to go.
"""

from __future__ import annotations

import argparse

from cli.errors import EXIT_OK
from cli.output import shown
from cli.temporal import Session, rpc


async def close(args: argparse.Namespace, session: Session) -> int:
    from control import close_conversation

    client = await session.client()
    await rpc(close_conversation(client, args.conversation), f"closing {args.conversation}")
    print(f"Closed {shown(args.conversation)}: its waiting approvals are canceled.")
    return EXIT_OK


async def auto_approve(args: argparse.Namespace, session: Session) -> int:
    from control import set_auto_approve

    enabled = args.mode == "on"
    client = await session.client()
    await rpc(set_auto_approve(client, args.conversation, enabled), f"switching auto-approve of {args.conversation}")
    if enabled:
        print(f"Auto-approve is on for {shown(args.conversation)}: every ask is allowed; deny rules still apply.")
    else:
        print(f"Auto-approve is off for {shown(args.conversation)}: calls that ask wait for a person again.")
    return EXIT_OK
