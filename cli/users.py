"""`users add|email|list|remove`: the people who approve, each with a personal token, groups and
an email (where email channels reach them).

The token is printed once, at `add`; the projection file keeps only a salted hash of it. With
`--asker` the token may only ask (the HTTP requests API, docs/requests.md): it decides nothing.
"""

from __future__ import annotations

import argparse
import getpass
import os

from cli.errors import EXIT_OK, EXIT_USAGE, CliError, refused
from cli.output import note, print_json, shown, table
from cli.temporal import Session

TOKEN_ENV = "APPROVER_TOKEN"


async def users(args: argparse.Namespace, session: Session) -> int:
    from storage.users import UserExists

    store = session.store()
    if args.action == "add":
        asker = bool(getattr(args, "asker", False))
        email = getattr(args, "email", None)
        if asker and (args.groups or email):
            raise CliError("an asking token decides nothing: it takes no --group or --email", EXIT_USAGE)
        try:
            token = await store.add_user(args.name, args.groups or [], asker=asker, email=email)
        except UserExists as err:
            raise refused(str(err)) from None
        print(token)
        if asker:
            note(f"The asking token of {args.name} is shown once: it may POST/GET/DELETE /api/requests, nothing else.")
        else:
            note(f"The token of {args.name} is shown once: send it as Authorization: Bearer, or set {TOKEN_ENV}.")
        return EXIT_OK
    if args.action == "email":
        address = None if args.clear else args.address
        if not await store.set_email(args.name, address):
            raise refused(f"no person {args.name!r} (an asker has no email)")
        print(f"{shown(args.name)}: {address or 'no email'}")
        return EXIT_OK
    if args.action == "remove":
        if not await store.remove_user(args.name):
            raise refused(f"no user {args.name!r}")
        print(f"Removed {shown(args.name)}: their token no longer works.")
        return EXIT_OK
    rows = await store.list_users()
    if args.json:
        print_json(rows)
        return EXIT_OK
    listed = [
        [r["name"], ", ".join(r["groups"]), "asker" if r["asker"] else "person", r["email"] or "", r["created_at"]]
        for r in rows
    ]
    print(table(["NAME", "GROUPS", "ROLE", "EMAIL", "ADDED"], listed))  # type: ignore[arg-type]
    return EXIT_OK


async def who_decides(args: argparse.Namespace, session: Session) -> tuple[str, list[str], str]:
    """The CLI's principal: the owner of APPROVER_TOKEN when set, else `--as NAME` or the
    operating-system user, with that name's groups. Returns (name, groups, how it was known)."""
    store = session.store()
    token = os.environ.get(TOKEN_ENV)
    if token:
        principal = await store.verify_token(token)
        if principal is None and await store.verify_asker(token) is not None:
            raise CliError(f"{TOKEN_ENV} is an asking token: it may ask, never decide", EXIT_USAGE)
        if principal is None:
            raise CliError(f"{TOKEN_ENV} is not the token of any user (see: starter.py users list)", EXIT_USAGE)
        return principal.name, principal.groups, TOKEN_ENV
    named = getattr(args, "decided_by", None)
    name = named or getpass.getuser()
    how = "--as" if named else "the operating-system user"
    return name, await store.groups_of(name), how
