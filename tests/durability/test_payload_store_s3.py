"""The S3 path against a real S3-compatible server (moto's, started here): payloads land in the
bucket, the history holds references, replay reads them back; a worker SIGKILLed while a stored
payload is being written leaves a turn that completes once."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from doors.control import start_conversation
from payload_store import data_converter
from payload_store.blob_tree import dumps
from payload_store.history import payload_sizes, references
from tests.support.failure_support import assistant_count, holds, lines, replay_recorded, wait_turn, worker_process
from tests.support.helpers import new_workspace, rows, tool_messages, wait_status, workspace_of
from tests.support.s3_support import S3Server
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker
from workflows.conversation import SYSTEM_PROMPT

THRESHOLD = 8 * 1024
BIG = "".join(f"line {i:05d} of a sixteen kilobyte file\n" for i in range(400))[:16_000]


def s3_settings(settings: Settings, s3: S3Server, tmp_path: Path, **changes: object) -> Settings:
    bucket = s3.create_bucket(f"payloads-{uuid.uuid4().hex[:8]}")
    return dataclasses.replace(
        settings,
        payload_store=f"s3://{bucket}/approvals",
        payload_store_threshold=THRESHOLD,
        s3_endpoint_url=s3.url,
        **changes,  # type: ignore[arg-type]
    )


async def s3_client(env: WorkflowEnvironment, settings: Settings) -> Client:
    address = env.client.service_client.config.target_host
    return await Client.connect(address, data_converter=data_converter(settings))


def bucket_of(settings: Settings) -> str:
    assert settings.payload_store is not None
    return settings.payload_store.removeprefix("s3://").split("/")[0]


async def test_large_payloads_go_to_the_bucket_and_replay_from_it(
    env: WorkflowEnvironment, settings: Settings, model: ScriptedModel, s3: S3Server, tmp_path: Path
) -> None:
    settings = s3_settings(settings, s3, tmp_path)
    client = await s3_client(env, settings)
    reads = [(f"call_{i}", "read_file", {"path": "big.txt"}) for i in range(3)]
    model.behaviour = calls_then_summary(*reads)
    async with build_worker(client, settings):
        planned, ws = new_workspace(settings)
        (ws / "big.txt").write_text(BIG)
        cid = await start_conversation(client, settings, "read it three times", planned)
        state = await wait_status(client, cid, "idle")
    assert tool_messages(state) == [BIG] * 3  # read back from S3 through the query
    history = await client.get_workflow_handle(cid).fetch_history()
    sizes = payload_sizes(history)
    assert max(sizes.inline) < THRESHOLD and max(sizes.external) > len(BIG)
    objects = s3.objects(bucket_of(settings))
    found = references(history)
    assert found and all(r.driver_name == "s3-blobs" for r in found)
    assert {f"approvals/cas/roots/{r.claim_data['hash_value']}" for r in found} <= set(objects)
    assert all(key.startswith("approvals/cas/") for key in objects)
    # Content-addressed: the file read three times is one object, however many payloads carry it.
    assert sum(dumps(BIG) in s3.object_body(bucket_of(settings), key) for key in objects) == 1
    assert await replay_recorded(client, [cid], "s3-roundtrip") == 1
    # A reader without the bucket cannot rebuild the conversation: the payloads really live there.
    local_only = await Client.connect(
        env.client.service_client.config.target_host,
        data_converter=data_converter(dataclasses.replace(settings, payload_store=str(tmp_path / "elsewhere"))),
    )
    with pytest.raises(Exception, match=r"No driver found with name 's3-blobs'"):
        await replay_recorded(local_only, [cid], "s3-without-bucket")


@pytest.mark.long
@pytest.mark.parametrize(
    ("side", "held_write"),
    # The model's next input (the workflow's write) and run_shell's result (the activity's write).
    [("workflow", SYSTEM_PROMPT[:40].encode()), ("activity", b"exit code 0")],
)
async def test_worker_killed_during_a_stored_payload_write_completes_the_turn_once(
    env: WorkflowEnvironment,
    settings: Settings,
    model: ScriptedModel,
    s3: S3Server,
    tmp_path: Path,
    side: str,
    held_write: bytes,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('mode = "auto_approve"\n')
    settings = s3_settings(settings, s3, tmp_path, policy_file=str(policy))
    client = await s3_client(env, settings)
    marker = f"kill during the {side} write"
    # read_file's 16 KB result makes the next model input a stored payload (the workflow's write);
    # run_shell's 16 KB output is a stored activity result, written after the command ran.
    model.behaviour = calls_then_summary(
        ("call_1", "read_file", {"path": "big.txt"}),
        ("call_2", "run_shell", {"command": "cat big.txt; echo ran >> ran.log"}),
    )
    s3.hold(held_write)
    with worker_process(settings, client, tmp_path / "worker-1.log") as first:
        planned, ws = new_workspace(settings)
        (ws / "big.txt").write_text(BIG)
        cid = await start_conversation(client, settings, marker, planned)
        await holds(s3.held.is_set, timeout=60)
        first.kill()
    s3.release()
    with worker_process(settings, client, tmp_path / "worker-2.log"):
        state = await wait_turn(client, cid, "idle", timeout=120)
    assert lines(workspace_of(settings, cid) / "ran.log") == ["ran"]
    assert model.assistant_messages_requested_for(marker) == assistant_count(state) == 2
    assert [m.tool_call_id for m in state.messages if m.role == "tool"] == ["call_1", "call_2"]
    assert tool_messages(state)[0] == BIG
    completed = rows(settings.approvals_db, "SELECT * FROM ui_events WHERE event_type = 'turn.completed'")
    assert len(completed) == 1
    assert references(await client.get_workflow_handle(cid).fetch_history())
    assert await replay_recorded(client, [cid], f"s3-kill-{side}") >= 1
