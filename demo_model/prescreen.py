"""The scripted demo model's pre-screen: a request whose tool_choice names prescreen_verdict gets a
scripted verdict, so `make run` shows the pre-screen without a real model.

A few fixed rules, no judgement: `allow` for calls that look read-only (reading or listing files, a
command every part of which starts with a reading or testing command), `deny` for a few clearly
dangerous ones (a pipe into a shell, `rm -rf /` or `~`, a forced push, `chmod 777`, a write to
.git/hooks or ~/.bashrc, a .env sent with curl or scp), `ask` for everything else. The reason says
it is scripted, so nobody takes it for a model's judgement.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.policy import shell_segments
from core.prescreen import ARGUMENTS_BLOCK, PRESCREEN_TOOL, read_data_block
from core.prescreen_verdict import PrescreenAnswer
from demo_model.server import tool_reply

READ_ONLY_TOOLS = frozenset(["read_file", "list_dir"])
# A simple command that starts with one of these reads or tests, and writes nothing we care about.
READ_ONLY_COMMANDS = (
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "git status",
    "git diff",
    "git log",
    "git show",
    "pytest",
    "npm test",
    "make test",
)
RUN_BY_OTHERS = r"(?:\.git/hooks/|(?:^|[\s/~])\.bashrc\b)"
# (what it is, the pattern) for commands; the first that matches anywhere denies.
DANGEROUS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pipes into a shell", re.compile(r"\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b")),
    ("deletes / or the home directory", re.compile(r"\brm\s+(?:-\S+\s+)+(?:/|~|\$HOME)/?\*?(?=[\s;&|)]|$)")),
    ("force-pushes", re.compile(r"\bgit\s+push\b.*(?:\s--force\b|\s--force-with-lease\b|\s-f\b|\s\+\S)")),
    ("makes files writable by everyone", re.compile(r"\bchmod\s+(?:-\S+\s+)*0?777\b")),
    ("writes a file other programs run", re.compile(rf"(?:>|\btee\b|\bcp\b|\bmv\b|\bln\b).*{RUN_BY_OTHERS}")),
    ("sends a .env file away", re.compile(r"\b(?:curl|scp|rsync|wget)\b.*(?:^|[\s@=/:])\.env\b")),
)


def is_prescreen_request(body: dict[str, Any]) -> bool:
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and (choice.get("function") or {}).get("name") == PRESCREEN_TOOL


def _the_call(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The tool name and arguments the request asks about (its last user message)."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    text = str(users[-1].get("content") or "") if users else ""
    name = re.match(r"Tool: (\S+)", text)
    block = read_data_block(text, ARGUMENTS_BLOCK)
    if name is None or block is None:
        return None
    try:
        arguments = json.loads(block)
    except json.JSONDecodeError:
        return None
    return (name[1], arguments) if isinstance(arguments, dict) else None


def _read_only(command: str) -> bool:
    if ">" in command:  # a redirection writes a file
        return False
    return all(
        any(part == start or part.startswith(start + " ") for start in READ_ONLY_COMMANDS)
        for part in shell_segments(command)
    )


def scripted_verdict(tool: str, arguments: dict[str, Any]) -> tuple[PrescreenAnswer, str]:
    """The verdict and why, by the fixed rules above."""
    if tool in READ_ONLY_TOOLS:
        return "allow", f"{tool} only reads"
    if tool == "write_file":
        path = str(arguments.get("path", ""))
        if re.search(RUN_BY_OTHERS, path):
            return "deny", f"writes {path}, a file other programs run by themselves"
        return "ask", "a file write: a person decides"
    if tool != "run_shell":
        return "ask", f"{tool} is not one the script knows"
    command = str(arguments.get("command", ""))
    for what, pattern in DANGEROUS:
        if pattern.search(command):
            return "deny", f"the command {what}"
    if _read_only(command):
        return "allow", "the command only reads or runs tests"
    return "ask", "the command may change something: a person decides"


def prescreen_reply(body: dict[str, Any], label: str) -> dict[str, Any]:
    """The forced prescreen_verdict call; a request it cannot read is an `ask`."""
    call = _the_call(body)
    if call is None:
        verdict, why = "ask", "the request names no call the script can read"
    else:
        verdict, why = scripted_verdict(*call)
    return tool_reply(("call_prescreen", PRESCREEN_TOOL, {"verdict": verdict, "reason": f"{label} {why}"}))
