"""The arguments of `grants` and of `approve --grant`: kept here so cli/parser.py grows by two calls."""

from __future__ import annotations

import argparse
from typing import Any

from cli.parser import duration, text


def add_grant_options(approve: argparse.ArgumentParser) -> None:
    """`approve REQUEST_ID --grant PATTERN [--for DURATION] [--everywhere]`."""
    approve.add_argument(
        "--grant",
        metavar="PATTERN",
        type=text,
        help="also allow calls like this one: a rule the call matches, e.g. 'run_shell(git status*)'",
    )
    lifetime = "with --grant: for this long (2h, 1d; default: until revoked)"
    approve.add_argument("--for", dest="grant_for", metavar="DURATION", type=duration, help=lifetime)
    approve.add_argument(
        "--everywhere", action="store_true", help="with --grant: in every conversation (default: this one)"
    )


def add_grants_verb(verbs: argparse._SubParsersAction[Any]) -> None:
    """`grants add|list|revoke`: a person's standing "allow calls like this"."""
    grants = verbs.add_parser("grants", help="allow calls like one you read: a rule, a scope, a lifetime")
    actions = grants.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="allow the calls a rule pattern covers; approves those already waiting")
    add.add_argument("pattern", metavar="PATTERN", type=text, help="e.g. 'write_file(docs/**)', 'mcp__git__git_*'")
    scope = add.add_mutually_exclusive_group(required=True)
    scope.add_argument("--conversation", type=text, metavar="ID", help="in this conversation and its subagents")
    scope.add_argument("--everywhere", action="store_true", help="in every conversation")
    lifetime = "for this long: 30m, 2h, 7d (default: until revoked)"
    add.add_argument("--for", dest="grant_for", metavar="DURATION", type=duration, help=lifetime)
    add.add_argument("--as", dest="decided_by", metavar="NAME", type=text, help="who grants (default: your login)")
    add.add_argument("--json", action="store_true", help="one JSON document on stdout")
    listing = actions.add_parser("list", help="the active grants (with --all, the ended ones too)")
    listing.add_argument("--all", action="store_true", help="also the revoked and expired ones")
    listing.add_argument("--json", action="store_true", help="one JSON document on stdout")
    revoke = actions.add_parser("revoke", help="end a grant now (an --always one: the conversation forgets it)")
    revoke.add_argument("grant_id", metavar="GRANT_ID", type=text)
    revoke.add_argument("--as", dest="decided_by", metavar="NAME", type=text, help="who revokes (default: your login)")
    revoke.add_argument("--json", action="store_true", help="one JSON document on stdout")
