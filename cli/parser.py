"""The argument parser: the verbs the README lists, and usage errors in one line (exit 2)."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from cli.errors import EXIT_USAGE, CliError
from cli.supplied import SUPPLY_HELP, supply_name
from core.email_address import checked_address
from core.ids import InvalidConversationId, check_conversation_id


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


MAX_TIMEOUT_SECONDS = 24 * 3600.0


def text(value: str) -> str:
    """An id, name or message: anything but empty or only spaces."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def email_address(value: str) -> str:
    try:
        return checked_address(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def seconds(value: str) -> float:
    """A timeout: a finite number of seconds above zero, at most a day."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(number) or not 0 < number <= MAX_TIMEOUT_SECONDS:
        raise argparse.ArgumentTypeError(f"{value} must be above 0 and at most {MAX_TIMEOUT_SECONDS:g} seconds")
    return number


DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_EXTENSION_SECONDS = 30 * 86400.0


def duration(value: str) -> float:
    """An extension: seconds, or a number with s, m, h or d; above zero and at most 30 days."""
    unit = DURATION_UNITS.get(value[-1:].lower(), 0)
    number = value[:-1] if unit else value
    try:
        amount = float(number) * (unit or 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a duration (3600, 30m, 12h, 7d)") from None
    if not math.isfinite(amount) or not 0 < amount <= MAX_EXTENSION_SECONDS:
        raise argparse.ArgumentTypeError(f"{value} must be above 0 and at most 30 days")
    return amount


def build_parser() -> OneLineParser:
    from cli.grant_parser import add_grant_options, add_grants_verb

    parser = OneLineParser(prog="starter.py", description="Durable tool approvals for AI agents, on Temporal.")
    verbs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    start = verbs.add_parser("start", help="start a conversation with its first message; prints its id")
    start.add_argument(
        "--id", type=_conversation_id, help="the conversation id: letters, digits, '-', '.' (default: a new one)"
    )
    start.add_argument("message", type=text)

    send = verbs.add_parser("send", help="send a message to a conversation")
    send.add_argument("conversation", type=text)
    send.add_argument("message", type=text)

    show = verbs.add_parser("show", help="a conversation's transcript and status, or one request (perm_...) whole")
    show.add_argument("conversation", type=text, metavar="CONVERSATION_OR_REQUEST")
    show.add_argument("--timeout", type=seconds, default=5.0, help="seconds to wait for a worker to answer")
    show.add_argument("--json", action="store_true", help="one JSON document on stdout")

    listing = verbs.add_parser("conversations", help="every conversation with its status, newest first")
    listing.add_argument("--json", action="store_true", help="one JSON document on stdout")
    listing.add_argument("--status", help="only conversations in this turn status (e.g. awaiting_approval)")
    _paging(listing)

    pending = verbs.add_parser("pending", help="approvals that wait for a decision (works with no worker)")
    pending.add_argument("--conversation", type=text, help="only this conversation's")
    pending.add_argument("--json", action="store_true", help="one JSON document on stdout")
    _paging(pending)

    for verb, help_text in (("approve", "allow a pending tool call"), ("deny", "deny a pending tool call")):
        decide = verbs.add_parser(verb, help=help_text)
        decide.add_argument(
            "request_ids", metavar="REQUEST_ID", type=text, nargs="+", help="one request, or several as one batch"
        )
        if verb == "approve":
            decide.add_argument("--always", action="store_true", help="also allow this tool for the conversation")
            add_grant_options(decide)
            decide.add_argument("--supply", metavar="NAME=-", type=supply_name, action="append", help=SUPPLY_HELP)
        decide.add_argument("--reason", help="why; a denial's reason reaches the model")
        decide.add_argument(
            "--as", dest="decided_by", metavar="NAME", type=text, help="who decides (default: your login)"
        )
        decide.add_argument("--conversation", type=text, help="refuse unless the request belongs to this conversation")
        decide.add_argument(
            "--args-hash",
            type=text,
            help="refuse as stale unless the call's arguments still have this hash (shown by `pending`)",
        )

    edit = verbs.add_parser("edit", help="approve a pending tool call with arguments you changed")
    edit.add_argument("request_id", metavar="REQUEST_ID", type=text)
    edit.add_argument("--set", dest="changes", metavar="NAME=VALUE", action="append", help="change one argument")
    edit.add_argument("--args", dest="arguments", metavar="JSON", help="the whole new arguments object")
    edit.add_argument("--reason", help="why; the model reads it with the result")
    edit.add_argument("--as", dest="decided_by", metavar="NAME", type=text, help="who decides (default: your login)")
    edit.add_argument("--conversation", type=text, help="refuse unless the request belongs to this conversation")
    edit.add_argument("--args-hash", type=text, help="refuse as stale unless the shown arguments still have this hash")
    edit.add_argument("--supply", metavar="NAME=-", type=supply_name, action="append", help=SUPPLY_HELP)

    extend = verbs.add_parser("extend", help="give a waiting request more time (who may decide it may extend it)")
    extend.add_argument("request_id", metavar="REQUEST_ID", type=text)
    extend.add_argument("--by", type=duration, required=True, help="how much longer: seconds, or 30m, 12h, 7d")
    extend.add_argument("--reason", help="why; recorded with the extension")
    extend.add_argument("--as", dest="decided_by", metavar="NAME", type=text, help="who extends (default: your login)")

    link = verbs.add_parser("link", help="print a person's one-time link to decide a pending request (GET shows it)")
    link.add_argument("request_id", metavar="REQUEST_ID", type=text)
    link.add_argument("--for", dest="person", metavar="NAME", type=text, required=True, help="who decides through it")
    link.add_argument("--json", action="store_true", help="one JSON document on stdout")

    undo = verbs.add_parser("undo", help="ask to restore what an approved write_file replaced (itself approved)")
    undo.add_argument("request_id", metavar="REQUEST_ID", type=text)
    undo.add_argument("--as", dest="decided_by", metavar="NAME", type=text, help="who asks (default: your login)")

    audit = verbs.add_parser("audit", help="every approval request and decision: who, via which door, outcome")
    audit.add_argument("--since", type=text, help="only requests made or decided since: 30m, 12h, 7d or an ISO time")
    audit.add_argument("--json", action="store_true", help="one JSON document on stdout")

    stats = verbs.add_parser("stats", help="how approvals go: time to decision, approval rate, who decides")
    stats.add_argument("--since", type=text, help="only requests made or decided since: 30m, 12h, 7d or an ISO time")
    stats.add_argument("--json", action="store_true", help="one JSON document on stdout")

    rules = verbs.add_parser("rules", help="permission rules: suggested and tried on the audit, or reloaded")
    rule_actions = rules.add_subparsers(dest="action", metavar="ACTION", required=True)
    suggest = rule_actions.add_parser("suggest", help="allow rules for calls people approve every time, quickly")
    suggest.add_argument("--since", type=text, help="only the audit since: 30m, 12h, 7d or an ISO time")
    suggest.add_argument("--min-count", type=_positive, default=20, help="approvals a rule must cover (20)")
    suggest.add_argument("--max-median", type=seconds, default=5.0, help="median seconds to decide, at most (5)")
    suggest.add_argument("--json", action="store_true", help="one JSON document on stdout")
    replay = rule_actions.add_parser(
        "replay", help="every recorded decision judged again under another policy file (nothing is applied)"
    )
    replay.add_argument("--policy", required=True, type=text, metavar="FILE", help="the policy file to try (TOML)")
    replay.add_argument("--since", type=text, help="only the audit since: 30m, 12h, 7d or an ISO time")
    replay.add_argument("--json", action="store_true", help="one JSON document on stdout")
    rule_actions.add_parser(
        "reload", help="send POLICY_FILE's rules to every open conversation; waiting requests are judged again"
    )
    shadow = rule_actions.add_parser("shadow", help="calls the [shadow] rules judged otherwise than the live ones")
    shadow.add_argument("--since", type=text, help="only since: 30m, 12h, 7d or an ISO time")
    shadow.add_argument("--json", action="store_true", help="one JSON document on stdout")

    people = verbs.add_parser("users", help="the people who approve: personal tokens and groups")
    actions = people.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a person; prints their token once")
    add.add_argument("name", type=text)
    add.add_argument("--group", dest="groups", action="append", type=text, help="a group (repeat for several)")
    add.add_argument(
        "--asker", action="store_true", help="a token that may only ask (POST /api/requests), never decide"
    )
    add.add_argument("--email", type=email_address, help="where email channels reach them")
    mail = actions.add_parser("email", help="set (or with --clear, remove) a person's email")
    mail.add_argument("name", type=text)
    mail_to = mail.add_mutually_exclusive_group(required=True)
    mail_to.add_argument("address", nargs="?", type=email_address, help="their address")
    mail_to.add_argument("--clear", action="store_true", help="no email: mail channels no longer reach them")
    remove = actions.add_parser("remove", help="remove a person; their token stops working")
    remove.add_argument("name", type=text)
    listing_users = actions.add_parser("list", help="every person and their groups")
    listing_users.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_grants_verb(verbs)

    close = verbs.add_parser("close", help="end a conversation; its waiting approvals are canceled")
    close.add_argument("conversation", type=text)

    moving = verbs.add_parser("move", help="run a conversation's tools on another host (its own host is gone)")
    moving.add_argument("conversation", type=text)
    moving.add_argument("--to", required=True, type=text, metavar="HOST", help="the WORKER_HOST of a worker that is up")

    hosts = verbs.add_parser("hosts", help="every worker host: its last poll, its conversations, tools waiting for it")
    hosts.add_argument("--timeout", type=seconds, default=5.0, help="seconds to wait for Temporal's last polls")
    hosts.add_argument("--json", action="store_true", help="one JSON document on stdout")

    auto = verbs.add_parser("auto-approve", help="switch a conversation's auto-approve mode (deny rules still apply)")
    auto.add_argument("conversation", type=text)
    auto.add_argument("mode", choices=["on", "off"])

    watch = verbs.add_parser("watch", help="follow a conversation until it idles or waits")
    watch.add_argument("conversation", type=text)
    watch.add_argument("--follow", action="store_true", help="keep following until Ctrl-C")

    tools = verbs.add_parser("tools", help="every tool: its source, permission type and the rule that applies")
    tools.add_argument("--json", action="store_true", help="one JSON document on stdout")

    verbs.add_parser("ui", help="serve the approvals UI")
    verbs.add_parser("doctor", help="try the model endpoint as a conversation would; say which settings it needs")
    rebuild = verbs.add_parser("rebuild-projection", help="rebuild the projection from Temporal's history")
    rebuild.add_argument("--json", action="store_true", help="one JSON document on stdout")
    collect = verbs.add_parser(
        "collect-payloads",
        help="delete payload-store files no live workflow refers to (PAYLOAD_STORE_RETENTION_SECONDS)",
    )
    collect.add_argument("--json", action="store_true", help="one JSON document on stdout")
    verbs.add_parser(
        "mcp-permissions", help="serve Claude Code's permission prompts as approval requests (MCP over stdio)"
    )
    return parser


def _conversation_id(value: str) -> str:
    try:
        return check_conversation_id(value)
    except InvalidConversationId as err:
        raise argparse.ArgumentTypeError(str(err)) from None
