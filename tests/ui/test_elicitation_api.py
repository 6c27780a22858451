"""The question routes: an answer must fit the server's schema, the first answer wins, a question
past its deadline is refused, approver rules name who may answer (by `mcp__SERVER__TOOL`), and
`pending` lists what waits, with hidden characters shown escaped."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client

from config.settings import Settings
from core.tool_model import ToolDef
from storage import elicitations
from storage.store import ProjectionStore
from tests.support.postgres import on_both_backends
from tests.support.processes import run_cli
from tests.support.ui_fixtures import add_person, api_client

TOOL = ToolDef(
    name="mcp__forms__ask",
    description="asks",
    parameters={"type": "object"},
    permission_type="write",
    source="mcp",
    origin="forms",
    remote_name="ask",
)
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]}


async def ask(settings: Settings, expires_in: float = 300, message: str = "Who are you?") -> dict[str, Any]:
    now = datetime.now(UTC)
    question = {
        "question_id": f"elicit-{uuid.uuid4().hex}",
        "conversation_id": "conv-forms",
        "request_id": "perm_conv-forms_c1",
        "server": "forms",
        "tool_name": TOOL.name,
        "tool": TOOL.model_dump(mode="json"),
        "arguments": {},
        "message": message,
        "schema": SCHEMA,
        "asked_at": now.isoformat(),
        "expires_at": (now + timedelta(seconds=expires_in)).isoformat(),
    }
    store = ProjectionStore(settings.approvals_db)
    try:
        await elicitations.ask(store, question)
    finally:
        await store.close()
    return question


def path(question: dict[str, Any]) -> str:
    return f"/api/elicitations/{question['question_id']}"


@on_both_backends
async def test_an_answer_must_fit_the_schema_and_the_first_one_wins(settings: Settings) -> None:
    question = await ask(settings)
    async with api_client(settings, None) as http:
        assert [q["question_id"] for q in (await http.get("/api/elicitations")).json()] == [question["question_id"]]
        unfit = await http.post(f"{path(question)}/answer", json={"action": "accept", "content": {"age": 3}})
        assert unfit.status_code == 422 and "name" in unfit.text
        answered = await http.post(f"{path(question)}/answer", json={"action": "accept", "content": {"name": "Ann"}})
        assert answered.status_code == 200, answered.text
        late = await http.post(f"{path(question)}/answer", json={"action": "decline"})
        shown = (await http.get(path(question))).json()
        waiting = (await http.get("/api/elicitations")).json()
    assert late.status_code == 409 and late.json()["error"]["type"] == "ApprovalAlreadyResolved"
    assert shown["answer"]["action"] == "accept" and shown["answer"]["content"] == {"name": "Ann"}
    assert waiting == []


async def test_a_question_past_its_deadline_is_refused(settings: Settings) -> None:
    question = await ask(settings, expires_in=-1)
    async with api_client(settings, None) as http:
        late = await http.post(f"{path(question)}/answer", json={"action": "decline"})
        unknown = await http.post("/api/elicitations/elicit-nobody/answer", json={"action": "decline"})
    assert late.status_code == 409 and late.json()["error"]["type"] == "QuestionExpired"
    assert unknown.status_code == 404


async def test_approver_rules_name_who_may_answer(settings: Settings, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[approvers]]\nmatch = ["mcp__forms__ask"]\napprovers = ["group:ops"]\n')
    settings = replace(settings, policy_file=str(policy), ui_token="shared-token")
    outsider = await add_person(settings, "olga", ["dev"])
    insider = await add_person(settings, "ivan", ["ops"])
    question = await ask(settings)
    async with api_client(settings, None) as http:
        refused = await http.post(
            f"{path(question)}/answer", json={"action": "decline"}, headers={"Authorization": f"Bearer {outsider}"}
        )
        shared = await http.post(
            f"{path(question)}/answer", json={"action": "decline"}, headers={"Authorization": "Bearer shared-token"}
        )
        allowed = await http.post(
            f"{path(question)}/answer", json={"action": "decline"}, headers={"Authorization": f"Bearer {insider}"}
        )
    assert refused.status_code == 403 and refused.json()["error"]["type"] == "NotAnApprover"
    assert shared.status_code == 403, "the shared token names no one, so it cannot answer for group:ops"
    assert allowed.status_code == 200 and allowed.json()["answer"]["by"] == "ivan"


async def test_pending_lists_waiting_questions(settings: Settings, client: Client) -> None:
    await ask(settings, message="Sign here\u202e please")
    done = await run_cli(settings, client, "pending")
    assert done.returncode == 0, done.stderr
    assert "Questions from MCP servers" in done.stdout and "mcp__forms__ask" in done.stdout
    assert "\u202e" not in done.stdout and "\\u202e" in done.stdout
