"""Schemathesis over the UI's own OpenAPI schema, against the served app, a real worker and Temporal.

Every operation but the endless event stream gets generated requests, valid and invalid by the
schema. None may answer 5xx, and a refused one (4xx) must leave everything as it was: the
projection's rows and the waiting workflow's state. Invalid bodies are also aimed at the real
pending request and conversation, where a slip would do harm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections import Counter
from typing import Any

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis.errors import Unsatisfiable
from pydantic import BaseModel, ValidationError
from schemathesis import GenerationMode
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from config.settings import Settings
from demo_model.server import text_reply
from tests.support.helpers import rows, start_and_wait, terminate_if_running, workspace_of
from tests.support.scale import at_scale
from tests.support.scripts import ScriptedModel, calls_then_summary, first_user_text
from tests.support.stack import until
from tests.support.ui_fixtures import served_app
from ui.bodies import DecisionBody, MessageBody
from worker import build_worker

TABLES = ("ui_pending_approvals", "ui_conversations", "ui_events", "ui_decision_claims", "ui_grants")
STATE_KEYS = ("turn_status", "messages", "pending_approvals", "always_allow", "auto_approve", "approvals")


class Fuzz:
    def __init__(self, base_url: str, settings: Settings, conversation_id: str, request_id: str, examples: int) -> None:
        self.base_url = base_url
        self.examples = examples
        self.settings = settings
        self.conversation_id = conversation_id
        self.request_id = request_id
        self.http = requests.Session()
        self.started: set[str] = set()
        self.problems: list[str] = []
        self.statuses: Counter[int] = Counter()
        self._before: dict[str, Any] | None = None

    def snapshot(self) -> dict[str, Any]:
        """Every projection row (but those of conversations the fuzz itself started) and the state."""
        projected = {
            table: [r for r in rows(self.settings.approvals_db, f"SELECT * FROM {table}")
                    if r.get("conversation_id") not in self.started]
            for table in TABLES
        }  # fmt: skip
        view = until(self.workflow_view)
        return {"projection": projected, "state": {key: view[key] for key in STATE_KEYS}}

    def workflow_view(self) -> dict[str, Any] | None:
        """The conversation as the UI shows it, when the worker answered (on a busy machine a query
        may miss its 2 s now and then: then None, and until() asks again)."""
        url = f"{self.base_url}/api/conversations/{self.conversation_id}"
        view: dict[str, Any] = self.http.get(url, timeout=10).json()
        return view if view["worker_online"] else None

    def check(self, case: Any) -> None:
        # Taken again only after a request that was allowed to change something.
        before = self._before = self._before or self.snapshot()
        response = case.call(base_url=self.base_url, session=self.http)
        self.statuses[response.status_code] += 1
        label = f"{case.method} {case.formatted_path} body={json.dumps(case.body, default=str)[:200]}"
        if response.status_code >= 500:
            self.problems.append(f"{response.status_code} from {label}: {response.text[:300]}")
        elif response.status_code >= 400:
            if self.snapshot() != before:
                self.problems.append(f"refused with {response.status_code} but changed state: {label}")
        elif case.method != "GET":
            self._before = None
            if response.status_code == 201 and "conversation_id" in response.json():  # a grant is 201 too
                self.started.add(response.json()["conversation_id"])

    def run(self) -> None:
        schema = schemathesis.openapi.from_url(f"{self.base_url}/api/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()  # type: ignore[union-attr]  # an invalid schema raises here
            if operation.path == "/api/events":
                continue  # a stream that never ends; its Last-Event-ID parsing has its own test
            strategies = [operation.as_strategy(mode) for mode in GenerationMode]
            aimed = self.aimed(operation.path)
            if aimed is not None:
                strategies.append(operation.as_strategy(GenerationMode.NEGATIVE, path_parameters=aimed[0]))
            for strategy in strategies:
                self.explore(strategy, aimed[1] if aimed else None)

    def aimed(self, path: str) -> tuple[dict[str, str], type[BaseModel]] | None:
        if path.endswith("/decision"):
            return {"request_id": self.request_id}, DecisionBody
        if path.endswith("/messages"):
            return {"conversation_id": self.conversation_id}, MessageBody
        return None

    def explore(self, strategy: Any, refused_body: type[BaseModel] | None) -> None:
        @settings(
            max_examples=self.examples, deadline=None, database=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )  # fmt: skip
        @given(case=strategy)
        def one(case: Any) -> None:
            if refused_body is not None and case.path_parameters in (
                {"request_id": self.request_id},
                {"conversation_id": self.conversation_id},
            ):
                assume(not _valid(refused_body, case.body))  # a valid body there would really decide
            self.check(case)

        with contextlib.suppress(Unsatisfiable):  # an operation without parameters has no invalid request
            one()


def _valid(model: type[BaseModel], body: Any) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


@at_scale("examples", 3, 12)  # per operation and mode; 12 is about 200 requests
async def test_schemathesis_finds_no_500_and_no_refusal_changes_state(
    env: WorkflowEnvironment, client: Client, settings: Settings, model: ScriptedModel, examples: int
) -> None:
    write = calls_then_summary(("call_1", "write_file", {"path": "fuzz.txt", "content": "fuzz"}))
    model.behaviour = lambda m: write(m) if first_user_text(m) == "write fuzz" else text_reply("ok")
    async with build_worker(client, settings):
        started = await start_and_wait(
            client, settings, "write fuzz", conversation_id=f"fuzz-{uuid.uuid4().hex[:8]}", pending=1
        )
        cid, [pending] = started.conversation_id, started.pending
        served = served_app(settings, env.client.service_client.config.target_host)
        fuzz = Fuzz(served.url, settings, cid, pending["request_id"], examples)
        try:
            await asyncio.to_thread(fuzz.run)
        finally:
            served.stop()
            for conversation_id in [cid, *fuzz.started]:
                await terminate_if_running(client, conversation_id)
    assert fuzz.problems == []
    refused = sum(n for status, n in fuzz.statuses.items() if 400 <= status < 500)
    assert refused > 8 * examples and fuzz.statuses[200] > examples, fuzz.statuses
    assert not (workspace_of(settings, cid) / "fuzz.txt").exists()
