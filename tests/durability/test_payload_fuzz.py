"""Hypothesis sends random arities and shapes to every signal, update and query of one waiting
conversation; none fails a workflow task or changes the state, and a proper decision still completes
the turn.

Hypothesis runs in a thread and hands each batch to the test's event loop, so one worker and one
conversation serve every example (bounded time, full shrinking on a failure).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowHandle, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import (
    ERROR_INVALID_DECISION,
    QUERY_GET_STATE,
    SIGNAL_APPROVAL_DECISION,
    SIGNAL_CLOSE,
    SIGNAL_SET_AUTO_APPROVE,
    SIGNAL_SUBMIT_MESSAGE,
    UPDATE_DECIDE,
)
from core.conversation_model import AutoApproveInput, ConversationState, DecisionInput, MessageInput
from doors.control import get_state, send_decision, start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import tool_messages, wait_pending, wait_status, workflow_task_failures, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker

# Well under the 2 MB payload limit, far over anything a door sends; rare enough that the
# conversation's history stays far from Temporal's 50 MB limit over every example.
HUGE = "x" * 256 * 1024
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
JSON = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
)
WRONG_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "request_id": JSON,
        "decision": st.one_of(JSON, st.sampled_from(["allow", "deny", "always_allow", "ALLOW"])),
        "reason": JSON,
        "decided_by": JSON,
        "text": JSON,
        "enabled": JSON,
    },
)
UNDECODABLE = st.sampled_from(
    [
        RawValue(Payload(metadata={"encoding": b"binary/unknown"}, data=b"\x00\x01")),
        RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b"{not json")),
        RawValue(Payload(metadata={}, data=b"no encoding at all")),
    ]
)
HUGE_SHAPES = st.sampled_from(
    [HUGE, [HUGE], {"request_id": HUGE, "decision": "allow"}, {"text": [HUGE]}, {"enabled": HUGE}]
)
ARG = st.one_of(JSON, JSON, WRONG_FIELDS, UNDECODABLE, HUGE_SHAPES)
MODELS: dict[str, type[BaseModel]] = {
    SIGNAL_SUBMIT_MESSAGE: MessageInput,
    SIGNAL_APPROVAL_DECISION: DecisionInput,
    UPDATE_DECIDE: DecisionInput,
    SIGNAL_SET_AUTO_APPROVE: AutoApproveInput,
}


@dataclass(frozen=True)
class Send:
    name: str
    args: list[Any]


def is_junk(send: Send) -> bool:
    """Only inputs the contract does not accept: a proper one would rightly change the state."""
    args = send.args
    if send.name == QUERY_GET_STATE:
        return True
    if any(isinstance(arg, RawValue) for arg in args):
        return True
    if send.name == SIGNAL_CLOSE:
        return not (args == [] or (len(args) == 1 and (args[0] is None or isinstance(args[0], dict))))
    if len(args) != 1:
        return True
    try:
        MODELS[send.name].model_validate(args[0])
    except ValidationError:
        return True
    return False


NAMES = [SIGNAL_SUBMIT_MESSAGE, SIGNAL_APPROVAL_DECISION, SIGNAL_SET_AUTO_APPROVE, SIGNAL_CLOSE]
SENDS = st.builds(Send, st.sampled_from([*NAMES, UPDATE_DECIDE, QUERY_GET_STATE]), st.lists(ARG, max_size=3)).filter(
    is_junk
)

# One junk send to each name: a number where an object belongs.
EVERY_NAME = [Send(name, [7]) for name in [*NAMES, UPDATE_DECIDE, QUERY_GET_STATE]]


def fingerprint(state: ConversationState) -> dict[str, Any]:
    return {
        "status": state.turn_status,
        "pending": [a.model_dump() for a in state.pending_approvals],
        "messages": [m.model_dump() for m in state.messages],
        "auto_approve": state.auto_approve,
        "always_allow": state.always_allow,
        "resolutions": state.resolutions,
    }


async def deliver(handle: WorkflowHandle[Any, Any], send: Send) -> None:
    raw = any(isinstance(arg, RawValue) for arg in send.args)
    if send.name == UPDATE_DECIDE:
        try:
            await handle.execute_update(UPDATE_DECIDE, args=send.args)
        except WorkflowUpdateFailedError as refused:
            # An undecodable payload is refused by the SDK before the validator sees it.
            cause = refused.cause
            assert raw or (isinstance(cause, ApplicationError) and cause.type == ERROR_INVALID_DECISION), send
        else:
            raise AssertionError(f"decide accepted junk: {send}")
    elif send.name == QUERY_GET_STATE:
        try:
            state = await handle.query(QUERY_GET_STATE, args=send.args, result_type=ConversationState)
        except WorkflowQueryFailedError:
            assert raw, f"query failed on decodable arguments: {send}"
        else:
            assert state.turn_status == "awaiting_approval"
    else:
        await handle.signal(send.name, args=send.args)


async def test_random_payloads_never_fail_a_task_or_change_state(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    loop = asyncio.get_running_loop()
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "write a.txt"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        handle = client.get_workflow_handle(cid)
        before = fingerprint(await get_state(client, cid))
        delivered: list[Send] = []

        async def batch(sends: list[Send]) -> None:
            for send in sends:
                await deliver(handle, send)
                delivered.append(send)
            assert fingerprint(await get_state(client, cid)) == before
            assert await workflow_task_failures(handle) == []

        @hypothesis_settings(
            max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
        )
        @given(st.lists(SENDS, min_size=1, max_size=6))
        @example(EVERY_NAME)  # each name at least once, whatever the draws (close is rarely junk)
        def property_holds(sends: list[Send]) -> None:
            asyncio.run_coroutine_threadsafe(batch(sends), loop).result(timeout=120)

        await asyncio.to_thread(property_holds)
        assert len(delivered) >= 40 and {s.name for s in delivered} == {*NAMES, UPDATE_DECIDE, QUERY_GET_STATE}

        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
        assert tool_messages(state) == ["Wrote 2 bytes to a.txt"]
        assert [m.content for m in state.messages if m.role == "user"] == ["write a.txt"]
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "ok"
    assert await workflow_task_failures(handle) == []
