"""A model call is bounded (LLM_MAX_TOKENS, LLM_TIMEOUT_SECONDS) and its failure names the real
cause: how long it waited, which address refused, the server's status and its own message."""

from __future__ import annotations

import time
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import LlmActivities
from config.settings import ConfigError, Settings
from core.chat_model import ChatMessage, LlmRequest
from demo_model.server import ScriptedHttpError, text_reply
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import wait_status
from tests.support.processes import free_port
from tests.support.scripts import ScriptedModel
from worker import build_worker

TOOLS = [{"type": "function", "function": {"name": "list_dir", "parameters": {"type": "object"}}}]

# The activities run without a worker here: the fixture closes the clients their calls make.
pytestmark = pytest.mark.usefixtures("model_clients")


def request(tools: list[dict[str, Any]] | None = None) -> LlmRequest:
    return LlmRequest(
        conversation_id="conv-l", turn_id="turn-1", messages=[ChatMessage(role="user", content="go")], tools=tools or []
    )


async def failure(activities: LlmActivities) -> ApplicationError:
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.call_llm, request())
    return raised.value


def llm(model: ScriptedModel, **options: Any) -> LlmActivities:
    assert model.server is not None
    return LlmActivities(model.server.base_url, "k", "scripted", **options)


def test_the_limits_are_settings_with_sane_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLM_MAX_TOKENS", raising=False)
    monkeypatch.delenv("LLM_TIMEOUT_SECONDS", raising=False)
    assert (Settings().llm_max_tokens, Settings().llm_timeout_seconds) == (4096, 120.0)
    monkeypatch.setenv("LLM_MAX_TOKENS", "512")
    monkeypatch.setenv("LLM_TIMEOUT_SECONDS", "30")
    assert (Settings().llm_max_tokens, Settings().llm_timeout_seconds) == (512, 30.0)
    for name, bad in [("LLM_MAX_TOKENS", "many"), ("LLM_TIMEOUT_SECONDS", "0")]:
        monkeypatch.setenv(name, bad)
        with pytest.raises(ConfigError, match=name):
            Settings()
        monkeypatch.delenv(name)


@pytest.mark.parametrize("stream", [False, True])
async def test_max_tokens_and_tool_choice_are_sent(model: ScriptedModel, stream: bool) -> None:
    await ActivityEnvironment().run(llm(model, max_tokens=321, stream=stream).call_llm, request(TOOLS))
    await ActivityEnvironment().run(llm(model, max_tokens=0, stream=stream).call_llm, request())
    with_tools, without = model.requests
    assert (with_tools["max_tokens"], with_tools["tool_choice"], with_tools.get("stream", False)) == (
        321,
        "auto",
        stream,
    )
    assert "max_tokens" not in without and "tool_choice" not in without and "tools" not in without


async def test_an_endpoint_that_refuses_max_tokens_gets_max_completion_tokens(model: ScriptedModel) -> None:
    def reasoning_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if "max_tokens" in model.requests[-1]:
            message = (
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'"
            )
            raise ScriptedHttpError(400, message, "unsupported_parameter")
        return text_reply("thought about it")

    model.behaviour = reasoning_model
    activities = llm(model, max_tokens=100)
    for _ in range(2):
        reply = await ActivityEnvironment().run(activities.call_llm, request())
        assert reply.content == "thought about it"
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in model.requests] == [
        (True, None),
        (False, 100),
        (False, 100),
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_timeout_says_how_long_it_waited(model: ScriptedModel, stream: bool) -> None:
    def slow(messages: list[dict[str, Any]]) -> dict[str, Any]:
        time.sleep(2.5)
        return text_reply("too late")

    model.behaviour = slow
    error = await failure(llm(model, timeout=0.5, stream=stream))
    assert (error.message, error.type, error.non_retryable) == ("request timed out after 0.5 s", "LlmTimeout", False)
    assert error.__cause__ is None, "the recorded error is the innermost cause: this one"


async def test_a_refused_connection_names_the_address() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    error = await failure(LlmActivities(url, "k", "scripted", timeout=5))
    assert (error.message, error.non_retryable, error.__cause__) == (f"connection refused ({url})", False, None)


async def test_a_server_error_gives_the_status_and_the_servers_message(model: ScriptedModel) -> None:
    def broken(messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise ScriptedHttpError(500, "model crashed: out of memory")

    model.behaviour = broken
    error = await failure(llm(model, stream=True))
    assert error.message == "HTTP 500 from the model server: model crashed: out of memory"
    assert not error.non_retryable and error.__cause__ is None


async def test_the_recorded_error_of_a_rejected_request_is_the_servers_word(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    def reject(messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise ScriptedHttpError(400, "unknown field 'tool_choice'")

    model.behaviour = reject
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "hello"))
        state = await wait_status(client, cid, "failed")
    said = "HTTP 400 from the model server: unknown field 'tool_choice'"
    assert state.last_error == f"model call failed: LlmBadRequest: the model rejected the request: {said}"
    assert len(model.requests) == 1
