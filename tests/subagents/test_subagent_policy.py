"""Property tests of a subagent's rules and ids: narrowing never widens, ids stay in the alphabet."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.ids import check_conversation_id
from core.policy import STRICTNESS, evaluate, network_allowed
from core.policy_rules import PolicyRules, RuleVerdict
from core.subagent_policy import narrow
from workflows.delegation import child_conversation_id

TOOLS = ["list_dir", "read_file", "write_file", "run_shell", "delegate"]
ARGUMENT = st.text(alphabet="ab./", max_size=4)
RULE = st.one_of(
    st.sampled_from([*TOOLS, "*"]),
    st.builds(lambda tool, glob: f"{tool}({glob})", st.sampled_from(TOOLS), st.sampled_from(["a*", "*b", "*", "a"])),
)
RULES = st.lists(RULE, max_size=4)
POLICY = st.builds(
    PolicyRules, mode=st.sampled_from(["default", "auto_approve"]), allow=RULES, ask=RULES, deny=RULES, network=RULES
)
FLAGS = st.tuples(st.sets(st.sampled_from(TOOLS)).map(frozenset), st.booleans())


def strictness(verdict: RuleVerdict) -> int:
    return STRICTNESS.index(verdict)


@given(POLICY, st.one_of(st.none(), POLICY), st.sampled_from(TOOLS), ARGUMENT, FLAGS)
def test_a_child_is_never_more_permissive_than_its_parent_or_its_own_rules(
    parent: PolicyRules,
    own: PolicyRules | None,
    tool: str,
    argument: str,
    flags: tuple[frozenset[str], bool],
) -> None:
    always, auto = flags
    child = narrow(parent, own)
    verdict = evaluate(child, tool, argument, always_allow=always, auto_approve=auto)
    assert strictness(verdict) >= strictness(evaluate(parent, tool, argument, always_allow=always, auto_approve=auto))
    if own is not None:
        assert strictness(verdict) >= strictness(evaluate(own, tool, argument, always_allow=always, auto_approve=auto))
    if evaluate(parent, tool, argument, always_allow=always, auto_approve=True) == "deny":
        assert verdict == "deny", "every parent deny applies, whatever lifts asks"
    if network_allowed(child, tool, argument):
        assert network_allowed(parent, tool, argument)


@given(POLICY, st.one_of(st.none(), POLICY), st.sampled_from(TOOLS), ARGUMENT, FLAGS)
def test_always_allow_does_not_leak_from_the_parent(
    parent: PolicyRules, own: PolicyRules | None, tool: str, argument: str, flags: tuple[frozenset[str], bool]
) -> None:
    """A fresh child (no always-allow, no auto-approve of its own) allows only what the parent's
    rules allow by themselves: a person's always-allow in the parent does not carry over."""
    always, auto = flags
    fresh = evaluate(narrow(parent, own), tool, argument)
    if fresh == "allow":
        assert evaluate(parent, tool, argument) == "allow", "an allow the parent lacks cannot appear"
    assert strictness(fresh) >= strictness(evaluate(parent, tool, argument, always_allow=always, auto_approve=auto))


@given(POLICY, POLICY, POLICY, st.sampled_from(TOOLS), ARGUMENT)
def test_a_grandchild_is_never_more_permissive_than_its_parent(
    top: PolicyRules, first: PolicyRules, second: PolicyRules, tool: str, argument: str
) -> None:
    child = narrow(top, first)
    grandchild = narrow(child, second)
    assert strictness(evaluate(grandchild, tool, argument)) >= strictness(evaluate(child, tool, argument))
    assert grandchild.mode == "default" or top.mode == first.mode == second.mode == "auto_approve"


def test_no_own_rules_means_exactly_the_parent_rules() -> None:
    parent = PolicyRules(allow=["read_file"], deny=["run_shell"])
    assert narrow(parent, None) == parent


PARENT_ID = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9.-]{0,127}", fullmatch=True)


@given(PARENT_ID, st.text(max_size=80), st.text(max_size=80))
def test_child_ids_stay_in_the_alphabet_and_apart(parent: str, call: str, other: str) -> None:
    child = child_conversation_id(parent, call)
    assert check_conversation_id(child) == child
    assert child == child_conversation_id(parent, call), "derived the same on every replay"
    if other != call:
        assert child != child_conversation_id(parent, other)
