"""The policy file: read by every caller, parsed once per content, and a bad section reported in one
line that names the file and the section."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels import CHANNEL_KINDS
from config.settings import ConfigError, Settings
from core.policy import evaluate

POLICY = """\
allow = ["read_file"]
[delegation]
max_depth = 1
[sandbox]
memory_mb = 512
[mcp_servers.git]
command = "mcp-server-git"
[notifications]
link_base = "https://approvals.example.com"
[channels.ops-hook]
kind = "webhook"
url = "http://127.0.0.1:9/hook"
secret = "s3cret"
"""


def test_every_section_comes_from_one_parse_of_each_content(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    first, second = Settings(policy_file=str(path)), Settings(policy_file=str(path))
    assert first.policy() is second.policy(), "the same content is parsed once"
    assert first.load_policy() is second.load_policy()
    assert first.load_tools() is second.load_tools() and list(first.load_tools().mcp_servers) == ["git"]
    assert first.load_notify() is second.load_notify()
    assert first.link_base == "https://approvals.example.com"
    assert first.sandbox_policy().limits.memory_mb == 512
    assert first.load_delegation().max_depth == 1

    path.write_text(POLICY.replace('allow = ["read_file"]', 'allow = ["read_file", "list_dir"]'))
    edited = first.load_policy()
    assert edited.allow == ["read_file", "list_dir"], "an edited file is read again"
    assert Settings(policy_file=str(path)).policy() is first.policy(), "and parsed once again"


def test_without_a_file_the_sections_are_the_defaults() -> None:
    settings = Settings(policy_file=None)
    assert settings.load_tools().mcp_servers == {} and settings.load_notify().channels == {}
    defaults = settings.load_policy()
    assert defaults.ask == [] and evaluate(defaults, "run_shell", "ls") == "ask"  # no rule matches: asked
    assert settings.sandbox_policy().enabled or settings.tool_sandbox == "off"


BAD_SECTIONS = [
    ('allow = "read_file', "is not a valid policy"),
    ('mode = "sometimes"', "mode"),
    ("[delegation]\nmax_depth = -1", "[delegation]"),
    ("[sandbox]\nmemory_mb = -1", "sandbox: memory_mb"),
    ('[mcp_servers.git]\nargs = ["x"]', "mcp_servers.git"),
    ('[channels.pager]\nkind = "pager"\nurl = "http://x"', "channels.pager.kind"),
    ('[channels.hook]\nkind = "webhook"\nurl = "http://x"', "channels.hook"),
]


@pytest.mark.parametrize(("text", "section"), BAD_SECTIONS)
def test_a_bad_section_is_one_line_naming_the_file_and_the_section(tmp_path: Path, text: str, section: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text + "\n")
    settings = Settings(policy_file=str(path))
    with pytest.raises(ConfigError) as raised:
        settings.load_policy()
        settings.load_delegation()
        settings.sandbox_policy()
        settings.load_tools()
        settings.load_notify()
    message = str(raised.value)
    assert "\n" not in message, message
    assert message.startswith(f"POLICY_FILE {path}") and section in message.removeprefix(str(path)), message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"^POLICY_FILE {tmp_path}/absent.toml does not exist$"):
        Settings(policy_file=str(tmp_path / "absent.toml")).load_tools()


def test_an_unknown_channel_kind_is_refused_by_the_rules_and_by_the_channels_alike(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text('[channels.pager]\nkind = "pager"\nurl = "http://x"\n')
    known = ", ".join(sorted(CHANNEL_KINDS))
    said = rf"channels\.pager\.kind: unknown kind 'pager'; the known kinds are {known}$"
    for load in (Settings(policy_file=str(path)).load_notify, Settings(policy_file=str(path)).load_policy):
        with pytest.raises(ConfigError, match=said) as raised:
            load()
        assert "\n" not in str(raised.value)
