"""The grant routes: `GET/POST /api/grants`, `DELETE /api/grants/{id}` (400 a bad pattern, 403 a
maker the approver rules refuse or another site, 404 unknown), the offer each waiting card carries,
and a grant made with an approval, which approves at once what else waits and it covers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from temporalio.client import Client

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, start_and_wait, wait_status
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person, api_client, seed_conversation, seed_pending
from worker import build_worker

POLICY = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
"""


async def test_grants_are_made_listed_and_revoked_under_the_approver_rules(settings: Settings, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    gated = replace(settings, policy_file=str(policy))
    sam = {"Authorization": f"Bearer {await add_person(gated, 'sam', ['sre'])}"}
    await seed_conversation(gated, "conv-a")
    request_id = await seed_pending(gated, "conv-a", arguments={"path": "docs/guide/a.md", "content": "x"})
    async with api_client(gated, None) as http:
        assert (await http.get("/api/grants")).json() == []
        shell = {"pattern": "run_shell(git status*)", "scope": "everywhere"}

        bad = await http.post("/api/grants", json={**shell, "pattern": "run_shell("})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "BadGrant"
        refused = await http.post("/api/grants", json={**shell, "name": "sam"})
        assert refused.status_code == 403 and refused.json()["error"]["type"] == "GrantRefused", "a typed name"
        cross = await http.post("/api/grants", json=shell, headers={**sam, "Origin": "http://evil.example"})
        assert cross.status_code == 403 and cross.json()["error"]["type"] == "CrossSiteRequest"
        assert (await http.post("/api/grants", json={**shell, "scope": "here"}, headers=sam)).status_code == 422
        no_id = await http.post("/api/grants", json={**shell, "scope": "conversation"}, headers=sam)
        assert no_id.status_code == 400
        unknown = {**shell, "scope": "conversation", "conversation_id": "conv-none"}
        assert (await http.post("/api/grants", json=unknown, headers=sam)).status_code == 404

        made = await http.post("/api/grants", json={**shell, "for_seconds": 3600}, headers=sam)
        assert made.status_code == 201, made.text
        grant = made.json()["grant"]
        assert made.json()["approved"] == []
        assert (grant["made_by"], grant["door"], grant["status"]) == ("sam", "ui", "active")
        assert grant["expires_at"] is not None
        docs = {"pattern": "write_file(src/**)", "scope": "conversation", "conversation_id": "conv-a"}
        other = (await http.post("/api/grants", json=docs)).json()["grant"]
        assert (other["made_by"], other["conversation_id"]) == ("web", "conv-a"), "no approver rule: anyone"
        assert [g["grant_id"] for g in (await http.get("/api/grants")).json()] == [grant["grant_id"], other["grant_id"]]

        assert (await http.delete("/api/grants/gr_0000000000")).status_code == 404
        ended = await http.delete(f"/api/grants/{grant['grant_id']}", headers=sam)
        assert ended.status_code == 200 and (ended.json()["status"], ended.json()["revoked_by"]) == ("revoked", "sam")
        assert [g["grant_id"] for g in (await http.get("/api/grants")).json()] == [other["grant_id"]]
        everything = (await http.get("/api/grants?all=1")).json()
        assert [g["status"] for g in everything] == ["revoked", "active"]

        [card] = (await http.get("/api/approvals")).json()
        assert card["grant_offer"] == {
            "rules": ["write_file(docs/guide/**)"],
            "wider": ["write_file(docs/**)", "write_file"],
        }
        assert (await http.get(f"/api/approvals/{request_id}")).json()["grant_offer"] == card["grant_offer"]


async def test_a_grant_with_an_approval_approves_what_else_waits_that_it_covers(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(
        ("c1", "run_shell", {"command": "echo a > a.txt"}),
        ("c2", "run_shell", {"command": "echo b > b.txt"}),
        ("c3", "run_shell", {"command": "ls -la"}),
    )
    db = settings.approvals_db
    async with build_worker(client, settings), api_client(settings, client) as http:
        started = await start_and_wait(client, settings, "write", histories, pending=3)
        c1, c2, c3 = (f"perm_{started.conversation_id}_{call}" for call in ("c1", "c2", "c3"))
        card = (await http.get(f"/api/approvals/{c1}")).json()
        assert card["grant_offer"]["rules"] == ["run_shell(echo a > a.txt)"]
        echo = {"pattern": "run_shell(echo *)", "scope": "conversation", "for_seconds": 3600}
        path = f"/api/approvals/{c1}/decision"

        denied = await http.post(path, json={"decision": "deny", "grant": echo})
        assert denied.status_code == 400
        missed = await http.post(path, json={"decision": "allow", "grant": {**echo, "pattern": "run_shell(ls *)"}})
        assert missed.status_code == 400 and "does not cover" in missed.json()["error"]["message"]
        assert approval_row(db, c1)["resolved_at"] is None

        sent = await http.post(path, json={"decision": "allow", "args_hash": card["args_hash"], "grant": echo})
        assert sent.status_code == 200, sent.text
        assert sent.json()["approved"] == [c2]
        grant = sent.json()["grant"]
        assert (grant["conversation_id"], grant["from_request"], grant["door"]) == (started.conversation_id, c1, "ui")

        async def decided() -> bool:
            return approval_row(db, c2)["resolved_at"] is not None

        await eventually(decided, timeout=10)
        row = (await http.get(f"/api/approvals/{c2}")).json()
        assert (row["decided_by"], row["decided_via"]) == ("web", "grant")
        assert row["reason"] == f"grant {grant['grant_id']}: run_shell(echo *)"
        assert approval_row(db, c3)["resolved_at"] is None, "ls is not an echo"

        ls = await http.post("/api/grants", json={"pattern": "run_shell(ls *)", "scope": "everywhere"})
        assert ls.status_code == 201 and ls.json()["approved"] == [c3]
        await wait_status(client, started.conversation_id, "idle")
