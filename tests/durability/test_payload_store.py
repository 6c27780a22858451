"""The payload store drivers and the converter built from PAYLOAD_STORE, without a server."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.converter import StorageDriverClaim, StorageDriverRetrieveContext, StorageDriverStoreContext
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from cli.conversations import query_state
from cli.errors import CliError
from cli.temporal import Session
from config.settings import ConfigError, Settings
from core.chat_model import ChatMessage
from core.contract import ERROR_INVALID_DECISION, UPDATE_DECIDE
from core.conversation_model import DecisionInput
from demo_model.server import text_reply
from doors.control import send_decision, start_conversation
from payload_store import LocalFileDriver, PayloadStoreError, data_converter, external_storage
from payload_store.blob_files import LocalBlobFiles, S3BlobFiles
from payload_store.content_driver import ContentAddressedDriver
from tests.support.helpers import tool_messages, wait_pending, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from worker import build_worker


def payload(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


def stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


async def test_the_same_payload_lands_under_one_name_and_is_read_back(tmp_path: Path) -> None:
    driver = LocalFileDriver(tmp_path)
    first, second = payload("a" * 1000), payload("b" * 1000)
    claims = await driver.store(StorageDriverStoreContext(), [first, second, first])
    assert claims[0] == claims[2] != claims[1]
    files = stored_files(tmp_path)
    assert len(files) == 2
    assert {f.name for f in files} == {c.claim_data["hash_value"] for c in claims}
    back = await driver.retrieve(StorageDriverRetrieveContext(), claims)
    assert back == [first, second, first]


async def test_a_retried_write_leaves_the_stored_file_untouched(tmp_path: Path) -> None:
    driver = LocalFileDriver(tmp_path)
    [claim] = await driver.store(StorageDriverStoreContext(), [payload("x" * 5000)])
    [path] = stored_files(tmp_path)
    before = path.stat()
    [again] = await driver.store(StorageDriverStoreContext(), [payload("x" * 5000)])
    assert again == claim
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert stored_files(tmp_path) == [path]


def test_a_write_that_dies_before_its_rename_leaves_no_payload_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = LocalFileDriver(tmp_path)
    blob = payload("y" * 2000).SerializeToString()

    def crash(_src: str, _dst: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        driver.write(blob)
    assert stored_files(tmp_path) == []
    monkeypatch.undo()
    claim = driver.write(blob)
    assert driver.read(claim).SerializeToString() == blob


def test_a_temporary_left_by_a_killed_writer_is_never_read_as_the_payload(tmp_path: Path) -> None:
    driver = LocalFileDriver(tmp_path)
    blob = payload("z" * 3000).SerializeToString()
    claim = driver.write(blob)
    target = driver.path_for(claim.claim_data["hash_value"])
    target.unlink()
    (target.parent / f".{target.name}.abc.tmp").write_bytes(blob[:100])  # half a write, then SIGKILL
    with pytest.raises(PayloadStoreError, match="missing"):
        driver.read(claim)
    assert driver.write(blob) == claim
    assert driver.read(claim).SerializeToString() == blob


async def test_a_missing_payload_names_its_digest_and_the_store(tmp_path: Path) -> None:
    driver = LocalFileDriver(tmp_path / "store")
    claim = StorageDriverClaim(claim_data={"hash_algorithm": "sha256", "hash_value": "ab" * 32})
    with pytest.raises(PayloadStoreError) as caught:
        await driver.retrieve(StorageDriverRetrieveContext(), [claim])
    message = str(caught.value)
    assert f"sha256:{'ab' * 32}" in message and str(tmp_path / "store") in message and "PAYLOAD_STORE" in message


def test_a_changed_file_or_a_forged_claim_is_refused(tmp_path: Path) -> None:
    driver = LocalFileDriver(tmp_path)
    claim = driver.write(payload("q" * 100).SerializeToString())
    driver.path_for(claim.claim_data["hash_value"]).write_bytes(b"tampered")
    with pytest.raises(PayloadStoreError, match="does not match its digest"):
        driver.read(claim)
    for digest in ("../../etc/passwd", "AB" * 32, "ab" * 31):
        with pytest.raises(PayloadStoreError, match="not a sha256 digest"):
            driver.read(StorageDriverClaim(claim_data={"hash_algorithm": "sha256", "hash_value": digest}))


async def test_the_converter_stores_large_payloads_and_keeps_small_ones_inline(tmp_path: Path) -> None:
    converter = data_converter(Settings(payload_store=str(tmp_path), payload_store_threshold=4096))
    big, small = ChatMessage(role="tool", content="r" * 20_000), ChatMessage(role="user", content="hi")
    encoded = await converter.encode([big, small])
    assert encoded[0].ByteSize() < 1024 and len(encoded[0].external_payloads) == 1
    assert encoded[0].external_payloads[0].size_bytes > 20_000
    assert encoded[1].data and not encoded[1].external_payloads
    # Content-addressed: the payload's root and its one long string, stored once.
    assert [p.parent.parent.name for p in stored_files(tmp_path)] == ["blobs", "roots"]
    assert await converter.decode(encoded, [ChatMessage, ChatMessage]) == [big, small]


def test_payload_store_defaults_beside_the_projection_and_reads_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("PAYLOAD_STORE", "PAYLOAD_STORE_THRESHOLD"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(approvals_db=tmp_path / "approvals.db")
    assert settings.payload_store_location == str(tmp_path / "payloads")
    assert settings.payload_store_threshold == 64 * 1024
    monkeypatch.setenv("PAYLOAD_STORE_THRESHOLD", "0")
    assert Settings().payload_store_threshold == 0
    for bad in ("-1", "big"):
        monkeypatch.setenv("PAYLOAD_STORE_THRESHOLD", bad)
        with pytest.raises(ConfigError, match="PAYLOAD_STORE_THRESHOLD"):
            Settings()


def test_an_s3_url_writes_to_s3_and_still_reads_the_local_directory(tmp_path: Path) -> None:
    settings = Settings(approvals_db=tmp_path / "approvals.db", payload_store="s3://payloads/prod/temporal")
    storage = external_storage(settings)
    writer, whole, local_blobs, reader = storage.drivers
    assert isinstance(writer, ContentAddressedDriver) and isinstance(writer.files, S3BlobFiles)
    # What earlier releases wrote (whole payloads in S3, or on the local directory) is still read.
    assert isinstance(whole, S3StorageDriver) and isinstance(reader, LocalFileDriver)
    assert isinstance(local_blobs, ContentAddressedDriver) and isinstance(local_blobs.files, LocalBlobFiles)
    assert reader.root == local_blobs.files.root == tmp_path / "payloads"
    assert storage.driver_selector is not None and storage.driver_selector(None, payload("x")) is writer  # type: ignore[arg-type]
    for bad in ("s3:///nobucket", "gs://bucket/x"):
        with pytest.raises(ConfigError, match="PAYLOAD_STORE"):
            external_storage(Settings(payload_store=bad))


def test_the_cli_names_a_bad_payload_store_as_a_bad_setting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    monkeypatch.setenv("PAYLOAD_STORE", "gs://bucket/prefix")
    assert main(["send", "conv-1", "hello"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: bad setting: PAYLOAD_STORE='gs://bucket/prefix': use a directory, file:///path or s3://bucket/prefix"
    )


async def test_a_reader_on_another_store_is_told_what_is_missing(
    env: WorkflowEnvironment, settings: Settings, model: ScriptedModel, tmp_path: Path
) -> None:
    """A CLI given another PAYLOAD_STORE than the worker's: `show` names the store, not a traceback."""
    address = env.client.service_client.config.target_host
    settings = dataclasses.replace(settings, payload_store=str(tmp_path / "worker-store"), payload_store_threshold=4096)
    client = await Client.connect(address, data_converter=data_converter(settings))
    elsewhere = dataclasses.replace(settings, payload_store=str(tmp_path / "cli-store"))
    cli_client = await Client.connect(address, data_converter=data_converter(elsewhere))
    model.behaviour = lambda messages: text_reply("a long answer " * 1000)
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "say a lot")
        await wait_status(client, cid, "idle")
        with pytest.raises(
            CliError, match=f"cannot read {cid}'s state: stored payload sha256:[0-9a-f]{{64}} is missing"
        ):
            await query_state(Session(elsewhere, cli_client), cid, timeout=10)


async def test_an_update_over_2mb_from_the_projects_client_is_refused_and_the_conversation_goes_on(
    client: Client, settings: Settings, model: ScriptedModel
) -> None:
    """Through the project's converter a 2.2 MB payload travels by reference: the validator refuses
    it by name, no workflow task fails, and the waiting approval is still decided."""
    model.behaviour = calls_then_summary(("call_1", "write_file", {"path": "a.txt", "content": "ok"}))
    async with build_worker(client, settings):
        cid = await start_conversation(client, settings, "write a.txt")
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        handle = client.get_workflow_handle(cid)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(UPDATE_DECIDE, "x" * 2_200_000)
        assert isinstance(refused.value.cause, ApplicationError)
        assert refused.value.cause.type == ERROR_INVALID_DECISION
        await send_decision(client, settings, DecisionInput(request_id=row["request_id"], decision="allow"))
        state = await wait_status(client, cid, "idle")
    assert (workspace_of(settings, cid) / "a.txt").read_text() == "ok"
    assert tool_messages(state) == ["Wrote 2 bytes to a.txt"]
