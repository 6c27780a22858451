"""The rules of arguments only a person supplies (`supplied_by_approver`), without a stack: the
model's schema omits them and a call that fills one is refused without echoing it; an approval must
bring every value, and an always-allow, a deny or another request's decision brings none; a value
sealed for one request and argument opens for no other, nor under another key."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from config.supplied_secret import KEY_FILE, BadSeal, seal, seal_all, supplied_secret_key, unseal, unseal_all
from core.approvals import ApprovalBook
from core.contract import ERROR_SUPPLY_REFUSED
from core.conversation_model import ApprovalRecord, DecisionInput
from core.edits import ran_with
from core.supplied_arguments import supplied_text, with_supplied
from core.tool_arguments import validate_arguments
from core.tool_model import ToolDef
from core.tool_registry import InvalidToolCall
from core.tool_specs import TOOL_SPECS

LOGIN = ToolDef(
    name="mcp__vault__login",
    description="log in",
    parameters={
        "type": "object",
        "properties": {"user": {"type": "string"}, "password": {"type": "string"}},
        "required": ["password", "user"],
        "additionalProperties": False,
    },
    permission_type="write",
    rule_argument="password",
    source="mcp",
    origin="vault",
    remote_name="login",
)
SUPPLIED = with_supplied([LOGIN], {LOGIN.name: ["password"]})[0][0]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_model_is_offered_the_tool_without_the_argument_and_rules_match_the_others() -> None:
    offered = SUPPLIED.openai_schema()["function"]["parameters"]
    assert offered["properties"] == {"user": {"type": "string"}} and offered["required"] == ["user"]
    assert SUPPLIED.parameters == LOGIN.parameters, "the tool's own schema is kept for its server"
    assert SUPPLIED.rule_argument is None and SUPPLIED.definition_hash() == LOGIN.definition_hash()
    assert validate_arguments(SUPPLIED, '{"user": "bob"}') == {"user": "bob"}


def test_a_call_that_fills_it_is_refused_in_one_line_without_the_value() -> None:
    with pytest.raises(InvalidToolCall) as refused:
        validate_arguments(SUPPLIED, json.dumps({"user": "bob", "password": "hunter2-guess"}))
    message = str(refused.value)
    assert "password" in message and "hunter2-guess" not in message and "\n" not in message


def test_a_misspelt_argument_or_an_unaskable_tool_leaves_the_tool_out_rather_than_offer_the_secret() -> None:
    delegate = LOGIN.model_copy(update={"name": "delegate", "source": "subagent"})
    offered, left_out = with_supplied([LOGIN, delegate], {LOGIN.name: ["pasword"], "delegate": ["task"]})
    assert offered == []
    assert left_out == {
        LOGIN.name: "supplied_by_approver names pasword, which mcp__vault__login does not take",
        "delegate": "supplied_by_approver: a subagent tool takes no supplied arguments",
    }


def record(required: int = 1) -> ApprovalRecord:
    return ApprovalRecord(
        request_id="perm_c1_call",
        conversation_id="c1",
        turn_id="t1",
        tool_call_id="call",
        tool_name=SUPPLIED.name,
        permission_type="write",
        arguments={"user": "bob"},
        created_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        tool_hash=SUPPLIED.definition_hash(),
        supplied_by_approver=["password"],
        required=required,
    )


def book_with(*records: ApprovalRecord) -> ApprovalBook:
    book = ApprovalBook("c1", [], {})
    for one in records:
        book.open(one)
    return book


def decision(kind: str = "allow", request_id: str = "perm_c1_call", **supplied: str) -> DecisionInput:
    return DecisionInput.model_validate(
        {"request_id": request_id, "decision": kind, "decided_by": "alice", "principal": "alice", "supplied": supplied}
    )


@pytest.mark.parametrize(
    ("kind", "supplied", "says"),
    [
        ("allow", {}, "needs password supplied by the approver"),
        ("always_allow", {"password": "sealed1:x"}, "on every call: approve this call alone"),
        ("deny", {"password": "sealed1:x"}, "values are supplied with an approval, not with a deny"),
        ("allow", {"password": "sealed1:x", "token": "sealed1:y"}, "takes only password, not token"),
    ],
)
def test_the_one_refusal_rule_refuses_each_wrong_approval(kind: str, supplied: dict[str, str], says: str) -> None:
    refusal = book_with(record()).refuse(decision(kind, **supplied))
    assert refusal is not None and refusal.error_type == ERROR_SUPPLY_REFUSED and says in refusal.message


def test_a_deny_needs_no_value_and_a_request_that_needs_none_takes_none() -> None:
    plain = record().model_copy(update={"request_id": "perm_c1_other", "supplied_by_approver": []})
    book = book_with(record(), plain)
    assert book.refuse(decision("deny")) is None
    refused = book.refuse(decision("allow", "perm_c1_other", password="sealed1:x"))
    assert refused is not None and "takes no supplied arguments" in refused.message


def test_an_approval_keeps_the_sealed_value_out_of_every_dump_and_says_who_supplied_it() -> None:
    asked = record()
    book = book_with(asked)
    assert book.refuse(decision(password="sealed1:abc")) is None
    book.apply(decision(password="sealed1:abc"), NOW)
    assert asked.sealed_supplied == {"password": "sealed1:abc"} and asked.supplied_by == {"password": "alice"}
    assert "sealed1:abc" not in asked.model_dump_json() and "sealed1:abc" not in repr(asked)
    arguments, note = ran_with(asked, asked.arguments)
    assert arguments == {"user": "bob"} and note is not None and "password: supplied by alice" in note
    assert supplied_text({"password": "alice", "otp": "alice"}) == "supplied: otp, password (by alice)"


def test_always_allowing_the_same_tool_elsewhere_frees_no_call_that_waits_for_a_value() -> None:
    waiting = record()
    plain = record().model_copy(update={"request_id": "perm_c1_first", "supplied_by_approver": []})
    book = book_with(plain, waiting)
    book.apply(decision("always_allow", "perm_c1_first"), NOW)
    assert waiting.resolution is None


def test_a_value_sealed_for_one_request_and_argument_opens_for_no_other(tmp_path: Path) -> None:
    key = supplied_secret_key(None, tmp_path)
    sealed = seal(key, "perm_c1_call", "password", "hunter2")
    assert sealed.startswith("sealed1:") and "hunter2" not in sealed
    assert unseal(key, "perm_c1_call", "password", sealed) == "hunter2"
    assert seal(key, "perm_c1_call", "password", "hunter2") != sealed, "a fresh nonce each time"
    other_key = supplied_secret_key("another deployment's secret", tmp_path)
    for attempt in (
        lambda: unseal(key, "perm_c2_call", "password", sealed),
        lambda: unseal(key, "perm_c1_call", "user", sealed),
        lambda: unseal(other_key, "perm_c1_call", "password", sealed),
        lambda: unseal(key, "perm_c1_call", "password", "hunter2"),
    ):
        with pytest.raises(BadSeal) as refused:
            attempt()
        assert "hunter2" not in str(refused.value) and "the value supplied for" in str(refused.value)
    values = {"password": "a", "otp": "b"}
    assert unseal_all(key, "r", seal_all(key, "r", values)) == values


def test_the_key_file_is_made_once_privately_and_every_racer_reads_the_same(tmp_path: Path) -> None:
    keys: list[bytes] = []
    racers = [threading.Thread(target=lambda: keys.append(supplied_secret_key("", tmp_path))) for _ in range(8)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    assert len(set(keys)) == 1 and len(keys[0]) == 32
    assert (tmp_path / KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE], "no private file is left behind"
    assert supplied_secret_key("set", tmp_path) != keys[0] and len(supplied_secret_key("set", tmp_path)) == 32


def test_no_built_in_tool_asks_for_a_supplied_argument() -> None:
    assert all(not spec.supplied_by_approver for spec in TOOL_SPECS.values())


def test_a_malformed_decision_is_logged_with_what_was_supplied_named_only() -> None:
    from workflows.handler_payloads import _unsupplied

    logged = _unsupplied({"request_id": "r", "decision": 7, "supplied": {"password": "hunter2"}})
    assert logged == {"request_id": "r", "decision": 7, "supplied": {"password": "(not shown)"}}
    assert _unsupplied(["not", "a", "dict"]) == ["not", "a", "dict"]
