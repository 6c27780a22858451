"""Web Push (`kind = "push"`) against a push service on this machine (tests/support/push_endpoint.py):
a request reaches its approver's browser signed (VAPID) and encrypted (aes128gcm) to the keys the
test made for it, carrying the request's summary and a one-time link that decides; a subscription
the push service says is gone is dropped; the subscription API refuses what no browser sends."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.notify import NotifyActivities
from activities.push_book import StoredPushBook
from channels.push import PushChannel
from config.settings import ConfigError, Settings
from core.conversation_model import NotificationInput
from core.push_subscription import PushSubscription
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, wait_pending, wait_status, workspace_of
from tests.support.notify_support import write_policy
from tests.support.push_endpoint import PushEndpoint
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client
from worker import build_worker

PHONES = """
ask = ["write_file", "run_shell"]

[channels.phones]
kind = "push"

[[approvers]]
match = ["run_shell"]
approvers = ["alice"]
notify = ["phones"]
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_its_table_reads_as_the_push_kind_and_a_stray_key_is_one_line(tmp_path: Path) -> None:
    settings = Settings(policy_file=write_policy(tmp_path / "policy.toml", PHONES))
    assert isinstance(settings.load_notify().channels["phones"], PushChannel)
    stray = write_policy(tmp_path / "stray.toml", '[channels.phones]\nkind = "push"\nurl = "https://x.example"\n')
    with pytest.raises(ConfigError) as refused:
        Settings(policy_file=stray).load_notify()
    assert "channels.phones.push.url: Extra inputs are not permitted" in str(refused.value)
    assert "\n" not in str(refused.value)


async def test_the_approvers_browser_gets_the_summary_signed_and_encrypted_with_a_link_that_decides(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path, histories: HistoryRecorder
) -> None:
    endpoint = PushEndpoint().start()
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", PHONES))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "echo pushed > pushed.txt"}))
    alice, bob = await add_person(settings, "alice", []), await add_person(settings, "bob", [])
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            for token, name in ((alice, "alice-phone"), (bob, "bob-phone")):
                made = await http.post(
                    "/api/push/subscriptions", json=endpoint.subscription(name), headers=bearer(token)
                )
                assert made.status_code == 201, made.text
            cid = histories.track(await start_conversation(client, settings, "one command"))
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            [push] = await eventually(lambda: endpoint.count(1))

            assert push.path == "/push/alice-phone"  # bob may not decide it: his phone stays quiet
            assert push.verified, push.vapid_problem
            assert push.vapid_key == settings.push_keys().public_key
            assert push.claims["aud"] == endpoint.origin
            assert push.headers["content-encoding"] == "aes128gcm" and push.headers["urgency"] == "high"
            assert 3000 < int(push.headers["ttl"]) <= 3600  # kept until the request expires
            assert push.payload is not None
            link = push.payload.pop("url")
            assert push.payload == {
                "title": "Approval needed",
                "body": "run_shell: echo pushed > pushed.txt",
                "tag": row["request_id"],
            }
            assert link.startswith(f"{settings.link_base}/d/")
            page = await http.get(urlsplit(link).path)
            assert page.status_code == 200 and "echo pushed" in page.text
            decided = await http.post(urlsplit(link).path, data={"decision": "allow"})
            assert decided.status_code == 200, decided.text
            await wait_status(client, cid, "idle")
    finally:
        endpoint.stop()
    assert (workspace_of(settings, cid) / "pushed.txt").read_text().strip() == "pushed"
    decided_row = approval_row(settings.approvals_db, row["request_id"])
    assert (decided_row["decision"], decided_row["decided_by"]) == ("allow", "alice")
    assert len(endpoint.pushes) == 1


async def test_a_subscription_its_push_service_says_is_gone_is_dropped(tmp_path: Path) -> None:
    endpoint = PushEndpoint().start()
    endpoint.answers["/push/old-laptop"] = 410
    settings = Settings(approvals_db=tmp_path / "approvals.db", policy_file=write_policy(tmp_path / "p.toml", PHONES))
    store, ledger = ProjectionStore(settings.approvals_db), Ledger(settings.ledger_db)
    try:
        for name in ("old-laptop", "phone"):
            await store.save_push_subscription(endpoint.subscription_of(name, "alice"))
        notify = NotifyActivities(
            settings.load_notify(),
            settings.link_base,
            ledger,
            people=store,
            link_key=settings.decision_link_key,
            push=StoredPushBook(store, settings.push_keys),
        )
        notice = notification(["alice"])
        assert await ActivityEnvironment().run(notify.notify_approval, notice) == f"{notice.key}: delivered"
        left = await store.push_subscriptions(None)
    finally:
        await ledger.close()
        await store.close()
        endpoint.stop()
    assert [s.endpoint for s in left] == [f"{endpoint.origin}/push/phone"]
    assert sorted(push.path for push in endpoint.pushes) == ["/push/old-laptop", "/push/phone"]
    assert all(push.verified and push.payload is not None for push in endpoint.pushes)


async def test_the_subscription_api_refuses_what_no_browser_sends_in_one_line(tmp_path: Path) -> None:
    settings = Settings(approvals_db=tmp_path / "approvals.db", ui_token="shared-ui-token")
    endpoint = PushEndpoint()  # nothing is sent: its subscriptions are only shapes
    alice, bob = await add_person(settings, "alice", []), await add_person(settings, "bob", [])
    good = endpoint.subscription("alice-phone")
    refusals = [
        (None, good, 401),  # no credential
        ("shared-ui-token", good, 403),  # the shared token names nobody to notify
        (alice, {**good, "endpoint": "http://push.example/x"}, 422),  # plain http off this machine
        (alice, {**good, "endpoint": "ftp://127.0.0.1/x"}, 422),
        (alice, {**good, "keys": {**good["keys"], "p256dh": "AAAA"}}, 422),  # not a P-256 point
        (alice, {**good, "keys": {**good["keys"], "auth": "!!not base64!!"}}, 422),
        (alice, {"endpoint": good["endpoint"]}, 422),  # no keys
        (alice, {**good, "extra": 1}, 422),
        (alice, {**good, "expirationTime": 1_000_000}, 422),  # ended in 1970
    ]
    async with api_client(settings, None) as http:
        for token, body, status in refusals:
            sent = await http.post("/api/push/subscriptions", json=body, headers=bearer(token) if token else {})
            message = sent.json()["error"]["message"]
            assert sent.status_code == status and "\n" not in message, (body, sent.text)
        not_json = await http.post(
            "/api/push/subscriptions", content=b"{", headers={**bearer(alice), "Content-Type": "application/json"}
        )
        assert not_json.status_code == 400
        assert (await http.get("/api/push/key")).status_code == 401
        assert await stored(settings) == []

        made = await http.post("/api/push/subscriptions", json=good, headers=bearer(alice))
        assert made.json() == {"endpoint": good["endpoint"], "person": "alice"}
        key = await http.get("/api/push/key", headers=bearer(bob))
        assert key.json() == {"public_key": settings.push_keys().public_key}
        mine = {"endpoint": good["endpoint"]}
        others = await http.delete("/api/push/subscriptions", params=mine, headers=bearer(bob))
        assert others.status_code == 404  # not bob's to remove
        assert [s.person for s in await stored(settings)] == ["alice"]
        own = await http.delete("/api/push/subscriptions", params=mine, headers=bearer(alice))
        assert own.status_code == 200
        assert await stored(settings) == []


async def stored(settings: Settings) -> list[PushSubscription]:
    store = ProjectionStore(settings.approvals_db)
    try:
        return await store.push_subscriptions(None)
    finally:
        await store.close()


def notification(approvers: list[str] | None) -> NotificationInput:
    now = datetime.now(UTC)
    return NotificationInput(
        key="perm_c_1:phones:request",
        channel="phones",
        kind="request",
        request_id="perm_c_1",
        conversation_id="c",
        tool_name="run_shell",
        arguments={"command": "make deploy"},
        approvers=approvers,
        expires_at=now + timedelta(hours=1),
        created_at=now,
    )


async def test_a_group_reaches_its_members_and_a_request_naming_nobody_reaches_everyone(tmp_path: Path) -> None:
    settings = Settings(approvals_db=tmp_path / "approvals.db")
    await add_person(settings, "alice", ["ops"])
    await add_person(settings, "bob", ["dev"])
    endpoint = PushEndpoint()
    store = ProjectionStore(settings.approvals_db)
    try:
        for person in ("alice", "bob", "carol"):  # carol subscribed once, and was removed since
            await store.save_push_subscription(endpoint.subscription_of(person, person))
        book = StoredPushBook(store, settings.push_keys)
        by_group = await book.subscriptions(["group:ops"])
        by_name = await book.subscriptions(["bob", "group:nobody"])
        everyone = await book.subscriptions(None)
        also_everyone = await book.subscriptions([])
    finally:
        await store.close()
    assert [s.person for s in by_group] == ["alice"]
    assert [s.person for s in by_name] == ["bob"]
    assert sorted(s.person for s in everyone) == sorted(s.person for s in also_everyone) == ["alice", "bob", "carol"]


async def test_a_vapid_key_that_is_no_key_is_given_up_in_one_line_and_pushes_nothing(tmp_path: Path) -> None:
    endpoint = PushEndpoint().start()
    settings = Settings(
        approvals_db=tmp_path / "approvals.db",
        policy_file=write_policy(tmp_path / "p.toml", PHONES),
        vapid_private_key="not-a-key",
    )
    store, ledger = ProjectionStore(settings.approvals_db), Ledger(settings.ledger_db)
    try:
        await store.save_push_subscription(endpoint.subscription_of("phone", "alice"))
        notify = NotifyActivities(
            settings.load_notify(),
            settings.link_base,
            ledger,
            people=store,
            push=StoredPushBook(store, settings.push_keys),
        )
        with pytest.raises(ApplicationError) as given_up:
            await ActivityEnvironment().run(notify.notify_approval, notification(["alice"]))
        async with api_client(settings, None) as http:
            key = await http.get("/api/push/key")
    finally:
        await ledger.close()
        await store.close()
        endpoint.stop()
    assert given_up.value.non_retryable and "VAPID_PRIVATE_KEY is not a P-256 private key" in str(given_up.value)
    assert "\n" not in str(given_up.value)
    assert key.status_code == 503 and key.json()["error"]["message"].startswith("VAPID_PRIVATE_KEY is not")
    assert endpoint.pushes == []


async def test_a_retry_pushes_only_to_the_browsers_the_failed_attempt_missed(tmp_path: Path) -> None:
    endpoint = PushEndpoint().start()
    endpoint.answers["/push/flaky"] = 503  # its push service is down for the first attempt
    settings = Settings(approvals_db=tmp_path / "approvals.db", policy_file=write_policy(tmp_path / "p.toml", PHONES))
    store, ledger = ProjectionStore(settings.approvals_db), Ledger(settings.ledger_db)
    try:
        for name in ("phone", "flaky"):
            await store.save_push_subscription(endpoint.subscription_of(name, "alice"))
        notify = NotifyActivities(
            settings.load_notify(),
            settings.link_base,
            ledger,
            people=store,
            push=StoredPushBook(store, settings.push_keys),
        )
        notice = notification(["alice"])
        with pytest.raises(RuntimeError, match="answered HTTP 503 for alice"):
            await attempt(notify, notice, 1)
        del endpoint.answers["/push/flaky"]
        assert await attempt(notify, notice, 2) == f"{notice.key}: delivered"
        assert await attempt(notify, notice, 3) == f"{notice.key}: delivered earlier"
    finally:
        await ledger.close()
        await store.close()
        endpoint.stop()
    assert sorted(push.path for push in endpoint.pushes) == ["/push/flaky", "/push/flaky", "/push/phone"]
    assert all(push.verified and push.payload is not None for push in endpoint.pushes)


async def attempt(notify: NotifyActivities, notice: NotificationInput, number: int) -> str:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, attempt=number)
    result: str = await environment.run(notify.notify_approval, notice)
    return result
