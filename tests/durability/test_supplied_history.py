"""The committed history of a supplied-secret approval (`decisions/supplied_password_approved_from_the_cli`,
see tests/histories/README.md) holds the password sealed and nowhere in the clear: recorded with
the canary fixed (SUPPLIED_TEST_CANARY), it is searched here in every payload, as the server keeps
them; test_committed_histories.py replays it."""

from __future__ import annotations

import json

from temporalio.client import WorkflowHistory

from tests.support.histories import history_path, workflow_id
from tests.support.supplied_support import where_found

RECORDED_WITH = "canary-recorded-5d0b8e2a91c34f7e"  # the recording run's SUPPLIED_TEST_CANARY


def test_the_committed_history_holds_the_password_sealed_and_never_in_the_clear() -> None:
    path = history_path("decisions/supplied_password_approved_from_the_cli")
    history = WorkflowHistory.from_json(workflow_id(path), path.read_text())
    events = b"".join(event.SerializeToString() for event in history.events)
    decisions = [
        json.loads(payload.data)
        for event in history.events
        if event.HasField("workflow_execution_update_accepted_event_attributes")
        for payload in event.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads
    ]
    assert [sorted(d["supplied"]) for d in decisions] == [["password"]]
    assert decisions[0]["supplied"]["password"].startswith("sealed1:")
    assert where_found(RECORDED_WITH, {"history": events, "file": path.read_bytes()}) == []
    assert b"the-models-own-guess" in events, "the search reads the payloads (the model's own guess is there)"
