"""Property: whatever a batch holds (duplicates, unknown ids, stale hashes, calls someone else decided
first), every call in it gets exactly one result, and every request ends with exactly one decision,
the first valid one. Driven through the API's batch route, real claims and real signals (no worker:
the signals wait in Temporal)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
import pytest_asyncio
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from temporalio.client import Client

from config.settings import Settings
from core.conversation_model import DecisionInput, arguments_hash
from doors import decision_delivery
from doors.control import start_conversation
from storage.store import ProjectionStore
from tests.support.helpers import rows
from tests.support.ui_fixtures import api_client, seed_pending

_example = itertools.count()


@pytest.fixture(autouse=True)
def _short_update_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker runs, so no `decide` update is ever answered and every sent decision goes as the
    signal once the update's wait is over: a shorter wait proves the same, in a tenth of the time."""
    monkeypatch.setattr(decision_delivery, "UPDATE_WAIT", timedelta(seconds=0.2))


@pytest_asyncio.fixture
async def waiting_workflow(client: Client, settings: Settings) -> AsyncIterator[str]:
    conversation_id = await start_conversation(client, settings, "batch", f"batch-{uuid.uuid4().hex[:8]}")
    yield conversation_id
    await client.get_workflow_handle(conversation_id).terminate("test over")


# An item: which call (0-3 are waiting calls, 4 is unknown), and whether its hash is right, stale or absent.
_items = st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["right", "stale", "none"])), min_size=1, max_size=8)


@hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=_items, decided_first=st.sets(st.integers(0, 3), max_size=2), decision=st.sampled_from(["allow", "deny"]))
async def test_every_call_of_a_batch_gets_exactly_one_outcome(
    client: Client,
    settings: Settings,
    waiting_workflow: str,
    items: list[tuple[int, str]],
    decided_first: set[int],
    decision: str,
) -> None:
    n = next(_example)
    arguments = [{"path": f"{n}-{i}.txt", "content": str(i)} for i in range(4)]
    ids = [await seed_pending(settings, waiting_workflow, f"x{n}_{i}", "write_file", arguments[i]) for i in range(4)]
    ids.append(f"perm_{waiting_workflow}_x{n}_unknown")
    store = ProjectionStore(settings.approvals_db)
    try:
        for i in decided_first:
            await store.claim_decision(DecisionInput(request_id=ids[i], decision="deny", decided_by="other"))
    finally:
        await store.close()

    body_items = []
    for index, hash_kind in items:
        item: dict[str, str] = {"request_id": ids[index]}
        if hash_kind != "none":
            right = arguments_hash(arguments[index]) if index < 4 else "1111111111111111"
            item["args_hash"] = right if hash_kind == "right" else "ffffffffffffffff"
        body_items.append(item)
    async with api_client(settings, client) as http:
        answer = await http.post("/api/approvals/decisions", json={"decision": decision, "items": body_items})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]

    # The outcome each item must get, judged in order: unknown, stale, already decided, or sent.
    decided = {ids[i]: ("deny", "other") for i in decided_first}
    expected: list[tuple[str, str | None]] = []
    for index, hash_kind in items:
        request_id = ids[index]
        if index == 4:
            expected.append((request_id, "UnknownApproval"))
        elif hash_kind == "stale":
            expected.append((request_id, "StaleApproval"))
        elif request_id in decided:
            expected.append((request_id, "ApprovalAlreadyResolved"))
        else:
            decided[request_id] = (decision, "web")
            expected.append((request_id, None))
    assert [(r["request_id"], r["error"] and r["error"]["type"]) for r in results] == expected
    assert all((r["status"] == "sent") == (r["error"] is None) for r in results)

    claims = rows(settings.approvals_db, "SELECT * FROM ui_decision_claims WHERE request_id LIKE ?", f"%_x{n}_%")
    assert {c["request_id"]: (c["decision"], c["decided_by"]) for c in claims} == decided
    assert len(claims) == len(decided), "one decision per request, never two"
