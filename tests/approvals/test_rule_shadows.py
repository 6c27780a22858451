"""Rules that take effect: the documented policy lets a copied suggestion allow the next matching
call, and an allow rule an ask rule shadows entirely is reported when the policy loads."""

from __future__ import annotations

import logging
import re
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from config.policy_file import PolicyFile
from core.fatigue import suggest_rules
from core.policy import DEFAULT_RULES, evaluate
from core.policy_rules import PolicyRules
from core.rule_shadows import covers, shadowed_allows, shadowing_ask

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def documented_policy() -> PolicyRules:
    """The first TOML block under "Permission rules" in docs/configuration.md, as a person copies it."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Permission rules", 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return PolicyRules.model_validate(tomllib.loads(block.group(1)))


def approved(command: str, count: int) -> list[dict[str, Any]]:
    """Audit rows (storage/audit.py's shape) of a command approved `count` times, in 2 s each."""
    return [
        {
            "request_id": f"perm_c_{n}",
            "tool_name": "run_shell",
            "arguments": {"command": command if n % 2 else f"{command} -s"},
            "decision": "allow",
            "decided_by": "alice",
            "created_at": (START + timedelta(minutes=n)).isoformat(),
            "resolved_at": (START + timedelta(minutes=n, seconds=2)).isoformat(),
        }
        for n in range(count)
    ]


def test_a_copied_suggestion_stops_the_next_matching_call_from_asking() -> None:
    policy = documented_policy()
    assert policy == DEFAULT_RULES.model_copy(update={"network": []}), "the docs show the built-in rules"
    [suggestion] = suggest_rules(approved("git status", 20), policy=policy)
    assert (suggestion.rule, suggestion.blocked_by) == ("run_shell(git status*)", None)
    assert evaluate(policy, "run_shell", "git status --short") == "ask"
    copied = policy.model_copy(update={"allow": [*policy.allow, suggestion.rule]})
    assert evaluate(copied, "run_shell", "git status --short") == "allow"
    assert evaluate(copied, "run_shell", "git status; sudo reboot") == "deny"
    assert evaluate(copied, "run_shell", "git push") == "ask"


def test_under_a_whole_tool_ask_the_same_suggestion_changed_nothing() -> None:
    """The defect: the old documented policy kept run_shell under ask, which outranks the copy."""
    old = PolicyRules(allow=["read_file"], ask=["write_file", "run_shell"])
    [suggestion] = suggest_rules(approved("git status", 20), policy=old)
    assert suggestion.blocked_by == "run_shell"
    copied = old.model_copy(update={"allow": [*old.allow, suggestion.rule]})
    assert evaluate(copied, "run_shell", "git status --short") == "ask"


def test_a_narrower_ask_keeps_its_calls_asked_under_a_broader_allow() -> None:
    rules = PolicyRules(allow=["run_shell(git *)"], ask=["run_shell(git push*)"])
    assert evaluate(rules, "run_shell", "git log --oneline") == "allow"
    assert evaluate(rules, "run_shell", "git push --force origin main") == "ask"
    assert shadowed_allows(rules) == []


@pytest.mark.parametrize(
    ("ask", "allow", "shadowed"),
    [
        ("run_shell", "run_shell(git status*)", True),
        ("run_shell", "run_shell", True),
        ("write_file(docs/**)", "write_file(docs/a/**)", True),
        ("write_file(docs/**)", "write_file(docs/guide.md)", True),
        ("run_shell(git *)", "run_shell(git status*)", True),
        ("mcp__git__*", "mcp__git__git_status", True),
        ("mcp__git__*", "mcp__git__git_diff*", True),
        ("*", "kv_set(a)", True),
        ("run_shell(git push*)", "run_shell(git *)", False),
        ("write_file(docs/a/**)", "write_file(docs/**)", False),
        ("write_file(docs/**)", "write_file(src/**)", False),
        ("write_file(docs/**)", "write_file", False),
        ("run_shell(git status*)", "write_file(git status*)", False),
        ("run_shell(g?t *)", "run_shell(git status*)", False),  # subtler globs are not claimed
    ],
)
def test_shadowing_is_decided_by_containment(ask: str, allow: str, shadowed: bool) -> None:
    assert (shadowing_ask([ask], allow) == ask) is shadowed


def test_containment_of_globs() -> None:
    assert covers("docs/**", "docs/a/b.md") and not covers("docs/**", "src/a.md")
    assert covers("git *", "git status*") and not covers("git status*", "git *")
    assert covers("*", "anything*") and not covers("a?c", "abc*")


def test_a_fully_shadowed_allow_is_reported_when_the_policy_loads(caplog: pytest.LogCaptureFixture) -> None:
    text = (
        'allow = ["read_file", "run_shell(git status*)", "write_file(docs/a/**)", "write_file(src/**)"]\n'
        'ask = ["run_shell", "write_file(docs/**)"]\n'
        '[delegation]\nallow = ["run_shell(ls*)"]\nask = ["run_shell(ls *)", "run_shell(l*)"]\n'
    )
    with caplog.at_level(logging.WARNING, logger="config.policy_file"):
        loaded = PolicyFile("shadowed.toml", text)
        assert loaded.rules.allow[1] == "run_shell(git status*)"
        assert loaded.delegation_rules is not None
    tail = " matches every call it allows (an ask outranks every allow; narrow or remove the ask rule)"
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "policy file shadowed.toml: allow rule 'run_shell(git status*)' never takes effect: ask rule 'run_shell'"
        + tail,
        "policy file shadowed.toml: allow rule 'write_file(docs/a/**)' never takes effect: ask rule"
        " 'write_file(docs/**)'" + tail,
        "policy file shadowed.toml [delegation]: allow rule 'run_shell(ls*)' never takes effect: ask rule"
        " 'run_shell(l*)'" + tail,
    ]


@pytest.mark.parametrize("path", ["examples/tools.toml"])
def test_the_shipped_policies_shadow_nothing(path: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="config.policy_file"):
        rules = PolicyFile(path, (ROOT / path).read_text()).rules
    assert shadowed_allows(rules) == [] and caplog.records == []
    assert shadowed_allows(DEFAULT_RULES) == [] and shadowed_allows(documented_policy()) == []
    assert evaluate(rules, "write_file", "notes.txt") == "ask" and evaluate(rules, "report_weather", "") == "ask"
