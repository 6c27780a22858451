"""The demo model speaks OpenAI's Chat Completions as the real openai client and its types expect."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion

from core.tool_specs import TOOL_SPECS
from demo_model.script import plan_calls, respond
from demo_model.server import ScriptedModelServer

TOOLS: Any = [spec.openai_schema() for spec in TOOL_SPECS.values()]


@pytest.fixture
def client() -> Iterator[openai.OpenAI]:
    server = ScriptedModelServer(respond).start()
    yield openai.OpenAI(base_url=server.base_url, api_key="demo-key", max_retries=0)
    server.stop()


def ask(client: openai.OpenAI, messages: list[dict[str, Any]]) -> ChatCompletion:
    """One request; the raw JSON must validate against the openai package's own response type."""
    raw = client.chat.completions.with_raw_response.create(model="scripted-demo", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
    validated = ChatCompletion.model_validate(raw.http_response.json())
    assert validated == raw.parse()
    return validated


def test_one_request_becomes_one_tool_call(client: openai.OpenAI) -> None:
    completion = ask(client, [{"role": "user", "content": "write hello to notes.txt"}])
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "write_file",
        {"path": "notes.txt", "content": "hello"},
    )
    assert "scripted demo model" in (choice.message.content or "")


def test_joined_requests_become_several_tool_calls_in_one_message(client: openai.OpenAI) -> None:
    completion = ask(client, [{"role": "user", "content": "list the files and read notes.txt then run echo hi"}])
    calls = completion.choices[0].message.tool_calls or []
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls if c.type == "function"] == [
        ("call_1", "list_dir", {"path": "."}),
        ("call_2", "read_file", {"path": "notes.txt"}),
        ("call_3", "run_shell", {"command": "echo hi"}),
    ]


def test_after_tool_results_the_answer_quotes_them(client: openai.OpenAI) -> None:
    first = ask(client, [{"role": "user", "content": "run echo hi and write x to y.txt"}]).choices[0].message
    calls = [c for c in first.tool_calls or [] if c.type == "function"]
    transcript: list[dict[str, Any]] = [
        {"role": "user", "content": "run echo hi and write x to y.txt"},
        {
            "role": "assistant",
            "content": first.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ],
        },
        {"role": "tool", "tool_call_id": calls[0].id, "content": "exit code 0\nhi\n"},
        {"role": "tool", "tool_call_id": calls[1].id, "content": "Not run: bob denied this write_file call."},
    ]
    completion = ask(client, transcript)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    answer = choice.message.content or ""
    assert "scripted demo model" in answer
    assert "run_shell: 'exit code 0\\nhi\\n'" in answer
    assert "write_file: 'Not run: bob denied this write_file call.'" in answer


def test_anything_else_gets_a_labelled_help_text(client: openai.OpenAI) -> None:
    message = ask(client, [{"role": "user", "content": "what is the weather?"}]).choices[0].message
    assert not message.tool_calls
    assert (message.content or "").startswith("(scripted demo model)") and "list the files" in (message.content or "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("List the files in docs.", [("list_dir", {"path": "docs"})]),
        ("write 'hello world' to notes.txt", [("write_file", {"path": "notes.txt", "content": "hello world"})]),
        ("write salt and pepper to spice.txt", [("write_file", {"path": "spice.txt", "content": "salt and pepper"})]),
        ("run echo a and b", [("run_shell", {"command": "echo a and b"})]),
        ("hello", []),
    ],
)
def test_plain_requests_parse_deterministically(text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert plan_calls(text) == expected
    assert plan_calls(text) == expected
