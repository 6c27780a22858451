"""The decision refusals have one definition: the workflow, the decision claim and the CLI's
pre-check refuse the same decisions with the same error type and the same words.

Each case is one decision sent three ways: as a raw update to the workflow (its validator judges
it by the workflow's own record), as a claim on the read model (what the UI, Slack and the CLI do
before they signal), and as the CLI command a person would type. None of them may be applied.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from config.settings import Settings
from core.contract import UPDATE_DECIDE
from core.conversation_model import DecisionInput, DecisionResult
from core.refusals import DecisionRefused
from doors.control import get_state, send_decision, start_conversation
from storage.store import ProjectionStore
from tests.conftest import HistoryRecorder
from tests.support.helpers import approval_row, eventually, wait_pending
from tests.support.processes import run_cli
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.stack import one_line
from tests.support.ui_fixtures import add_person
from worker import build_worker

POLICY = """
ask = ["write_file", "run_shell"]

[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre", "alice"]
self_approval = false

[[approvers]]
match = ["run_shell(kubectl apply *)"]
approvers = ["group:sre", "alice"]
required = 2
"""

WRITE = {"path": "f.txt", "content": "x"}


async def through_workflow(client: Client, cid: str, decision: DecisionInput) -> tuple[str | None, str]:
    with pytest.raises(WorkflowUpdateFailedError) as failure:
        await client.get_workflow_handle(cid).execute_update(UPDATE_DECIDE, decision, result_type=DecisionResult)
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    return cause.type, cause.message


async def through_claim(store: ProjectionStore, decision: DecisionInput) -> tuple[str | None, str]:
    with pytest.raises(DecisionRefused) as refused:
        await store.claim_decision(decision)
    return refused.value.error_type, str(refused.value)


async def through_cli(settings: Settings, client: Client, *args: str) -> str:
    done = await run_cli(settings, client, *args)
    assert done.returncode == 3, f"{args} exited {done.returncode}: {done.stderr}"
    line = one_line(done.stderr)
    assert line.startswith("error: "), line
    return line.removeprefix("error: ")


async def test_workflow_claim_and_cli_refuse_the_same_decisions_in_the_same_words(
    client: Client, settings: Settings, model: ScriptedModel, histories: HistoryRecorder, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    settings = replace(settings, policy_file=str(policy))
    for name, groups in (("sid", ["sre"]), ("alice", []), ("bob", []), ("mallory", [])):
        await add_person(settings, name, groups)
    model.behaviour = calls_then_summary(
        ("c1", "write_file", WRITE),
        ("c2", "run_shell", {"command": "kubectl get pods"}),
        ("c3", "run_shell", {"command": "kubectl apply -f app.yaml"}),
    )
    store = ProjectionStore(settings.approvals_db)
    try:
        async with build_worker(client, settings):
            cid = histories.track(await start_conversation(client, settings, "deploy", started_by="sid"))
            await wait_pending(settings.approvals_db, cid, 3)
            c1, c2, c3 = (f"perm_{cid}_{call}" for call in ("c1", "c2", "c3"))
            cases: list[tuple[str, DecisionInput, tuple[str, ...]]] = [
                (
                    "StaleApproval",
                    DecisionInput(request_id=c1, decision="allow", args_hash="0" * 16, principal="bob"),
                    ("approve", c1, "--args-hash", "0" * 16, "--as", "bob"),
                ),
                (
                    "NotAnApprover",
                    DecisionInput(request_id=c2, decision="allow", principal="mallory"),
                    ("approve", c2, "--as", "mallory"),
                ),
                (
                    "NotAnApprover",
                    DecisionInput(request_id=c2, decision="deny", reason="no", principal="sid", groups=["sre"]),
                    ("deny", c2, "--reason", "no", "--as", "sid"),
                ),
                (
                    "InvalidEdit",
                    DecisionInput(request_id=c1, decision="edit", arguments=WRITE, principal="bob"),
                    ("edit", c1, "--set", "path=f.txt", "--as", "bob"),
                ),
                (
                    "InvalidEdit",
                    DecisionInput(
                        request_id=c3,
                        decision="edit",
                        arguments={"command": "kubectl apply -f b.yaml"},
                        principal="alice",
                    ),
                    ("edit", c3, "--set", "command=kubectl apply -f b.yaml", "--as", "alice"),
                ),
                (
                    "UnknownApproval",
                    DecisionInput(request_id=f"perm_{cid}_nope", decision="allow", principal="bob"),
                    ("approve", f"perm_{cid}_nope", "--as", "bob"),
                ),
            ]

            seen: list[str] = []

            async def all_doors_refuse(cases: list[tuple[str, DecisionInput, tuple[str, ...]]]) -> None:
                for error_type, decision, command in cases:
                    workflow_says = await through_workflow(client, cid, decision)
                    claim_says = await through_claim(store, decision)
                    cli_says = await through_cli(settings, client, *command)
                    assert workflow_says == claim_says == (error_type, cli_says), (command, workflow_says, claim_says)
                    seen.append(cli_says)

            await all_doors_refuse(cases)

            async def alice_counted() -> bool:
                [record] = [r for r in (await get_state(client, cid)).pending_approvals if r.request_id == c3]
                return record.approved_by == ["alice"]

            async def c1_recorded() -> bool:
                return approval_row(settings.approvals_db, c1)["decision"] == "allow"

            # Then the decided: alice's is one of two approvals c3 needs; bob approved c1.
            await send_decision(client, settings, DecisionInput(request_id=c3, decision="allow", principal="alice"))
            await send_decision(
                client, settings, DecisionInput(request_id=c1, decision="allow", decided_by="bob", principal="bob")
            )
            await eventually(alice_counted)
            await eventually(c1_recorded)
            await all_doors_refuse(
                [
                    (
                        "ApprovalAlreadyResolved",
                        DecisionInput(request_id=c3, decision="allow", principal="alice"),
                        ("approve", c3, "--as", "alice"),
                    ),
                    (
                        "ApprovalAlreadyResolved",
                        DecisionInput(request_id=c1, decision="deny", reason="late", principal="bob"),
                        ("deny", c1, "--reason", "late", "--as", "bob"),
                    ),
                ]
            )

            state = await get_state(client, cid)
    finally:
        await store.close()

    messages = seen
    assert len(set(messages)) == len(messages), "each case is refused for its own reason"
    assert "sid started this conversation" in messages[2] and "alice already approved" in messages[6]
    assert "already resolved: allow by bob" in messages[7]
    waiting = {r.request_id: (r.resolution, r.approved_by) for r in state.pending_approvals}
    assert waiting == {c2: (None, []), c3: (None, ["alice"])}, "no refused decision changed anything"
    assert approval_row(settings.approvals_db, c2)["decision"] is None
