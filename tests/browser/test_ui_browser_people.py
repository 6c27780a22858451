"""Two people in real Chromium, each logged in with their own token: one outside the approvers'
group sees the card but cannot decide it (the card says why; the API answers 403 and nothing
changes), the other approves it and the tool runs once; and a two-person rule that needs both
approvals before the call runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from playwright.async_api import Browser, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from tests.conftest import HistoryRecorder
from tests.support.browser_support import screenshot, serve_inbox
from tests.support.helpers import approval_row, rows, start_and_wait, wait_status, workspace_of
from tests.support.scripts import ScriptedModel, calls_then_summary
from tests.support.ui_fixtures import add_person

POLICY = """
ask = ["write_file", "run_shell"]
[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
"""


async def test_only_the_approvers_group_can_decide_and_the_card_says_why(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    guarded = replace(settings, ui_token="shared-token", policy_file=str(policy))
    olly, sam = await add_person(guarded, "olly", ["dev"]), await add_person(guarded, "sam", ["sre"])
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version > ran.txt"}))
    async with serve_inbox(browser, env, guarded, client) as inbox:
        started = await start_and_wait(client, guarded, "deploy", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        request_id = row["request_id"]

        outsider = await inbox.log_in(olly)
        await expect(outsider.locator("#signed-in")).to_have_text("Signed in as olly (dev)")
        await expect(outsider.locator("#decider-label")).to_be_hidden()
        card = outsider.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await expect(card.locator(".not-approver")).to_have_text("Only group:sre may decide this call; you are olly.")
        await expect(card.locator(".button-allow")).to_be_disabled()
        await screenshot(outsider, "inbox-not-an-approver.png")
        status = await outsider.evaluate(
            """async (id) => (await fetch(`/api/approvals/${encodeURIComponent(id)}/decision`, {
                method: "POST", headers: {"Content-Type": "application/json"},
                body: JSON.stringify({decision: "allow"})})).status""",
            request_id,
        )
        assert status == 403
        assert approval_row(guarded.approvals_db, request_id)["decision"] is None
        assert rows(guarded.approvals_db, "SELECT * FROM ui_decision_claims") == []

        approver = await inbox.log_in(sam)
        await expect(approver.locator("#signed-in")).to_have_text("Signed in as sam (sre)")
        card = approver.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await card.locator(".button-allow").click()
        await wait_status(client, cid, "idle")
        await expect(approver.locator("#inbox-empty")).to_be_visible()

    resolved = approval_row(guarded.approvals_db, request_id)
    assert (resolved["decision"], resolved["decided_by"], resolved["execution_state"]) == ("allow", "sam", "done")
    assert (workspace_of(guarded, cid) / "ran.txt").exists()


TWO_PERSON = """
ask = ["run_shell"]
[[approvers]]
match = ["run_shell(kubectl *)"]
approvers = ["group:sre"]
required = 2
"""


async def test_a_two_person_rule_needs_both_people_in_their_own_browsers(
    browser: Browser,
    env: WorkflowEnvironment,
    client: Client,
    settings: Settings,
    model: ScriptedModel,
    histories: HistoryRecorder,
    tmp_path: Path,
) -> None:
    policy = tmp_path / "two.toml"
    policy.write_text(TWO_PERSON)
    guarded = replace(settings, ui_token="shared-token", policy_file=str(policy))
    sam, sid = await add_person(guarded, "sam", ["sre"]), await add_person(guarded, "sid", ["sre"])
    model.behaviour = calls_then_summary(("c1", "run_shell", {"command": "kubectl version; echo ran >> ran.txt"}))
    async with serve_inbox(browser, env, guarded, client) as inbox:
        started = await start_and_wait(client, guarded, "two-person deploy", histories, pending=1)
        cid, [row] = started.conversation_id, started.pending
        request_id = row["request_id"]

        first = await inbox.log_in(sam)
        card = first.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await expect(card.locator(".card-partial")).to_have_text("Approvals: 0 of 2")
        await card.locator(".button-allow").click()
        await expect(card.locator(".card-partial")).to_have_text("Approvals: 1 of 2 (sam)")
        assert approval_row(guarded.approvals_db, request_id)["decision"] is None
        assert not (workspace_of(guarded, cid) / "ran.txt").exists(), "one approval of two runs nothing"

        second = await inbox.log_in(sid)
        card = second.locator(f'#inbox-cards [data-request-id="{request_id}"]')
        await expect(card.locator(".card-partial")).to_have_text("Approvals: 1 of 2 (sam)")
        await screenshot(second, "inbox-two-person-rule.png")
        await card.locator(".button-allow").click()
        await wait_status(client, cid, "idle")
        await expect(second.locator("#inbox-empty")).to_be_visible()

    resolved = approval_row(guarded.approvals_db, request_id)
    assert (resolved["decision"], resolved["decided_by"], resolved["execution_state"]) == ("allow", "sam, sid", "done")
    assert (workspace_of(guarded, cid) / "ran.txt").read_text() == "ran\n", "the call ran exactly once"
