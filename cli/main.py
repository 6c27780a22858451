"""Dispatch a command line to its command, map every failure to an exit status, exit safely."""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cli import admin, approvals, conversations, watch
from cli.errors import EXIT_USAGE, CliError
from cli.parser import build_parser
from cli.temporal import Session

if TYPE_CHECKING:
    from temporalio.client import Client

COMMANDS: dict[str, Callable[..., Any]] = {
    "start": conversations.start,
    "send": conversations.send,
    "show": conversations.show,
    "conversations": conversations.conversations,
    "pending": approvals.pending,
    "approve": approvals.decide,
    "deny": approvals.decide,
    "watch": watch.watch,
    "ui": admin.ui,
    "rebuild-projection": admin.rebuild_projection,
}


def main(argv: list[str] | None = None, client: Client | None = None) -> int:
    """Run one command; tests may pass a connected client. Returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
        from settings import ConfigError, Settings

        try:
            session = Session(Settings(), client)
        except (ConfigError, ValueError) as err:
            raise CliError(f"bad setting: {err}", EXIT_USAGE) from None
        command = COMMANDS[args.command]
        if inspect.iscoroutinefunction(command):
            return int(asyncio.run(command(args, session)))
        return int(command(args, session))
    except CliError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """The process entry point. A process that used the Temporal client can crash in interpreter
    finalisation (sdk-python issue #300), so flush and leave with os._exit once the work is done."""
    try:
        code = main()
    except SystemExit as exit_:  # --help
        code = exit_.code if isinstance(exit_.code, int) else 0
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
