"""`show REQUEST`: one approval request, whole: the call, its preview, why the agent wants it, the decision.

Read from the projection, so it answers with no worker running. Text the model or a file wrote
(arguments, the diff, the reason) is printed escaped (cli/output.py); --json carries it as it is,
the preview under `preview` (its unified diff as `preview.diff`, beside `preview.target_hash`).
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.errors import EXIT_OK, refused
from cli.output import print_json, short_time, shown, tool_call_text, tool_origin_text
from cli.temporal import Session

REQUEST_PREFIX = "perm_"  # request ids are perm_CONVERSATION_CALL (core/conversation_model.request_id_for)


def is_request_id(text: str) -> bool:
    return text.startswith(REQUEST_PREFIX)


async def show_request(args: argparse.Namespace, session: Session) -> int:
    found = await session.store().approval(args.conversation)
    if found is None:
        raise refused(f"no approval request {args.conversation}")
    if args.json:
        print_json(found)
        return EXIT_OK
    for line in request_lines(found):
        print(line)
    return EXIT_OK


def request_lines(approval: dict[str, Any]) -> list[str]:
    lines = [
        f"Request {shown(approval['request_id'])}: {approval['status']}",
        f"  conversation: {shown(approval['conversation_id'])}",
        f"  tool: {tool_origin_text(approval['tool'])}",
        f"  call: {tool_call_text(approval['tool_name'], approval['arguments'])}",
        f"  asked: {short_time(approval['created_at'])}  expires: {short_time(approval['expires_at'])}",
    ]
    if approval.get("edited_arguments") is not None:
        lines.append(f"  ran as edited: {tool_call_text(approval['tool_name'], approval['edited_arguments'])}")
    if approval["status"] == "resolved":
        reason = f": {shown(approval['reason'])}" if approval.get("reason") else ""
        lines.append(f"  decision: {approval['decision']} by {shown(approval['decided_by'])}{reason}")
        lines.append(f"  outcome: {approval['outcome']}")
    if approval.get("reasked_as"):
        lines.append(f"  asked again as: {shown(approval['reasked_as'])}")
    lines += prescreen_lines(approval.get("prescreen"))
    lines += why_lines(approval.get("why"))
    lines += preview_lines(approval.get("preview"))
    return lines


def prescreen_lines(said: dict[str, Any] | None) -> list[str]:
    """`pre-screen (MODEL, 812 ms): ask: REASON` (and why it failed, when it did)."""
    if not said:
        return []
    asked = f"  pre-screen ({shown(said['model'])}, {said['latency_ms']:.0f} ms)"
    line = f"{asked}: {said['verdict']}: {shown(said['reason'])}"
    return [line] + ([f"    it failed: {shown(said['error'])}"] if said.get("error") else [])


def why_lines(why: dict[str, Any] | None) -> list[str]:
    if not why:
        return []
    lines = ["", "Why:"]
    for key, label in (("parent_task", "parent's task"), ("user_message", "user asked"), ("assistant_text", "said")):
        if why.get(key):
            lines.append(f"  {label}: {shown(why[key], keep_newlines=True)}")
    for item in why.get("earlier", []):
        reason = f": {shown(item['reason'])}" if item.get("reason") else ""
        by = shown(item.get("decided_by") or "unknown")
        lines.append(f"  earlier: {shown(item['tool_name'])} {item['resolution']} by {by}{reason}")
    return lines


def preview_lines(preview: dict[str, Any] | None) -> list[str]:
    if not preview:
        return []
    lines = ["", f"Preview: {shown(preview['summary'])}"]
    for key in ("changed_since", "note", "rule"):
        if preview.get(key):
            lines.append(f"  {key.replace('_', ' ')}: {shown(preview[key])}")
    for word in preview.get("words", []):
        lines.append(f"  command: {shown(word)}")
    if preview.get("target_hash"):
        lines.append(f"  bound to: {preview['target_hash']}")
    if preview.get("diff"):
        lines += ["", *(shown(line) for line in preview["diff"].splitlines())]
    if preview.get("dry_run"):
        lines += ["", "  the tool's own dry run:", *(f"    {shown(line)}" for line in preview["dry_run"].splitlines())]
    return lines
