"""The model server's retry hints reach Temporal's retry policy: `retry-after` (seconds or an HTTP
date) and `retry-after-ms` set the next attempt's delay, capped; `x-should-retry` says whether
there is one. Answered by a real HTTP server (demo_model/server.py) with those headers."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm import LlmActivities
from activities.llm_errors import MAX_RETRY_DELAY, retry_hint
from config.settings import Settings
from core.chat_model import ChatMessage, LlmRequest
from core.contract import ERROR_CONTEXT_WINDOW, ERROR_LLM_RATE_LIMITED, ERROR_LLM_SERVER_ERROR
from demo_model.server import ScriptedHttpError, text_reply
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import wait_status
from tests.support.scripts import ScriptedModel
from worker import build_worker
from workflows.activity_calls import CALL_LLM, LLM_RETRY


def request() -> LlmRequest:
    return LlmRequest(
        conversation_id="conv-r", turn_id="turn-1", messages=[ChatMessage(role="user", content="go")], tools=[]
    )


async def failure(model: ScriptedModel, status: int, headers: dict[str, str], stream: bool = False) -> ApplicationError:
    def refuse(messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise ScriptedHttpError(status, "slow down", headers=headers)

    model.behaviour = refuse
    assert model.server is not None
    activities = LlmActivities(model.server.base_url, "k", "scripted", stream=stream)
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.call_llm, request())
    await activities.endpoint.close()
    return raised.value


def in_seconds(seconds: int) -> str:
    return format_datetime(datetime.now(UTC) + timedelta(seconds=seconds), usegmt=True)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_429_waits_as_long_as_the_server_asks(model: ScriptedModel, stream: bool) -> None:
    error = await failure(model, 429, {"retry-after": "7"}, stream)
    assert (error.type, error.non_retryable, error.next_retry_delay) == (
        ERROR_LLM_RATE_LIMITED,
        False,
        timedelta(seconds=7),
    )
    assert error.message == "HTTP 429 from the model server: slow down"


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        ({"retry-after-ms": "1500", "retry-after": "9"}, timedelta(milliseconds=1500)),  # the finer one wins
        ({"retry-after": "3600"}, MAX_RETRY_DELAY),  # capped
        ({"retry-after": "soon"}, None),  # no number, no date: the policy's own interval
        ({"retry-after": "-3"}, None),
        ({}, None),
    ],
)
async def test_the_delay_is_the_servers_hint_capped(
    model: ScriptedModel, headers: dict[str, str], delay: timedelta | None
) -> None:
    error = await failure(model, 429, headers)
    assert (error.non_retryable, error.next_retry_delay) == (False, delay)


async def test_a_503_may_name_an_http_date(model: ScriptedModel) -> None:
    error = await failure(model, 503, {"retry-after": in_seconds(20)})
    assert error.type == ERROR_LLM_SERVER_ERROR and not error.non_retryable
    assert error.next_retry_delay is not None
    assert timedelta(seconds=15) < error.next_retry_delay <= timedelta(seconds=20)
    past = retry_hint({"retry-after": format_datetime(datetime.now(UTC) - timedelta(minutes=1), usegmt=True)})
    assert past is None, "a date already past asks for no wait"


async def test_x_should_retry_false_stops_the_retries(model: ScriptedModel) -> None:
    error = await failure(model, 503, {"x-should-retry": "false", "retry-after": "5"})
    assert (error.type, error.non_retryable) == (ERROR_LLM_SERVER_ERROR, True)
    assert error.message == "HTTP 503 from the model server: slow down (the server says not to retry)"


async def test_x_should_retry_true_retries_a_refusal(model: ScriptedModel) -> None:
    """A 400 is not retried unless the server asks; asked, it goes under a type the retry policy
    does not stop at. A context-window error stays the workflow's to answer (by compacting)."""
    error = await failure(model, 400, {"x-should-retry": "true", "retry-after-ms": "250"})
    assert (error.type, error.non_retryable, error.next_retry_delay) == (
        ERROR_LLM_SERVER_ERROR,
        False,
        timedelta(milliseconds=250),
    )
    assert error.type not in (LLM_RETRY.non_retryable_error_types or [])
    assert error.message == "HTTP 400 from the model server: slow down (the server asks for a retry)"
    assert (await failure(model, 413, {"x-should-retry": "true"})).type == ERROR_CONTEXT_WINDOW


async def test_a_conversation_waits_out_the_retry_after_then_goes_on(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    """On the real Temporal server: the second attempt comes after the server's 3 s, not the retry
    policy's 1 s, and it is the call's second attempt."""
    asked: list[float] = []

    def busy_once(messages: list[dict[str, Any]]) -> dict[str, Any]:
        asked.append(time.monotonic())
        if len(asked) == 1:
            raise ScriptedHttpError(429, "rate limited", headers={"retry-after": "3"})
        return text_reply("after the wait")

    model.behaviour = busy_once
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "hello"))
        state = await wait_status(client, cid, "idle")
        history = await client.get_workflow_handle(cid).fetch_history()
    assert state.messages[-1].content == "after the wait"
    assert len(asked) == 2 and 2.9 <= asked[1] - asked[0] < 10, asked
    scheduled = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == CALL_LLM
    }
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in scheduled
    ]
    assert attempts == [2]


async def test_a_conversation_told_not_to_retry_fails_the_turn_at_once(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    def unavailable(messages: list[dict[str, Any]]) -> dict[str, Any]:
        raise ScriptedHttpError(503, "down for maintenance", headers={"x-should-retry": "false"})

    model.behaviour = unavailable
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "hello"))
        state = await wait_status(client, cid, "failed")
    assert state.last_error is not None and "the server says not to retry" in state.last_error
    assert len(model.reply_requests) == 1, "not retried"
