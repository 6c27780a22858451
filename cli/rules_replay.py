"""`rules replay --policy NEW.toml [--since 30d] [--json]`: every recorded decision judged again
under NEW's rules (core/policy_replay.py), before anyone adopts them.

It reads the projection only: no model, no Temporal, no worker. The calls a person refused that
NEW would let run without one come first and are flagged; then the calls NEW would deny that
people approved, and the counts per tool and per rule of NEW.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.errors import EXIT_OK, EXIT_USAGE, CliError
from cli.output import print_json, shown, table, tool_call_text
from cli.rules import since_of
from cli.temporal import Session

if TYPE_CHECKING:
    from core.policy_rules import PolicyRules


def load_new_policy(path: str) -> PolicyRules:
    """The rules of the file `--policy` names; a missing or invalid file is bad usage (exit 2)."""
    from config.errors import ConfigError
    from config.policy_file import PolicyFile

    try:
        text = Path(path).read_text()
    except OSError as err:
        raise CliError(f"--policy {path}: cannot be read: {err.strerror or err}", EXIT_USAGE) from None
    try:
        return PolicyFile(path, text).rules
    except ConfigError as err:
        raise CliError(str(err).replace(f"POLICY_FILE {path}", f"--policy {path}", 1), EXIT_USAGE) from None


async def replay(args: argparse.Namespace, session: Session) -> int:
    from core.policy_replay import replay as replay_rows

    rules = load_new_policy(args.policy)
    since = since_of(args)
    report = replay_rows(await session.store().audit(since), rules).as_dict()
    if args.json:
        print_json(report)
        return EXIT_OK
    print(_summary(report, args.policy))
    for shadow in report["shadowed_allow_rules"]:
        print(
            f"Blocked: allow rule {shadow['allow']!r} never takes effect: ask rule {shadow['ask']!r}"
            " matches every call it allows, and an ask outranks every allow."
        )
    flagged = report["allowed_but_denied_by_a_person"]
    if flagged:
        print(f"\nFLAGGED: {len(flagged)} call(s) a person refused that {args.policy} would let run without one:")
        print(_calls(flagged, "WHY", lambda item: item["why"]))
    approved = report["denied_but_approved"]
    if approved:
        print(f"\n{len(approved)} call(s) people approved that {args.policy} would deny:")
        print(_calls(approved, "DECIDED BY", lambda item: str(item["decided_by"] or "-")))
    tools = report["by_tool"]
    print("\nPer tool:")
    print(
        table(
            ["TOOL", "RECORDED", "ASKED UNDER NEW", "ALLOWED", "DENIED"],
            [
                [tool, counts["recorded"], counts["ask_under_new"], counts["allow_under_new"], counts["deny_under_new"]]
                for tool, counts in tools.items()
            ],
        )
    )
    print("\nPer rule of the new policy:")
    print(
        table(
            ["RULE", "VERDICT", "CALLS", "APPROVED BY PEOPLE", "REFUSED BY PEOPLE"],
            [[shown(r["rule"]), r["verdict"], r["calls"], r["approved"], r["refused"]] for r in report["by_pattern"]],
        )
    )
    print(f"\nNothing was changed. Only asked calls are recorded: {report['not_replayed']}.")
    return EXIT_OK


def _summary(report: dict[str, Any], policy: str) -> str:
    line = (
        f"{report['recorded']} recorded request(s), {report['asked_before']} asked; under {policy}:"
        f" {report['asked_under_new']} asked, {report['allowed_under_new']} allowed,"
        f" {report['denied_under_new']} denied ({report['prompts_saved']} prompt(s) saved)."
    )
    if report["judged_by_name_only"]:
        line += f" {report['judged_by_name_only']} call(s) of tools outside the built-in catalog judged by name only."
    return line


def _calls(items: list[dict[str, Any]], last: str, value: Any) -> str:
    return table(
        ["REQUEST", "CALL", "DECISION", "RULE", last],
        [
            [
                item["request_id"],
                tool_call_text(item["tool"], item["arguments"]),
                item["decision"],
                item["rule"],
                value(item),
            ]
            for item in items
        ],
    )
