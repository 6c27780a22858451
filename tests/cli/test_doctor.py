"""`starter.py doctor` against scripted servers that behave as real ones do: it says what works,
which settings the endpoint needs, and exits non-zero with one line when a conversation cannot work."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from demo_model.server import ScriptedHttpError, text_reply, tool_reply
from tests.support.processes import REPO_ROOT, free_port
from tests.support.scripts import ScriptedModel
from tests.support.stack import one_line


def doctor(base_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "k",
        "LLM_MODEL": "scripted",
        "LLM_STREAM": "on",
    }
    command = [sys.executable, "starter.py", "doctor"]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)


def tool_user(body: dict[str, Any]) -> dict[str, Any]:
    """Calls the offered tool on a request; answers in words after its result, or with no tools."""
    if body.get("tools") and body["messages"][-1]["role"] == "user":
        return tool_reply(("call_1", "write_file", {"path": "notes.txt", "content": "hello"}))
    return text_reply("hello")


def test_an_endpoint_that_does_everything_needs_no_setting(model: ScriptedModel) -> None:
    assert model.server is not None
    model.server.responder = tool_user
    done = doctor(model.server.base_url)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "a doctor that finds everything working says nothing on stderr"
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[1:5]] == [
        "ok  plain reply",
        "ok  tool call",
        "ok  reply after the tool's result",
        "ok  streamed tool call",
    ]
    assert lines[-1] == "settings it needs: none beyond the defaults"
    assert [bool(b.get("stream")) for b in model.requests] == [False, False, False, True]
    assert model.requests[1]["tool_choice"] == "auto"


def test_an_endpoint_that_cannot_stream_tool_calls_is_told_to_ask_whole(model: ScriptedModel) -> None:
    assert model.server is not None
    model.server.responder = tool_user
    model.server.stream_as = "empty"
    done = doctor(model.server.base_url)
    assert done.returncode == 0, done.stderr
    assert "no  streamed tool call: the endpoint does not stream" in done.stdout
    assert done.stdout.splitlines()[-1] == "settings it needs: LLM_STREAM=off"


def test_a_stream_that_drops_the_tool_calls_fails_with_the_setting_to_change(model: ScriptedModel) -> None:
    assert model.server is not None
    model.server.responder = lambda body: text_reply("no tools here") if body.get("stream") else tool_user(body)
    done = doctor(model.server.base_url)
    assert done.returncode == 1
    assert one_line(done.stderr) == "error: streamed replies do not carry the tool calls: set LLM_STREAM=off"


def test_a_model_that_never_calls_a_tool_fails_with_one_line(model: ScriptedModel) -> None:
    assert model.server is not None
    model.server.responder = lambda body: text_reply("I would write it.")
    done = doctor(model.server.base_url)
    assert done.returncode == 1
    assert "called no tool" in one_line(done.stderr)
    assert "no  tool call: answered with text: 'I would write it.'" in done.stdout


def test_an_endpoint_that_refuses_tool_results_fails_with_the_servers_word(model: ScriptedModel) -> None:
    assert model.server is not None

    def no_results(body: dict[str, Any]) -> dict[str, Any]:
        if any(m["role"] == "tool" for m in body["messages"]):
            raise ScriptedHttpError(500, "tool messages are not supported")
        return tool_user(body)

    model.server.responder = no_results
    done = doctor(model.server.base_url)
    assert done.returncode == 1
    assert "HTTP 500 from the model server: tool messages are not supported" in one_line(done.stderr)


def test_nothing_listening_is_one_line_naming_the_address() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = doctor(url)
    assert done.returncode == 1
    assert one_line(done.stderr) == f"error: the model endpoint cannot answer: connection refused ({url})"
