"""The payload converter (payload_store/converter.py): the SDK's pydantic converter, each type's
adapter built once per process however many converters the SDK makes."""

from __future__ import annotations

import warnings

from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import WorkflowSerializationContext

from config.settings import Settings
from core.conversation_model import DecisionInput
from core.tool_run_model import ToolResult
from payload_store import data_converter
from payload_store.converter import SharedAdaptersPayloadConverter, shared_type_adapter


def test_a_new_converter_decodes_with_the_adapter_an_earlier_one_built(tmp_path: object) -> None:
    converter = data_converter(Settings(payload_store=str(tmp_path)))
    decision = DecisionInput(request_id="r1", decision="allow", decided_by="ana", groups=["ops"])
    payload = converter.payload_converter.to_payload(decision)
    assert converter.payload_converter.from_payload(payload, DecisionInput) == decision
    before = shared_type_adapter.cache_info()
    # What the SDK does for each workflow run and each activity task: a new converter, with a context.
    for n in range(5):
        context = WorkflowSerializationContext(namespace="default", workflow_id=f"conv-{n}")
        fresh = converter.with_context(context).payload_converter
        assert fresh.from_payload(payload, DecisionInput) == decision
    after = shared_type_adapter.cache_info()
    assert after.misses == before.misses and after.hits - before.hits == 5


def test_payloads_are_the_sdk_pydantic_converters_bytes_for_bytes(tmp_path: object) -> None:
    ours = data_converter(Settings(payload_store=str(tmp_path))).payload_converter
    theirs = pydantic_data_converter.payload_converter
    for value in (
        DecisionInput(request_id="r2", decision="deny", reason="no"),
        ToolResult(content="done", kv={"a": "1"}),
        {"plain": [1, 2.5, None]},
        b"\x00raw",
    ):
        assert ours.to_payload(value) == theirs.to_payload(value)
        assert ours.from_payload(theirs.to_payload(value), type(value)) == value


def test_pydantic_ais_plugin_keeps_it_without_a_warning(tmp_path: object) -> None:
    """An agent's team puts Pydantic AI's plugin on a client with our converter (tests/agents)."""
    converter = data_converter(Settings(payload_store=str(tmp_path)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = PydanticAIPlugin().configure_client({"data_converter": converter})["data_converter"]  # type: ignore[typeddict-item]
    assert kept.payload_converter_class is SharedAdaptersPayloadConverter
