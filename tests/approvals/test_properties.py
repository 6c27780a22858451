"""Property-based tests of the pure pieces that guard every decision: the policy, the approval book,
and the truncation of huge tool results."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from activities.builtin_tools import truncate
from core.approvals import ApprovalBook
from core.contract import ERROR_ALREADY_RESOLVED, ERROR_UNKNOWN_APPROVAL
from core.conversation_model import ApprovalRecord, DecisionInput, Resolution, request_id_for
from core.policy import DEFAULT_RULES, evaluate, shell_segments
from core.policy_rules import PolicyRules

TOOLS = ["list_dir", "read_file", "write_file", "run_shell", "kv_set", "kv_get"]
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", min_size=1, max_size=12)
ARGUMENT = st.text(max_size=40)
# A command word that never is, nor starts with, a denied one and contains no shell syntax.
BENIGN = st.sampled_from(["ls", "echo hi", "true", "cat notes.txt", "pwd", "grep -r x ."])
DENIED = st.one_of(st.builds(lambda w: f"sudo {w}", WORD), st.builds(lambda w: f"rm -rf /{w}", WORD))
JOINERS = [";", " && ", " || ", " | ", " & ", "\n"]
WRAPPERS = [
    "{}",
    "$({})",
    "`{}`",
    "({})",
    "{{ {}; }}",
    "! {}",
    "if {}; then true; fi",
    "while {}; do true; done",
    "for i in 1 2; do {}; done",
    "echo $({}) > out.txt",
    "time {}",
    "X=1 {}",
]
# What may lead a command without being it: wrappers with their options, and assignments.
PREFIXES = [
    "time",
    "time -p",
    "nice",
    "nice -n 5",
    "nice -10",
    "timeout 5",
    "timeout -s KILL -k 1 5s",
    "timeout --preserve-status 2m",
    "env",
    "env A=1",
    "env -i -u HOME",
    "command",
    "command -p",
    "exec",
    "exec -a name",
    "nohup",
    "A=1",
    'A="x y"',
    "A='x y'",
    'A="a;b"',
]
BLANKS = st.text(alphabet=" \t", min_size=1, max_size=3)


@st.composite
def rules(draw: st.DrawFn) -> PolicyRules:
    rule = st.one_of(st.sampled_from(TOOLS), st.builds(lambda t, w: f"{t}({w}*)", st.sampled_from(TOOLS), WORD))
    return PolicyRules(
        mode=draw(st.sampled_from(["default", "auto_approve"])),
        allow=draw(st.lists(rule, max_size=4)),
        ask=draw(st.lists(rule, max_size=4)),
        deny=draw(st.lists(rule, max_size=4)),
    )


@given(rules(), st.sampled_from(TOOLS), ARGUMENT, st.frozensets(st.sampled_from(TOOLS)), st.booleans())
def test_a_tool_denied_by_name_is_denied_whatever_else_holds(
    policy: PolicyRules, tool: str, argument: str, always: frozenset[str], auto: bool
) -> None:
    policy = policy.model_copy(update={"deny": [*policy.deny, tool], "allow": [*policy.allow, tool]})
    assert evaluate(policy, tool, argument, always_allow=always | {tool}, auto_approve=auto) == "deny"


@given(rules(), st.sampled_from(TOOLS), WORD, st.frozensets(st.sampled_from(TOOLS)), st.booleans())
def test_a_matching_deny_pattern_beats_allow_always_allow_and_auto_approve(
    policy: PolicyRules, tool: str, argument: str, always: frozenset[str], auto: bool
) -> None:
    policy = policy.model_copy(update={"deny": [f"{tool}({argument})"], "allow": [tool]})
    assert evaluate(policy, tool, argument, always_allow=always | {tool}, auto_approve=auto) == "deny"


@st.composite
def hiding_commands(draw: st.DrawFn) -> str:
    """A denied command buried in benign ones, through separators, substitutions and groups."""
    command = draw(DENIED)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        command = draw(st.sampled_from(WRAPPERS)).format(command)
        if draw(st.booleans()):
            command = draw(BENIGN) + draw(st.sampled_from(JOINERS)) + command
        if draw(st.booleans()):
            command = command + draw(st.sampled_from(JOINERS)) + draw(BENIGN)
    return command


@given(hiding_commands(), st.booleans())
def test_a_compound_shell_command_cannot_hide_a_denied_segment(command: str, auto: bool) -> None:
    verdict = evaluate(DEFAULT_RULES, "run_shell", command, always_allow=frozenset({"run_shell"}), auto_approve=auto)
    assert verdict == "deny", (command, shell_segments(command))


@st.composite
def wrapped_commands(draw: st.DrawFn) -> str:
    """A denied command behind a chain of wrappers and assignments, words split by any blanks."""
    words = " ".join([*draw(st.lists(st.sampled_from(PREFIXES), min_size=1, max_size=5)), draw(DENIED)])
    return "".join(part if part != " " else draw(BLANKS) for part in re.split(r"( )", words))


@settings(max_examples=300)
@given(wrapped_commands(), st.sampled_from(WRAPPERS), st.booleans())
def test_wrappers_assignments_and_blanks_cannot_hide_a_denied_command(command: str, outer: str, auto: bool) -> None:
    for candidate in (command, outer.format(command)):
        verdict = evaluate(
            DEFAULT_RULES, "run_shell", candidate, always_allow=frozenset({"run_shell"}), auto_approve=auto
        )
        assert verdict == "deny", (candidate, shell_segments(candidate))


@given(st.lists(BENIGN, min_size=1, max_size=4), st.sampled_from(JOINERS), WORD)
def test_an_allow_rule_must_cover_every_segment(benign: list[str], joiner: str, other: str) -> None:
    policy = PolicyRules(allow=[f"run_shell({b})" for b in benign], ask=[], deny=[])
    assert evaluate(policy, "run_shell", joiner.join(benign)) == "allow"
    assert evaluate(policy, "run_shell", joiner.join([*benign, f"zz{other}"])) == "ask"


# ---- the approval book ------------------------------------------------------------------------

CID = "conv-prop"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(call: str, tool: str) -> ApprovalRecord:
    return ApprovalRecord(
        request_id=request_id_for(CID, call),
        conversation_id=CID,
        turn_id="turn_1",
        tool_call_id=call,
        tool_name=tool,
        permission_type="write",
        arguments={},
        created_at=NOW,
        expires_at=NOW + timedelta(hours=1),
    )


def snapshot(book: ApprovalBook) -> tuple[object, ...]:
    return (
        sorted(r.request_id for r in book.pending()),
        book.resolutions(),
        sorted(book.always_allow),
    )


OPEN_CALLS = [f"call_{n}" for n in range(5)]
TARGETS = st.one_of(
    st.sampled_from([request_id_for(CID, c) for c in OPEN_CALLS]),  # opened in this run
    st.sampled_from([request_id_for(CID, "carried_1"), request_id_for(CID, "carried_2")]),  # decided before
    st.builds(lambda w: request_id_for(CID, f"never_{w}"), WORD),  # unknown in this conversation
    st.builds(lambda w: request_id_for("conv-other", w), WORD),  # another conversation's
    ARGUMENT,  # anything at all
)


@settings(max_examples=300)
@given(
    st.lists(st.sampled_from(["write_file", "run_shell"]), min_size=5, max_size=5),
    st.lists(st.tuples(TARGETS, st.sampled_from(["allow", "deny", "always_allow"])), max_size=25),
)
def test_the_first_decision_wins_and_every_other_is_refused_without_change(
    tools: list[str], decisions: list[tuple[str, str]]
) -> None:
    carried: dict[str, Resolution] = {
        request_id_for(CID, "carried_1"): "deny",
        request_id_for(CID, "carried_2"): "allow",
    }
    book = ApprovalBook(CID, [], carried)
    records = {request_id_for(CID, c): record(c, t) for c, t in zip(OPEN_CALLS, tools, strict=True)}
    for rec in records.values():
        book.open(rec)
    expected: dict[str, Resolution] = dict(carried)
    for request_id, decision in decisions:
        before = snapshot(book)
        refusal = book.refuse(DecisionInput(request_id=request_id, decision=decision))  # type: ignore[arg-type]
        if request_id in expected:
            assert refusal is not None and refusal[0] == ERROR_ALREADY_RESOLVED
        elif request_id not in records:
            assert refusal is not None and refusal[0] == ERROR_UNKNOWN_APPROVAL
        else:
            assert refusal is None
        if refusal is not None:
            assert snapshot(book) == before
            continue
        assert book.apply(DecisionInput(request_id=request_id, decision=decision), NOW) == decision  # type: ignore[arg-type]
        expected[request_id] = decision  # type: ignore[assignment]
        if decision == "always_allow":
            for other in records.values():
                if other.tool_name == records[request_id].tool_name and other.request_id not in expected:
                    expected[other.request_id] = "allow"
        assert book.resolutions() == expected
    assert {r.request_id for r in book.pending()} == set(records) - set(expected)


@given(st.text(max_size=300), st.integers(min_value=1, max_value=200))
def test_truncate_keeps_a_prefix_and_says_how_much_it_cut(text: str, limit: int) -> None:
    out = truncate(text, limit)
    if len(text) <= limit:
        assert out == text
        return
    assert out.startswith(text[:limit])
    marker = out[limit:]
    assert re.fullmatch(rf"\n\[\.\.\. truncated: {len(text) - limit} more characters not shown \.\.\.\]", marker)
