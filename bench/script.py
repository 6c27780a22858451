"""The scripted model every scenario talks to, and the approved tool it asks for.

On a user message the model asks for one `run_shell` call that appends the conversation's tag
to `ran.log` in the workspace; after the tool result it answers with text. The appended lines
are the proof of how many times each approved tool really ran.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from core.compaction import is_summary_request
from demo_model.script import scripted_summary
from demo_model.server import ScriptedModelServer, text_reply, tool_reply

RAN_LOG = "ran.log"
# The history scenario's conversations also read a source file each turn: realistic tool output.
READ_PREFIX = "hist-"
READ_FILE = "source.py"
READ_BYTES = 4096


def user_text(tag: str) -> str:
    return f"bench task {tag}"


def tag_of(text: str) -> str:
    return text.removeprefix("bench task ")


def shell_command(tag: str) -> str:
    return f"echo {tag} >> {RAN_LOG}"


def mcp_text(tag: str, repo: str) -> str:
    """Asks for mcp-server-git's git_create_branch (not read-only: asked, and run at most once)."""
    return f"bench mcp {tag} {repo}"


# The preview scenario's conversations overwrite a 100 KB file, changing one line of it.
PREVIEW_PREFIX = "preview-"
PREVIEW_FILE = "big.txt"
PREVIEW_LINES = 2000  # of 51 bytes each: 102,000 bytes


def preview_file_text(changed: bool = False) -> str:
    lines = [
        f"line {n:05d} of the file the approved write replaces, padded.\n"[:50] + "\n" for n in range(PREVIEW_LINES)
    ]
    if changed:
        lines[PREVIEW_LINES // 2] = "this line is the one the model changes, padded out."[:50] + "\n"
    return "".join(lines)


def respond(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    if is_summary_request(messages):  # a compaction: the demo model's scripted summary
        return scripted_summary(messages)
    last = messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith("bench mcp "):
        _, _, tag, repo = str(last["content"]).split(" ", 3)
        arguments = {"repo_path": repo, "branch_name": tag}
        return tool_reply(("call_1", "mcp__git__git_create_branch", arguments))
    if last["role"] == "user" and tag_of(str(last["content"])).startswith(PREVIEW_PREFIX):
        return tool_reply(("call_1", "write_file", {"path": PREVIEW_FILE, "content": preview_file_text(True)}))
    if last["role"] == "user":
        tag = tag_of(str(last["content"]))
        shell = ("call_1", "run_shell", {"command": shell_command(tag)})
        if tag.startswith(READ_PREFIX):
            return tool_reply(("call_0", "read_file", {"path": READ_FILE}), shell)
        return tool_reply(shell)
    return text_reply(f"done: {str(last.get('content', ''))[:40]}")


def source_text() -> str:
    """The first READ_BYTES of the project's own workflow module: what a coding agent reads."""
    path = Path(__file__).resolve().parent.parent / "workflows" / "conversation.py"
    return path.read_text()[:READ_BYTES]


def start_model() -> ScriptedModelServer:
    """The scripted server (its accept queue takes bursts of concurrent model calls)."""
    return ScriptedModelServer(respond).start()


def requests_per_tag(server: ScriptedModelServer) -> Counter[str]:
    """How many times the model was asked for an assistant message, per conversation tag (its last
    user message); a compaction's summarise requests are counted by summary_requests."""
    counts: Counter[str] = Counter()
    for body in list(server.requests):
        if is_summary_request(body["messages"]):
            continue
        users = [m for m in body["messages"] if m["role"] == "user"]
        if users:
            counts[tag_of(str(users[-1]["content"]))] += 1
    return counts


def summary_requests(server: ScriptedModelServer) -> int:
    return sum(1 for body in list(server.requests) if is_summary_request(body["messages"]))
