"""Batch decisions: several waiting calls approved or denied in one action, through the CLI and the
API behind the inbox's batch bar. Each call gets its own recorded decision; one refused call does
not discard the others."""

from __future__ import annotations

from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import arguments_hash
from doors.control import start_conversation
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, rows, wait_pending, wait_status, workspace_of
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import api_client
from worker import build_worker


def writes(*names: str) -> list[tuple[str, str, dict[str, str]]]:
    return [(f"c_{name}", "write_file", {"path": f"{name}.txt", "content": name}) for name in names]


@on_both_backends
async def test_cli_approves_several_and_a_refused_one_does_not_stop_the_others(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(*writes("a", "b", "c", "d"))
    async with build_worker(client, settings):
        cid = histories.track(await start_conversation(client, settings, "four writes"))
        await wait_pending(settings.approvals_db, cid, 4)
        a, b, c, d = (f"perm_{cid}_c_{name}" for name in "abcd")
        first = await run_cli(settings, client, "deny", d, "--as", "zoe", "--reason", "not d")
        assert first.returncode == 0, first.stderr

        batch = await run_cli(settings, client, "approve", a, b, c, d, "--as", "yan")
        await wait_status(client, cid, "idle")

    assert batch.returncode == 3, batch.stderr
    listing = batch.stdout.splitlines()
    assert listing[0] == "Approved 4 calls:"
    for request_id, name in ((a, "a"), (b, "b"), (c, "c"), (d, "d")):
        assert any(request_id in line and f'"{name}.txt"' in line for line in listing[1:5]), (request_id, listing)
    [refusal] = batch.stderr.splitlines()
    assert d in refusal and "already resolved: deny by zoe" in refusal
    for request_id, name in ((a, "a"), (b, "b"), (c, "c")):
        row = approval_row(settings.approvals_db, request_id)
        assert (row["decision"], row["decided_by"], row["execution_state"]) == ("allow", "yan", "done")
        assert (workspace_of(settings, cid) / f"{name}.txt").read_text() == name
    assert approval_row(settings.approvals_db, d)["decision"] == "deny"
    assert not (workspace_of(settings, cid) / "d.txt").exists()
    facts = rows(settings.approvals_db, "SELECT request_id, decided_via FROM ui_decision_facts ORDER BY request_id")
    assert facts == [
        {"request_id": a, "decided_via": "cli"},
        {"request_id": b, "decided_via": "cli"},
        {"request_id": c, "decided_via": "cli"},
        {"request_id": d, "decided_via": "cli"},
    ]


@on_both_backends
async def test_api_batch_gives_each_call_its_own_result(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder
) -> None:
    model.behaviour = calls_then_summary(*writes("p", "q"))
    async with build_worker(client, settings), api_client(settings, client) as http:
        cid = histories.track(await start_conversation(client, settings, "two writes"))
        await wait_pending(settings.approvals_db, cid, 2)
        p, q = f"perm_{cid}_c_p", f"perm_{cid}_c_q"
        items = [
            {"request_id": p, "args_hash": arguments_hash({"path": "p.txt", "content": "p"})},
            {"request_id": q, "args_hash": "0000000000000000"},
            {"request_id": f"perm_{cid}_nothing"},
            {"request_id": p},
        ]
        denied = await http.post("/api/approvals/decisions", json={"decision": "deny", "items": items, "name": "uma"})
        assert denied.status_code == 200, denied.text
        q_hash = arguments_hash({"path": "q.txt", "content": "q"})
        allowed = await http.post(
            "/api/approvals/decisions", json={"decision": "allow", "items": [{"request_id": q, "args_hash": q_hash}]}
        )
        empty = await http.post("/api/approvals/decisions", json={"decision": "allow", "items": []})
        await wait_status(client, cid, "idle")

    outcomes = [(r["request_id"], r["status"], r["error"] and r["error"]["type"]) for r in denied.json()["results"]]
    assert outcomes == [
        (p, "sent", None),
        (q, "refused", "StaleApproval"),
        (f"perm_{cid}_nothing", "refused", "UnknownApproval"),
        (p, "refused", "ApprovalAlreadyResolved"),
    ]
    assert [r["status"] for r in allowed.json()["results"]] == ["sent"]
    assert empty.status_code == 422
    assert (approval_row(settings.approvals_db, p)["decision"], approval_row(settings.approvals_db, q)["decision"]) == (
        "deny",
        "allow",
    )
    assert not (workspace_of(settings, cid) / "p.txt").exists()
    assert (workspace_of(settings, cid) / "q.txt").read_text() == "q"
