"""The content-addressed payload store: a growing message list stores each message once, the
payload reads back as it was, and collecting deletes what no live workflow refers to."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory
from temporalio.converter import StorageDriverRetrieveContext, StorageDriverStoreContext
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply
from doors.control import start_conversation
from maintenance.payload_gc import collect_payloads
from payload_store import data_converter
from payload_store.blob_files import LocalBlobFiles
from payload_store.blob_tree import dumps, split
from payload_store.content_driver import ContentAddressedDriver
from payload_store.history import references
from tests.support.failure_support import replay_recorded
from tests.support.helpers import eventually, wait_status
from tests.support.scripts import ScriptedModel
from worker import build_worker

STORE, READ = StorageDriverStoreContext(), StorageDriverRetrieveContext()


def as_payload(document: Any) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(document).encode())


def store_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def turn(k: int) -> list[dict[str, Any]]:
    tool_output = "".join(f"line {i} of file {k}\n" for i in range(200))
    return [
        {"role": "user", "content": f"task {k}"},
        {"role": "assistant", "tool_calls": [{"id": f"call_{k}", "name": "read_file", "arguments": {"path": "a"}}]},
        {"role": "tool", "tool_call_id": f"call_{k}", "content": tool_output},
        {"role": "assistant", "content": f"done {k}", "$ref": "a key of the document's own"},
    ]


def book(turns: int) -> dict[str, Any]:
    """A map that grows every turn, as the approvals book carried across continue-as-new does."""
    return {f"perm_{k}_call_1": {"decision": "allow", "by": {"$map": "literal"}, "at": k} for k in range(turns)}


async def test_a_growing_transcript_stores_each_message_once_and_reads_back_whole(tmp_path: Path) -> None:
    driver = ContentAddressedDriver(LocalBlobFiles(tmp_path), "local-blobs")
    messages: list[dict[str, Any]] = []
    added = []
    for k in range(60):
        messages += turn(k)
        before = store_bytes(tmp_path)
        document = {"model": "m", "messages": messages, "book": book(k)}
        [claim] = await driver.store(STORE, [as_payload(document)])
        added.append(store_bytes(tmp_path) - before)
        [back] = await driver.retrieve(READ, [claim])
        assert json.loads(back.data) == document
        assert dict(back.metadata) == {"encoding": b"json/plain"}
    transcript = len(dumps(document))
    assert store_bytes(tmp_path) < 2 * transcript  # stored whole, the 60 calls would hold ~30x
    # What a call adds does not grow with the list: the last calls add about what the first did.
    assert sum(added[-10:]) < 1.3 * sum(added[1:11])
    tool_outputs = [dumps(m["content"]) for m in messages if m["role"] == "tool"]
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert all(sum(out in blob for blob in files) == 1 for out in tool_outputs)


def test_what_an_appended_item_stores_does_not_grow_with_the_list() -> None:
    """A list 16 times longer costs the same per appended item: only the open run, the root and
    (now and then) a node of the level above are new, not a node on every level of a tree that
    deepens as the list grows."""
    items = [{"role": "user", "content": f"task {k}"} for k in range(2400)]

    def stored_per_append(start: int, appends: int) -> int:
        seen = set(split({"messages": items[:start]})[1])  # what the list stored before
        added = 0
        for end in range(start + 1, start + appends + 1):
            root, blobs = split({"messages": items[:end]})
            added += len(root) + sum(len(blob) for digest, blob in blobs.items() if digest not in seen)
            seen.update(blobs)
        return added

    assert stored_per_append(2200, 200) < 1.1 * stored_per_append(100, 200)


async def test_a_list_that_lost_its_oldest_items_reuses_what_it_kept(tmp_path: Path) -> None:
    """Compaction drops the oldest messages and puts a summary first: the kept messages are found."""
    driver = ContentAddressedDriver(LocalBlobFiles(tmp_path), "local-blobs")
    messages = [m for k in range(40) for m in turn(k)]
    await driver.store(STORE, [as_payload({"messages": messages})])
    before = store_bytes(tmp_path)
    compacted = [{"role": "user", "content": "summary of the first twenty turns"}, *messages[80:]]
    [claim] = await driver.store(STORE, [as_payload({"messages": compacted})])
    assert store_bytes(tmp_path) - before < 0.1 * len(dumps(compacted))
    [back] = await driver.retrieve(READ, [claim])
    assert json.loads(back.data) == {"messages": compacted}


async def test_a_payload_that_is_not_json_is_stored_whole(tmp_path: Path) -> None:
    driver = ContentAddressedDriver(LocalBlobFiles(tmp_path), "local-blobs")
    raw = Payload(metadata={"encoding": b"binary/plain"}, data=os.urandom(5000))
    [claim] = await driver.store(STORE, [raw])
    assert await driver.retrieve(READ, [claim]) == [raw]
    assert [p.parent.parent.name for p in tmp_path.rglob("*") if p.is_file()] == ["roots"]


async def test_collecting_deletes_what_only_a_closed_conversation_refers_to(
    env: WorkflowEnvironment, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    settings = dataclasses.replace(settings, payload_store=str(store), payload_store_threshold=4096)
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=data_converter(settings),
    )
    model.behaviour = lambda messages: text_reply(f"a long answer to {messages[-1]['content']} " * 300)
    async with build_worker(client, settings):
        closed = await start_conversation(client, settings, "the one that closes")
        await wait_status(client, closed, "idle")
        await client.get_workflow_handle(closed).terminate("done with it")
        kept = await start_conversation(client, settings, "the one that waits")
        await wait_status(client, kept, "idle")

    async def listed_closed() -> bool | None:
        listed = [e async for e in client.list_workflows(f"WorkflowId = '{closed}'")]
        return (bool(listed) and listed[0].status == WorkflowExecutionStatus.TERMINATED) or None

    await eventually(listed_closed)
    stray = LocalBlobFiles(store)
    await stray.put("blobs", {"ab" * 32: b"written by a payload no history names yet"})
    young = stray.path_for("blobs", "ab" * 32)

    def roots_of(history: WorkflowHistory) -> set[str]:
        return {r.claim_data["hash_value"] for r in references(history)}

    # Both conversations' turns list the same tools: that result is one root, which the waiting one keeps.
    kept_roots = roots_of(await client.get_workflow_handle(kept).fetch_history())
    closed_roots = roots_of(await client.get_workflow_handle(closed).fetch_history()) - kept_roots
    assert closed_roots

    spared = await collect_payloads(client, settings, retention_seconds=3600)  # everything is young
    assert spared.deleted_files == 0 and young.exists()

    os.utime(young, (1, 1))
    report = await collect_payloads(client, settings, retention_seconds=0)
    assert report.deleted_files > 0 and not young.exists()
    assert not any(stray.path_for("roots", digest).exists() for digest in closed_roots)
    assert all(stray.path_for("roots", digest).exists() for digest in kept_roots)
    # The waiting conversation's payloads are all there: its history replays from the store.
    assert await replay_recorded(client, [kept], "collected") >= 1
