"""The argument parser: the verbs of CONTRACT.md, and usage errors in one line (exit 2)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from cli.errors import EXIT_USAGE, CliError


class OneLineParser(argparse.ArgumentParser):
    """argparse prints the whole usage on an error; a script wants one line it can read."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{self.prog}: {message} (see --help)", EXIT_USAGE)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _paging(command: argparse.ArgumentParser) -> None:
    command.add_argument("--limit", type=_positive, help="at most this many rows (default: all)")
    command.add_argument("--after", metavar="CURSOR", help="the page after this cursor (printed after a page)")


def build_parser() -> OneLineParser:
    parser = OneLineParser(prog="starter.py", description="Durable tool approvals for AI agents, on Temporal.")
    verbs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    start = verbs.add_parser("start", help="start a conversation with its first message; prints its id")
    start.add_argument("--id", help="the conversation id (default: a new one)")
    start.add_argument("message")

    send = verbs.add_parser("send", help="send a message to a conversation")
    send.add_argument("conversation")
    send.add_argument("message")

    show = verbs.add_parser("show", help="a conversation's transcript and status")
    show.add_argument("conversation")
    show.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for a worker to answer")
    show.add_argument("--json", action="store_true", help="one JSON document on stdout")

    listing = verbs.add_parser("conversations", help="every conversation with its status, newest first")
    listing.add_argument("--json", action="store_true", help="one JSON document on stdout")
    listing.add_argument("--status", help="only conversations in this turn status (e.g. awaiting_approval)")
    _paging(listing)

    pending = verbs.add_parser("pending", help="approvals that wait for a decision (works with no worker)")
    pending.add_argument("--conversation", help="only this conversation's")
    pending.add_argument("--json", action="store_true", help="one JSON document on stdout")
    _paging(pending)

    for verb, help_text in (("approve", "allow a pending tool call"), ("deny", "deny a pending tool call")):
        decide = verbs.add_parser(verb, help=help_text)
        decide.add_argument("request_id", metavar="REQUEST_ID")
        if verb == "approve":
            decide.add_argument("--always", action="store_true", help="also allow this tool for the conversation")
        decide.add_argument("--reason", help="why; a denial's reason reaches the model")
        decide.add_argument("--as", dest="decided_by", metavar="NAME", help="who decides (default: your login)")
        decide.add_argument("--conversation", help="refuse unless the request belongs to this conversation")

    watch = verbs.add_parser("watch", help="follow a conversation until it idles or waits")
    watch.add_argument("conversation")
    watch.add_argument("--follow", action="store_true", help="keep following until Ctrl-C")

    verbs.add_parser("ui", help="serve the approvals UI")
    rebuild = verbs.add_parser("rebuild-projection", help="rebuild the projection from Temporal's history")
    rebuild.add_argument("--json", action="store_true", help="one JSON document on stdout")
    return parser
