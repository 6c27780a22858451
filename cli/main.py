"""Dispatch a command line to its command, map every failure to an exit status, exit safely."""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from cli.parser import build_parser
from cli.temporal import Session
from config.process_exit import discard_stdout, leave
from storage.backend import StoreFull, StoreUnavailable

if TYPE_CHECKING:
    from temporalio.client import Client

# Imported on use: `pending` should not pay for the Temporal client it never touches.
COMMANDS: dict[str, tuple[str, str]] = {
    "start": ("cli.conversations", "start"),
    "send": ("cli.conversations", "send"),
    "show": ("cli.conversations", "show"),
    "conversations": ("cli.conversations", "conversations"),
    "pending": ("cli.approvals", "pending"),
    "approve": ("cli.approvals", "decide"),
    "deny": ("cli.approvals", "decide"),
    "edit": ("cli.edit", "edit"),
    "extend": ("cli.deadlines", "extend"),
    "undo": ("cli.undo", "undo"),
    "link": ("cli.links", "link"),
    "audit": ("cli.audit", "audit"),
    "rules": ("cli.rules", "rules"),
    "stats": ("cli.stats", "stats"),
    "users": ("cli.users", "users"),
    "grants": ("cli.grants", "grants"),
    "close": ("cli.controls", "close"),
    "auto-approve": ("cli.controls", "auto_approve"),
    "move": ("cli.hosts", "move"),
    "hosts": ("cli.host_list", "hosts"),
    "watch": ("cli.watch", "watch"),
    "tools": ("cli.tools", "tools"),
    "ui": ("cli.admin", "ui"),
    "doctor": ("cli.doctor", "doctor"),
    "rebuild-projection": ("cli.admin", "rebuild_projection"),
    "collect-payloads": ("cli.admin", "collect_payloads"),
    "mcp-permissions": ("cli.mcp_permissions", "mcp_permissions"),
}


def main(argv: list[str] | None = None, client: Client | None = None) -> int:
    """Run one command; tests may pass a connected client. Returns the exit status."""
    # psycopg's pool warns of every failed connection attempt: with no logging set up, each would
    # reach stderr beside the command's one line (an unreachable database is said by StoreUnavailable).
    quiet = logging.getLogger("psycopg")
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    try:
        args = build_parser().parse_args(argv)
        from config.settings import ConfigError, Settings

        try:
            session = Session(Settings(), client)
        except (ConfigError, ValueError) as err:
            raise CliError(f"bad setting: {err}", EXIT_USAGE) from None
        from config.telemetry import setup_tracing

        setup_tracing("approvals-ui" if args.command == "ui" else "approvals-cli")
        module, name = COMMANDS[args.command]
        command = getattr(importlib.import_module(module), name)
        if inspect.iscoroutinefunction(command):
            import asyncio

            return int(asyncio.run(_run(command, args, session)))
        return int(command(args, session))
    except CliError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    except StoreFull as err:  # a write the read model's disk had no room for: said in one line
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    except StoreUnavailable as err:  # the database server is down or out of reach: nothing waits forever
        print(f"error: {err}; try again once it is back", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader stopped early (`show X | head -1`): what it read is what it wanted.
        discard_stdout()
        return EXIT_OK


async def _run(command: Any, args: Any, session: Session) -> int:
    try:
        return int(await command(args, session))
    finally:
        await session.close()


def run() -> None:
    """The process entry point; it leaves through `leave` (config/process_exit.py)."""
    try:
        code = main()
    except SystemExit as exit_:  # --help
        code = exit_.code if isinstance(exit_.code, int) else 0
    leave(code)
