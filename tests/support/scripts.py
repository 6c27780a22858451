"""Scripted model behaviours for the tests: functions of the transcript, counted per request."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from core.compaction import is_summary_request
from demo_model.script import scripted_summary
from demo_model.server import ScriptedModelServer, text_reply, tool_reply

Behaviour = Callable[[list[dict[str, Any]]], dict[str, Any]]


def last_role(messages: list[dict[str, Any]]) -> str:
    return str(messages[-1]["role"])


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool messages after the last assistant message."""
    out: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        out.append(message)
    return list(reversed(out))


def first_user_text(messages: list[dict[str, Any]]) -> str:
    return next(str(m["content"]) for m in messages if m["role"] == "user")


def calls_then_summary(*calls: tuple[str, str, dict[str, Any] | str]) -> Behaviour:
    """On a user message: the given tool calls. After tool results: a text quoting each of them."""

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if last_role(messages) == "user":
            return tool_reply(*calls)
        return text_reply("results: " + " | ".join(str(m["content"]) for m in tool_results(messages)))

    return behave


class ScriptedModel:
    """Holds the behaviour a test sets; counts requests through the HTTP server. A compaction's
    summarise request goes to `summariser` (the demo model's scripted summary unless a test sets one)."""

    def __init__(self) -> None:
        self.behaviour: Behaviour = lambda messages: text_reply("hello from the scripted test model")
        self.summariser: Behaviour = scripted_summary
        self.server: ScriptedModelServer | None = None

    def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        if is_summary_request(body["messages"]):
            return self.summariser(body["messages"])
        return self.behaviour(body["messages"])

    @property
    def requests(self) -> list[dict[str, Any]]:
        assert self.server is not None
        return self.server.requests

    @property
    def reply_requests(self) -> list[dict[str, Any]]:
        """Requests for an assistant message (every request but the summarise ones)."""
        return [body for body in self.requests if not is_summary_request(body["messages"])]

    @property
    def summary_requests(self) -> list[dict[str, Any]]:
        return [body for body in self.requests if is_summary_request(body["messages"])]

    def assistant_messages_requested_for(self, conversation_marker: str) -> int:
        return sum(1 for body in self.requests if first_user_text(body["messages"]) == conversation_marker)


def delegation(task: str, *child_calls: tuple[str, str, dict[str, Any] | str], **delegate_args: Any) -> Behaviour:
    """The parent delegates `task` once and reports what came back; the subagent (the transcript
    whose first user message is the task) makes `child_calls`, then reports their results."""
    parent = calls_then_summary(("d1", "delegate", {"task": task, **delegate_args}))
    child = calls_then_summary(*child_calls)

    def behave(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return (child if first_user_text(messages) == task else parent)(messages)

    return behave


def run_each_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """`run CMD` runs CMD in the shell, one call per user message; then the model says it is done."""
    if last_role(messages) == "tool":
        return text_reply("done")
    command = str(messages[-1]["content"]).removeprefix("run ")
    return tool_reply((f"c-{uuid.uuid4().hex[:6]}", "run_shell", {"command": command}))
