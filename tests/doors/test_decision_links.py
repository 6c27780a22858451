"""One-time decision links, end to end: a worker, the UI served over HTTP, the CLI as a user runs it.

GET shows and decides nothing; POST decides once, as the link's person, door `link`, recorded in
the audit with the link's token id; `starter.py link` prints a working URL. (Every other use is
refused: tests/doors/test_decision_link_refusals.py.)"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import arguments_hash
from core.decision_links import verify
from doors.control import start_conversation
from doors.decision_links import decision_link
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.link_support import decided, refusal, resolved, uses, worker_and_ui
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import api_client, seed_pending

MARKUP = "<script>alert(1)</script>\u202e"


async def test_a_link_shows_without_deciding_then_decides_once_as_its_person(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo ran >> once.txt"}),
        ("c2", "write_file", {"path": "denied.txt", "content": MARKUP}),
    )
    async with worker_and_ui(client, settings) as (served, http):
        cid = histories.track(await start_conversation(client, settings, "two calls for links"))
        first, second = f"perm_{cid}_c1", f"perm_{cid}_c2"
        await wait_pending(settings.approvals_db, cid, 2)
        public = {"UI_PUBLIC_URL": served.url}

        minted = await run_cli(settings, client, "link", first, "--for", "alice", env_extra=public)
        assert minted.returncode == 0, minted.stderr
        url = minted.stdout.strip()
        assert url.startswith(served.url + "/d/") and "\n" not in url
        token = url.rsplit("/", 1)[1]
        claims = verify(settings.decision_link_key(), token, time.time())
        assert (claims.request_id, claims.person) == (first, "alice")
        assert claims.args_hash == arguments_hash({"command": "echo ran >> once.txt"})

        # GET, twice, as a mail scanner would: the card, and nothing decided.
        for _ in range(2):
            page = await http.get(url)
            assert page.status_code == 200, page.text
            assert "echo ran &gt;&gt; once.txt" in page.text and 'value="allow"' in page.text
        assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
        assert "script-src 'self'" in page.headers["content-security-policy"] and "set-cookie" not in page.headers
        assert "<script" not in page.text
        assert decided(settings, first)[0] is None and uses(settings) == []
        assert not (workspace_of(settings, cid) / "once.txt").exists()

        # The markup and the hidden character of the other call's arguments are shown, never run.
        other = await run_cli(settings, client, "link", second, "--for", "bob", "--json", env_extra=public)
        other_link = json.loads(other.stdout)
        shown = (await http.get(other_link["url"])).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;\\u202e" in shown and 'class="hidden-flag"' in shown
        assert "<script>alert" not in shown and "\u202e" not in shown

        # A form that names another request changes nothing of it: the token alone names its request.
        denied = await http.post(
            other_link["url"], data={"decision": "deny", "reason": "not that file", "request_id": first}
        )
        assert denied.status_code == 200 and "Denied by bob" in denied.text
        await eventually(lambda: resolved(settings, second))
        assert decided(settings, first)[0] is None and (await http.get(url)).status_code == 200

        approved = await http.post(url, data={"decision": "allow", "reason": "looks fine"})
        assert approved.status_code == 200, approved.text
        assert "Approved by alice" in approved.text
        again = await http.post(url, data={"decision": "deny"})
        assert again.status_code == 409 and "used already: allow by alice" in refusal(again)
        reopened = await http.get(url)
        assert reopened.status_code == 409 and "used already" in refusal(reopened)
        await wait_status(client, cid, "idle", tool_results=2)

    ran = approval_row(settings.approvals_db, first)
    assert (ran["decision"], ran["decided_by"], ran["reason"], ran["execution_state"]) == (
        "allow",
        "alice",
        "looks fine",
        "done",
    )
    assert (workspace_of(settings, cid) / "once.txt").read_text() == "ran\n", "it ran once"
    [ledger] = rows(settings.ledger_db, "SELECT state, attempt FROM tool_executions WHERE request_id = ?", first)
    assert (ledger["state"], ledger["attempt"]) == ("finished", 1)
    assert decided(settings, second)[:3] == ("deny", "bob", "not that file")
    assert not (workspace_of(settings, cid) / "denied.txt").exists()

    audit = await run_cli(settings, client, "audit", "--json")
    trail = {row["request_id"]: row for row in json.loads(audit.stdout) if row["kind"] == "request"}
    assert trail[first]["decided_via"] == "link" and trail[second]["decided_via"] == "link"
    assert [(link["token_id"], link["person"], link["decision"]) for link in trail[first]["links"]] == [
        (claims.token_id, "alice", "allow")
    ]
    assert [link["token_id"] for link in trail[second]["links"]] == [other_link["token_id"]]
    table = await run_cli(settings, client, "audit")
    assert f"link {claims.token_id}" in table.stdout and f"link {other_link['token_id']}" in table.stdout

    unknown = await run_cli(settings, client, "link", f"perm_{cid}_nope", "--for", "alice")
    assert unknown.returncode == 3 and one_line(unknown.stderr) == f"error: no approval request perm_{cid}_nope"
    done = await run_cli(settings, client, "link", first, "--for", "alice")
    assert done.returncode == 3 and "already resolved: allow by alice" in one_line(done.stderr)
    usage = await run_cli(settings, client, "link", first)
    assert usage.returncode == 2 and "--for" in one_line(usage.stderr)


async def test_the_page_needs_no_login_and_sets_no_cookie_even_behind_ui_token(settings: Settings) -> None:
    guarded = replace(settings, ui_token="inbox-token", ui_public_url="http://127.0.0.1")
    request_id = await seed_pending(guarded, "conv-nologin")
    store = ProjectionStore(guarded.approvals_db)
    try:
        url = await decision_link(guarded, store, request_id, "alice")
    finally:
        await store.close()
    async with api_client(guarded, None) as http:
        assert (await http.get("/")).status_code == 303, "the inbox itself still wants the token"
        page = await http.get(url.removeprefix("http://127.0.0.1"))
        style = await http.get("/static/style.css")
    assert page.status_code == 200 and "notes.txt" in page.text and "set-cookie" not in page.headers
    assert style.status_code == 200, "the page's look needs no login either"


@on_both_backends
async def test_a_use_is_recorded_once_and_given_back_when_its_decision_fails(settings: Settings) -> None:
    store = ProjectionStore(settings.approvals_db)
    try:
        assert await store.record_link_use("tok-1", "perm_a_c1", "alice", "allow")
        assert not await store.record_link_use("tok-1", "perm_a_c1", "mallory", "deny")
        used = await store.link_use("tok-1")
        assert used is not None and (used["person"], used["decision"]) == ("alice", "allow")
        await store.release_link_use("tok-1")
        assert await store.link_use("tok-1") is None
        assert await store.record_link_use("tok-1", "perm_a_c1", "alice", "deny")
    finally:
        await store.close()
