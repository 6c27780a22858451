"""The scripted demo model: plain keyword requests in, tool calls or a quoting answer out.

Deterministic, so every path of the approval loop (allow, deny, always-allow, several calls in
one message) can be shown and tested without an API key or the internet. Every answer says it
comes from the scripted demo model, so nobody mistakes it for a real LLM.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.compaction import is_summary_request
from demo_model.prescreen import is_prescreen_request, prescreen_reply
from demo_model.server import text_reply, tool_reply

LABEL = "(scripted demo model)"
HELP = (
    f"{LABEL} I only understand a few plain requests: 'list the files', 'read notes.txt', "
    "'write hello to notes.txt', 'run echo hi', 'use TOOL {json arguments}' for any offered tool, "
    "or several joined by 'and' or 'then', "
    "e.g. 'write hi to a.txt and write bye to b.txt'."
)

# One pattern per tool; the first that matches the whole request wins.
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:please\s+)?list\s+(?:the\s+|all\s+)?files?(?:\s+in\s+(?P<path>\S+))?$", re.I), "list_dir"),
    (re.compile(r"^(?:please\s+)?ls(?:\s+(?P<path>\S+))?$", re.I), "list_dir"),
    (re.compile(r"^(?:please\s+)?(?:read|cat|show)\s+(?:the\s+file\s+)?(?P<path>\S+)$", re.I), "read_file"),
    (re.compile(r"^(?:please\s+)?write\s+(?P<content>.+?)\s+(?:to|into)\s+(?P<path>\S+)$", re.I | re.S), "write_file"),
    (re.compile(r"^(?:please\s+)?(?:run|execute)\s+(?P<command>.+)$", re.I | re.S), "run_shell"),
    # Any offered tool by name: `use mcp__git__git_status {"repo_path": "."}`.
    (re.compile(r"^use\s+(?P<tool>[A-Za-z0-9_.-]+)(?:\s+(?P<arguments>\{.*\}))?$", re.I | re.S), "use"),
]
_SEPARATORS = re.compile(r"\s*(?:;|,?\s+and\s+then\s+|,?\s+then\s+|,?\s+and\s+)\s*", re.I)


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        return text[1:-1]
    return text


def _arguments(text: str | None) -> Any:
    """The JSON object as given; text that is not JSON goes to the tool as is, to be refused there."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_request(text: str) -> tuple[str, dict[str, Any]] | None:
    """One plain request to one tool call, or None when no pattern matches."""
    text = text.strip().rstrip(".!").strip()
    for pattern, tool in _PATTERNS:
        match = pattern.match(text)
        if match is None:
            continue
        if tool == "list_dir":
            return tool, {"path": match["path"] or "."}
        if tool == "read_file":
            return tool, {"path": _unquote(match["path"])}
        if tool == "use":
            return match["tool"], _arguments(match["arguments"])
        if tool == "write_file":
            return tool, {"path": _unquote(match["path"]), "content": _unquote(match["content"])}
        return tool, {"command": _unquote(match["command"])}
    return None


def plan_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The whole text as one request first; else every part joined by 'and'/'then'/';' must parse."""
    whole = parse_request(text)
    if whole is not None and not _SEPARATORS.search(text.strip()):
        return [whole]
    parts = [part for part in _SEPARATORS.split(text.strip()) if part]
    planned = [parse_request(part) for part in parts]
    if len(parts) > 1 and all(call is not None for call in planned):
        return [call for call in planned if call is not None]
    return [whole] if whole is not None else []


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool name, result) for the tool messages after the last assistant message."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(message)
    results.reverse()
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    return [(names.get(str(m.get("tool_call_id")), "tool"), str(m.get("content") or "")) for m in results]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def scripted_summary(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer to a compaction's summarise request: the person's requests and a count of tool
    results, quoted from the request (a real model would write prose)."""
    text = str(messages[-1].get("content") or "") if messages else ""
    previous = ""
    if text.startswith("Summary so far:\n"):
        previous = text[len("Summary so far:\n") :].split("\n\nMessages to fold", 1)[0]
        previous = previous.removeprefix(f"{LABEL} ")[:300]
    asked = [line[len("user: ") :][:80] for line in text.splitlines() if line.startswith("user: ")]
    results = sum(1 for line in text.splitlines() if line.startswith("tool "))
    parts = [LABEL, f"Earlier: {previous}" if previous else "", f"The person asked: {' | '.join(asked) or 'nothing'}."]
    parts.append(f"{results} tool result(s) were folded.")
    return text_reply(" ".join(part for part in parts if part))


def respond(body: dict[str, Any]) -> dict[str, Any]:
    """The Responder for ScriptedModelServer: a function of the request only (the transcript, and
    the tool_choice of a pre-screen)."""
    messages: list[dict[str, Any]] = body.get("messages") or []
    if is_prescreen_request(body):
        return prescreen_reply(body, LABEL)
    if is_summary_request(messages):
        return scripted_summary(messages)
    if messages and messages[-1].get("role") == "tool":
        quoted = "\n".join(f"- {name}: {content!r}" for name, content in _tool_results(messages))
        return text_reply(f"{LABEL} Here is what the tools returned:\n{quoted}")
    calls = plan_calls(_last_user_text(messages))
    if not calls:
        return text_reply(HELP)
    numbered = [(f"call_{n}", name, args) for n, (name, args) in enumerate(calls, start=1)]
    summary = ", ".join(name for name, _ in calls)
    return tool_reply(*numbered, text=f"{LABEL} I will use: {summary}.")
