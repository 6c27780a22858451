"""Every use of a one-time link but the first valid one is refused with a page (its status, one
line of why) and changes nothing: expired, signed with another key, damaged or tampered with, on
other arguments (stale), posted from another site, by a person the approver rules refuse, after a
decision elsewhere. The approver rules and M-of-N apply to a link's person as to any door's."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import arguments_hash
from core.decision_links import LinkClaims, sign
from doors.control import start_conversation
from doors.decision_links import decision_link
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import eventually, rows, wait_pending, wait_status, workspace_of
from tests.support.link_support import decided, refusal, uses, worker_and_ui
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import add_person

POLICY = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["alice"]
"""


async def test_every_other_use_of_a_link_is_refused_with_its_page_and_changes_nothing(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = replace(settings, policy_file=str(policy))
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo one >> one.txt"}),
        ("c2", "run_shell", {"command": "echo two >> two.txt"}),
        ("c3", "run_shell", {"command": "kubectl version; echo three >> three.txt"}),
    )
    async with worker_and_ui(client, settings) as (_, http):
        cid = histories.track(await start_conversation(client, settings, "links refused"))
        one, two, gated = (f"perm_{cid}_{call}" for call in ("c1", "c2", "c3"))
        await wait_pending(settings.approvals_db, cid, 3)
        key, now = settings.decision_link_key(), time.time()
        hashes = {
            r["request_id"]: arguments_hash(json.loads(r["details_json"])["arguments"])
            for r in rows(settings.approvals_db, "SELECT request_id, details_json FROM ui_pending_approvals")
        }

        def token(request_id: str, *, args_hash: str | None = None, person: str = "carol", **kw: Any) -> str:
            """A link as this service signs one (its key, the call's own hash), or as told otherwise."""
            claims = LinkClaims.new(
                request_id, args_hash or hashes[request_id], person, kw.get("expires_at", int(now) + 3600)
            )
            return sign(kw.get("key", key), claims)

        async def refused(link: str, status: int, why: str, headers: dict[str, str] | None = None) -> None:
            """The page (unless the refusal is the form's alone) and the form's post say why, with `status`."""
            answers = [await http.post(f"/d/{link}", data={"decision": "allow"}, headers=headers)]
            answers += [] if headers else [await http.get(f"/d/{link}")]
            for answer in answers:
                assert answer.status_code == status, (answer.request.method, answer.text)
                assert why in refusal(answer), refusal(answer)

        before = {rid: decided(settings, rid) for rid in (one, two, gated)}
        await refused(token(one, expires_at=int(now) - 1), 410, "this link has expired")
        await refused(token(one, key=b"another deployment's key"), 403, "not signed by this service")
        await refused(token(one, args_hash="0" * 16), 409, f"{one} is stale: decided on arguments hash 0000")
        await refused("not-a-token", 403, "this is not a decision link")

        # Tampering: the body of a link for `one` rewritten to name `two` no longer matches its MAC.
        body, mac = token(one).split(".")
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        forged = base64.urlsafe_b64encode(json.dumps({**claims, "request_id": two}).encode()).rstrip(b"=").decode()
        await refused(f"{forged}.{mac}", 403, "not signed by this service")

        # Another site's page cannot post a link's form, whatever token it holds.
        await refused(token(one), 403, "cross-site request refused", {"Sec-Fetch-Site": "cross-site"})
        await refused(token(one), 403, "cross-origin request refused", {"Origin": "https://evil.example"})

        # The approver rules apply to a link's person: carol may not decide the kubectl call.
        await refused(token(gated), 403, f"decide {gated}")
        minted = await run_cli(settings, client, "link", gated, "--for", "carol")
        assert minted.returncode == 3 and "carol" in one_line(minted.stderr)

        # Decided elsewhere first (the CLI): the link minted before it decides nothing.
        late = token(two)
        cli = await run_cli(settings, client, "approve", two, "--as", "dave")
        assert cli.returncode == 0, cli.stderr
        await refused(late, 409, f"{two} was already")

        assert {rid: decided(settings, rid) for rid in (one, gated)} == {rid: before[rid] for rid in (one, gated)}
        assert uses(settings) == []
        assert not (workspace_of(settings, cid) / "one.txt").exists()
        assert not (workspace_of(settings, cid) / "three.txt").exists()

        # alice may decide it; her link works, once.
        for rid, person in ((one, "carol"), (gated, "alice")):
            sent = await http.post(f"/d/{token(rid, person=person)}", data={"decision": "allow"})
            assert sent.status_code == 200, sent.text
        await wait_status(client, cid, "idle", tool_results=3)

    await eventually(_ran_once(settings, cid))
    assert [u["request_id"] for u in sorted(uses(settings), key=lambda u: u["request_id"])] == sorted([one, gated])
    assert decided(settings, two)[:2] == ("allow", "dave")


TWO_PERSON = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
required = 2
"""


async def test_links_of_two_people_make_a_two_person_approval_and_the_call_runs_once(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "two.toml"
    policy.write_text(TWO_PERSON)
    settings = replace(settings, policy_file=str(policy))
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version; echo ran >> twice.txt"}))
    for name in ("sam", "sid"):
        await add_person(settings, name, ["sre"])
    async with worker_and_ui(client, settings) as (served, http):
        cid = histories.track(await start_conversation(client, settings, "two-person links"))
        request_id = f"perm_{cid}_c1"
        await wait_pending(settings.approvals_db, cid, 1)
        public = replace(settings, ui_public_url=served.url)
        store = ProjectionStore(settings.approvals_db)
        try:
            sam, sam_again, sid = [await decision_link(public, store, request_id, p) for p in ("sam", "sam", "sid")]
        finally:
            await store.close()

        first = await http.post(sam, data={"decision": "allow"})
        assert first.status_code == 200 and "still needs 1 more approval(s)" in first.text, first.text
        again = await http.post(sam_again, data={"decision": "allow"})
        assert again.status_code == 409 and "sam already approved" in refusal(again)
        assert not (workspace_of(settings, cid) / "twice.txt").exists()
        second = await http.post(sid, data={"decision": "allow"})
        assert second.status_code == 200, second.text
        await wait_status(client, cid, "idle", tool_results=1)

    assert decided(settings, request_id)[:2] == ("allow", "sam, sid")
    assert (workspace_of(settings, cid) / "twice.txt").read_text() == "ran\n", "it ran once, after the second link"
    used = sorted(u["person"] for u in uses(settings))
    assert used == ["sam", "sid"], "the refused second link of sam gave its use back"


def _ran_once(settings: Settings, cid: str) -> Any:
    async def check() -> bool:
        ws = workspace_of(settings, cid)
        files = [ws / f"{n}.txt" for n in ("one", "two", "three")]
        return all(f.exists() and f.read_text() == f"{f.stem}\n" for f in files)

    return check
