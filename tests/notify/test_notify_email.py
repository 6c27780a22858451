"""Email notifications against a real SMTP server (aiosmtpd): one message per request and person,
with the exact arguments escaped and that person's own one-time link, whose GET decides nothing
and whose form decides once; retried while the server is down and never sent twice to anyone; a
refused login or a permanent refusal is given up in one line; a bad address never loads."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.ledger import Ledger
from activities.notify import NotifyActivities
from channels.email import EmailChannel
from config.settings import ConfigError, Settings
from core.conversation_model import NotificationInput, arguments_hash
from core.decision_links import verify
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.mail_receiver import Mail, MailReceiver, tls_pair
from tests.support.notify_support import write_policy
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker

# The permanent-refusal cases log in without TLS on purpose (to 127.0.0.1); aiosmtpd warns of that.
pytestmark = pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
LINK_BASE = "http://approvals.test"
CONTENT = "<script>alert(1)</script> \u202eevil"  # markup and a right-to-left override
LINK = re.compile(rf"{re.escape(LINK_BASE)}/d/[A-Za-z0-9_.-]+")
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def mail_policy(port: int, timers: str = "") -> str:
    return f"""
ask = ["write_file"]

[notifications]
link_base = "{LINK_BASE}"

[channels.mail]
kind = "email"
smtp_url = "smtp://127.0.0.1:{port}"
from = "approvals@example.com"
to = ["alice", "bob"]

[channels.leads-mail]
kind = "email"
smtp_url = "smtp://127.0.0.1:{port}"
from = "approvals@example.com"
to = ["leads@example.com"]

[[approvers]]
match = ["write_file"]
approvers = ["alice", "bob"]
notify = ["mail"]
{timers}
"""


async def add_people(settings: Settings, *names: str) -> None:
    store = ProjectionStore(settings.approvals_db)
    try:
        for name in names:
            await store.add_user(name, ["leads"] if name == "carol" else [], email=f"{name}@example.com")
    finally:
        await store.close()


def links_in(mail: Mail) -> set[str]:
    return set(LINK.findall(mail.part("plain")))


def subject_kind(mail: Mail) -> str:
    return str(mail.message["Subject"]).strip().partition(":")[0]


def path_of(link: str) -> str:
    return link.removeprefix(LINK_BASE)


@pytest.fixture
def receiver() -> Iterator[MailReceiver]:
    running = MailReceiver().start()
    yield running
    running.stop()


async def test_each_approver_gets_one_mail_with_the_exact_arguments_and_their_own_link_that_decides_once(
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    tmp_path: Path,
    histories: HistoryRecorder,
    receiver: MailReceiver,
) -> None:
    timers = 'remind_after = 2\nreminders = 1\nescalate_after = 3\nescalate_to = ["leads-mail"]'
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", mail_policy(receiver.port, timers)))
    arguments = {"path": "notes.txt", "content": CONTENT}
    model.behaviour = calls_then_summary(("c1", "write_file", arguments))
    await add_people(settings, "alice", "bob")
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "write the notes"))
        [row] = await wait_pending(settings.approvals_db, cid, 1)
        rid = row["request_id"]
        # The request to each approver, a reminder to each, and the escalation to the leads' address.
        mails = await eventually(lambda: receiver.count(5), timeout=60)
        by_subject = {(subject_kind(m), m.message["To"]): m for m in mails}
        assert len(mails) == 5 and set(by_subject) == {
            ("Approval needed", "alice@example.com"),
            ("Approval needed", "bob@example.com"),
            ("Reminder", "alice@example.com"),
            ("Reminder", "bob@example.com"),
            ("Escalated", "leads@example.com"),
        }
        first = by_subject[("Approval needed", "alice@example.com")]
        for mail in mails:
            plain, rich = mail.part("plain"), mail.part("html")
            assert mail.recipients == [mail.message["To"]] and f"[{rid}]" in mail.message["Subject"]
            assert "<script>alert(1)</script> \\u202eevil" in plain and "\u202e" not in plain
            assert "&lt;script&gt;alert(1)&lt;/script&gt; \\u202eevil" in rich
            assert "<script" not in rich and "\u202e" not in rich and "hidden characters" in plain
            assert arguments_hash(arguments) in plain and arguments_hash(arguments) in rich
        assert str(first.message["Subject"]).strip() == f"Approval needed: write_file waits for you [{rid}]"
        reminder = by_subject[("Reminder", "alice@example.com")]
        assert reminder.message["In-Reply-To"] == first.message["Message-ID"]  # threaded under the request
        escalated = by_subject[("Escalated", "leads@example.com")]
        assert not links_in(escalated) and f"{LINK_BASE}/approvals/{rid}" in escalated.part("plain")
        assert "decides nothing" in escalated.part("plain")

        links = [links_in(mail) for mail in mails if mail.message["To"] != "leads@example.com"]
        assert [len(found) for found in links] == [1, 1, 1, 1] and len(set().union(*links)) == 4  # each its own
        [alice_link] = links_in(first)
        claims = verify(settings.decision_link_key(), alice_link.rpartition("/")[2], datetime.now(UTC).timestamp())
        assert (claims.request_id, claims.person, claims.args_hash) == (rid, "alice", arguments_hash(arguments))

        page = await http.get(path_of(alice_link))
        assert page.status_code == 200 and "Approve" in page.text
        assert approval_row(settings.approvals_db, rid)["resolved_at"] is None  # the GET decided nothing
        decided = await http.post(path_of(alice_link), content=b"decision=allow", headers=FORM)
        assert decided.status_code == 200, decided.text
        await wait_status(client, cid, "idle")
        again = await http.post(path_of(alice_link), content=b"decision=deny", headers=FORM)
        assert again.status_code == 409
        [bob_link] = links_in(by_subject[("Approval needed", "bob@example.com")])
        assert (await http.post(path_of(bob_link), content=b"decision=deny", headers=FORM)).status_code == 409

    assert (workspace_of(settings, cid) / "notes.txt").read_text() == CONTENT
    ledger = rows(settings.ledger_db, "SELECT state FROM tool_executions WHERE request_id = ?", rid)
    assert ledger == [{"state": "finished"}]  # the tool ran once
    decided_row = approval_row(settings.approvals_db, rid)
    assert (decided_row["decision"], decided_row["decided_by"]) == ("allow", "alice")
    assert len(receiver.mails) == 5  # the decision stopped the timers: nothing more was sent


async def test_a_server_that_is_down_gets_the_mail_once_it_is_up(
    client: Client, settings: Settings, model: ScriptedModel, tmp_path: Path, histories: HistoryRecorder
) -> None:
    receiver = MailReceiver()  # its port is chosen, but nothing listens yet
    settings = replace(settings, policy_file=write_policy(tmp_path / "policy.toml", mail_policy(receiver.port)))
    model.behaviour = calls_then_summary(("c1", "write_file", {"path": "never.txt", "content": "no"}))
    await add_people(settings, "alice", "bob")
    try:
        async with build_worker(client, settings), api_client(settings, client) as http:
            cid = histories.track(await start_conversation(client, settings, "write"))
            [row] = await wait_pending(settings.approvals_db, cid, 1)
            handle = client.get_workflow_handle(cid)

            async def sending_retried() -> bool:
                pending = (await handle.describe()).raw_description.pending_activities
                return any(a.activity_type.name == "notify_approval" and a.attempt >= 2 for a in pending)

            await eventually(sending_retried)  # a refused connection is retried
            assert receiver.mails == []
            receiver.start()
            mails = await eventually(lambda: receiver.count(2), timeout=90)

            async def sending_done() -> bool:
                return not (await handle.describe()).raw_description.pending_activities

            await eventually(sending_done)
            assert sorted(m.message["To"] for m in mails) == ["alice@example.com", "bob@example.com"]
            [link] = links_in(mails[0])
            denied = await http.post(path_of(link), content=b"decision=deny", headers=FORM)
            assert denied.status_code == 200, denied.text
            await wait_status(client, cid, "idle")
    finally:
        receiver.stop()
    assert len(receiver.mails) == 2  # once each, retries and all
    assert approval_row(settings.approvals_db, row["request_id"])["decision"] == "deny"
    assert not (workspace_of(settings, cid) / "never.txt").exists()


# The notify activity alone, against the server: what is given up, what is retried, and to whom.

NOW = datetime.now(UTC)


def notice(kind: str = "request") -> NotificationInput:
    return NotificationInput(
        key=f"perm_c_1:mail:{kind}",
        channel="mail",
        kind=kind,  # type: ignore[arg-type]
        request_id="perm_c_1",
        conversation_id="c",
        tool_name="write_file",
        arguments={"path": "a.txt", "content": "x"},
        approvers=["alice", "bob"],
        expires_at=NOW + timedelta(hours=1),
        created_at=NOW,
    )


@pytest_asyncio.fixture
async def people(tmp_path: Path) -> AsyncIterator[ProjectionStore]:
    store = ProjectionStore(tmp_path / "approvals.db")
    await store.add_user("alice", [], email="alice@example.com")
    await store.add_user("bob", [], email="bob@example.com")
    await store.add_user("dave", [])  # no email
    yield store
    await store.close()


@pytest_asyncio.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    opened = Ledger(tmp_path / "ledger.db")
    yield opened
    await opened.close()


def activity(tmp_path: Path, table: str, ledger: Ledger, people: ProjectionStore) -> NotifyActivities:
    body = f'[channels.mail]\nkind = "email"\nfrom = "approvals@example.com"\n{table}\n'
    config = Settings(policy_file=write_policy(tmp_path / "policy.toml", body)).load_notify()
    return NotifyActivities(config, LINK_BASE, ledger, people=people, link_key=lambda: b"test-link-key")


async def run(notify: NotifyActivities, notification: NotificationInput, attempt: int = 1) -> str:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, attempt=attempt)
    return await environment.run(notify.notify_approval, notification)


async def test_a_retry_reaches_only_those_the_failed_attempt_missed(
    tmp_path: Path, ledger: Ledger, people: ProjectionStore
) -> None:
    busy = {"bob@example.com"}
    receiver = MailReceiver(refuse=lambda to: "451 4.3.0 busy, try later" if to in busy else None).start()
    try:
        notify = activity(tmp_path, f'smtp_url = "{receiver.url()}"\nto = ["alice", "bob"]', ledger, people)
        with pytest.raises(RuntimeError, match=r"^mail: the SMTP server refused the recipient: 451 4\.3\.0 busy"):
            await run(notify, notice())
        assert [m.message["To"] for m in receiver.mails] == ["alice@example.com"]
        busy.clear()
        assert await run(notify, notice(), attempt=2) == "perm_c_1:mail:request: delivered"
        assert await run(notify, notice(), attempt=3) == "perm_c_1:mail:request: delivered earlier"
        assert await run(notify, notice("reminder"), attempt=1) == "perm_c_1:mail:reminder: delivered"
    finally:
        receiver.stop()
    sent = [(m.message["To"], subject_kind(m)) for m in receiver.mails]
    assert sent == [
        ("alice@example.com", "Approval needed"),
        ("bob@example.com", "Approval needed"),
        ("alice@example.com", "Reminder"),
        ("bob@example.com", "Reminder"),
    ]


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('to = ["alice"]\nusername_env = "MAIL_USER"\npassword_env = "MAIL_PASSWORD"', "refused the login: 535"),
        ('to = ["nobody@example.com", "alice"]', "refused the recipient: 550 5.1.1 no such mailbox"),
        ('to = ["alice", "dave", "erin", "group:ops"]', "cannot reach dave (no email: starter.py users email dave"),
    ],
)
async def test_a_permanent_refusal_is_given_up_in_one_line(
    tmp_path: Path,
    ledger: Ledger,
    people: ProjectionStore,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    says: str,
) -> None:
    monkeypatch.setenv("MAIL_USER", "mailer")
    monkeypatch.setenv("MAIL_PASSWORD", "wrong")
    refuse = {"nobody@example.com": "550 5.1.1 no such mailbox"}
    receiver = MailReceiver(refuse=refuse.get, logins={"mailer": "right"} if "MAIL_USER" in table else None).start()
    try:
        notify = activity(tmp_path, f'smtp_url = "{receiver.url()}"\n{table}', ledger, people)
        with pytest.raises(ApplicationError) as refused:
            await run(notify, notice())
    finally:
        receiver.stop()
    assert refused.value.non_retryable and says in str(refused.value) and "\n" not in str(refused.value)
    # One refused recipient keeps no one else from theirs; a refused login or an unknown name, everyone.
    assert [m.message["To"] for m in receiver.mails] == (["alice@example.com"] if "nobody" in table else [])
    if "dave" in table:
        assert "erin (no such person); group:ops (no member with an email)" in str(refused.value)


@pytest.mark.parametrize("mode", ["starttls", "smtps"])
async def test_the_login_goes_over_tls_starttls_when_offered_or_smtps(
    tmp_path: Path, ledger: Ledger, people: ProjectionStore, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setenv("MAIL_PASSWORD", "right")
    context, certificate = tls_pair(tmp_path)
    tls = {"starttls": context} if mode == "starttls" else {"implicit_tls": context}
    receiver = MailReceiver(logins={"mailer": "right"}, **tls).start()  # type: ignore[arg-type]
    url = receiver.url().replace("://", "://mailer@")
    table = f'smtp_url = "{url}"\npassword_env = "MAIL_PASSWORD"\ntls_ca_file = "{certificate}"\nto = ["alice"]'
    try:
        assert await run(activity(tmp_path, table, ledger, people), notice()) == "perm_c_1:mail:request: delivered"
    finally:
        receiver.stop()
    [mail] = receiver.mails
    assert (mail.tls, mail.login, mail.message["To"]) == (True, "mailer", "alice@example.com")


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('to = ["alice", "bob@@example.com"]', "channels.mail.email.to: Value error, 'bob@@example.com' is not an"),
        ('to = ["alice", "bob@example.com\\nBcc: x@y.z"]', "channels.mail.email.to: Value error, "),
        ("to = []", "channels.mail.email.to: List should have at least 1 item"),
        ('to = ["alice"]\nsmtp_url_env = "X"', "exactly one of smtp_url or smtp_url_env"),
        ('to = ["alice"]\ncc = ["x@y.z"]', "channels.mail.email.cc: Extra inputs are not permitted"),
    ],
)
def test_a_bad_table_is_refused_at_load_in_one_line(tmp_path: Path, table: str, says: str) -> None:
    body = f'[channels.mail]\nkind = "email"\nsmtp_url = "smtp://127.0.0.1:25"\nfrom = "a@example.com"\n{table}\n'
    with pytest.raises(ConfigError) as refused:
        Settings(policy_file=write_policy(tmp_path / "policy.toml", body)).load_notify()
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "says"),
    [("http://u:secret@mail.example", "smtp_url must be smtp://"), ("smtp://u:secret@mail:99999", "bad port")],
)
def test_a_bad_server_address_is_refused_without_its_password(tmp_path: Path, url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says) as refused:
        EmailChannel.model_validate({"kind": "email", "smtp_url": url, "from": "a@example.com", "to": ["alice"]})
    assert "secret" not in str(refused.value)
