"""The policy file (POLICY_FILE), read in one place and parsed once per content, into typed sections.

One TOML file holds the rules, the subagents' [delegation], the [sandbox], the tool sources and
[tools] limits, the channels, [slack] and [notifications]. Every caller (the worker, the UI, each
CLI command, each conversation start) asks here: the file is read again, so an edit takes effect
at the next conversation, but it is parsed, and each section validated, once for each content.
A bad section raises ConfigError in one line that names the file and the section; a section is
checked when it is first asked for, so a command that needs only the rules is not stopped by a
bad channel.
"""

from __future__ import annotations

import logging
import tomllib
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from config.errors import ConfigError

if TYPE_CHECKING:
    from config.notify_section import NotifyConfig
    from config.sandbox_section import SandboxSection
    from config.tools_section import ToolsConfig
    from core.policy_rules import PolicyRules

RULE_KEYS = ("mode", "allow", "ask", "deny", "network")
log = logging.getLogger(__name__)


def one_line(err: Exception) -> str:
    """A validation error as one line: `where: what` for each problem pydantic found."""
    from pydantic import ValidationError

    if isinstance(err, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in err.errors())
    return " ".join(str(err).split())


class PolicyFile:
    """One content of the file. `name` is POLICY_FILE as given; None means no file (the defaults)."""

    def __init__(self, name: str | None, text: str = "") -> None:
        self.name = name
        self._toml_error: str | None = None
        self.data: dict[str, object] = {}
        try:
            self.data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            self._toml_error = one_line(err)

    def table(self, section: str) -> dict[str, object]:
        """A table of the file ({} when absent), for the sections read with environment overrides."""
        if self._toml_error is not None:
            raise ConfigError(f"POLICY_FILE {self.name} is not valid TOML: {self._toml_error}")
        table = self.data.get(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"POLICY_FILE {self.name}: [{section}] must be a table")
        return table

    @cached_property
    def rules(self) -> PolicyRules:
        """The permission and approver rules; the built-in default without a file."""
        # Imported here: pydantic models cost every short CLI command a quarter second at start.
        from core.policy import DEFAULT_RULES, InvalidRule, validate_rules
        from core.policy_rules import PolicyRules

        if self.name is None:
            return DEFAULT_RULES
        if self._toml_error is not None:
            raise ConfigError(f"POLICY_FILE {self.name} is not a valid policy: {self._toml_error}")
        try:
            rules = validate_rules(PolicyRules.model_validate(self.data))
            if rules.channels:  # a workflow keeps a channel's kind as a name: the registry checks it
                from config.notify_section import check_kinds

                check_kinds(self.data.get("channels"))
        except (InvalidRule, ValueError) as err:
            raise ConfigError(f"POLICY_FILE {self.name} is not a valid policy: {one_line(err)}") from None
        self._warn_shadowed(rules, "")
        cedar = self._cedar_policies()
        return rules if cedar is None else rules.model_copy(update={"cedar_policies": cedar})

    def _cedar_policies(self) -> str | None:
        """`[cedar] policies = "rules.cedar"` (beside this file, or absolute): the text, checked."""
        from core.cedar_rules import InvalidCedar, checked_policies

        name = self.table("cedar").get("policies")
        if name is None:
            return None
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"POLICY_FILE {self.name}: [cedar] policies must be a file name")
        path = Path(name) if Path(name).is_absolute() or self.name is None else Path(self.name).parent / name
        try:
            return checked_policies(path.read_text())
        except OSError as err:
            raise ConfigError(f"POLICY_FILE {self.name}: [cedar] policies {path}: {err.strerror or err}") from None
        except InvalidCedar as err:
            raise ConfigError(f"POLICY_FILE {self.name}: [cedar] policies {path} do not parse: {err}") from None

    def _warn_shadowed(self, rules: PolicyRules, section: str) -> None:
        """One warning per allow rule an ask rule makes dead text (core/rule_shadows.py), once per content."""
        from core.rule_shadows import shadowed_allows

        for shadow in shadowed_allows(rules):
            log.warning("policy file %s%s: %s", self.name, section, shadow.text())

    @cached_property
    def delegation_rules(self) -> PolicyRules | None:
        """The rules a subagent adds to its parent's ([delegation]'s mode, allow, ask, deny, network)."""
        from core.policy import InvalidRule, validate_rules
        from core.policy_rules import PolicyRules

        table = self.table("delegation")
        own = {key: table[key] for key in RULE_KEYS if key in table}
        try:
            rules = validate_rules(PolicyRules.model_validate(own)) if own else None
        except (InvalidRule, ValueError) as err:
            raise ConfigError(f"POLICY_FILE {self.name}: invalid [delegation]: {one_line(err)}") from None
        if rules is not None:
            self._warn_shadowed(rules, " [delegation]")
        return rules

    @cached_property
    def sandbox(self) -> SandboxSection:
        from config.sandbox_section import sandbox_section

        table = self.table("sandbox")
        try:  # limits per tool process, and the uid and gid a root worker's tools run as
            return sandbox_section(table)
        except ValueError as err:
            raise ConfigError(f"POLICY_FILE {self.name}: {err}") from None

    @cached_property
    def tools(self) -> ToolsConfig:
        """The Python tool modules, MCP servers and [tools.NAME] tables; none without a file."""
        from pydantic import ValidationError

        from config.tools_section import ToolsConfig
        from core.tool_specs import TOOL_SPECS

        if self._toml_error is not None:
            raise ConfigError(f"POLICY_FILE {self.name} has invalid tool settings: {self._toml_error}")
        try:
            config = ToolsConfig.model_validate(
                {k: self.data[k] for k in ("python_tools", "mcp_servers") if k in self.data}
                | {"tools": {name: t for name, t in self.table("tools").items() if isinstance(t, dict)}}
            )
        except ValidationError as err:
            raise ConfigError(f"POLICY_FILE {self.name} has invalid tool settings: {one_line(err)}") from None
        unaskable = sorted(name for name, t in config.tools.items() if t.supplied_by_approver and name in TOOL_SPECS)
        if unaskable:  # their previews, rules and sandbox read every argument: nothing may be held back
            raise ConfigError(
                f"POLICY_FILE {self.name}: [tools.{unaskable[0]}] supplied_by_approver: a built-in tool takes none"
            )
        return config

    @cached_property
    def notify(self) -> NotifyConfig:
        """The channels, [notifications] and each door's table ([slack]); every channel an approver
        rule names must exist."""
        from pydantic import ValidationError

        from config.notify_section import notify_config

        if self._toml_error is not None:
            raise ConfigError(f"POLICY_FILE {self.name} is not valid TOML: {self._toml_error}")
        try:
            config = notify_config(self.data)
        except ValidationError as err:
            raise ConfigError(f"POLICY_FILE {self.name} has invalid notification settings: {one_line(err)}") from None
        named = {n for rule in self.rules.approvers for n in [*rule.notify, *rule.escalate_to]}
        unknown = sorted(n for n in named if not n.startswith("group:") and n not in config.channels)
        if unknown:
            raise ConfigError(f"POLICY_FILE {self.name}: approver rules name unknown channels {unknown}")
        return config


NO_FILE = PolicyFile(None)


def read_policy_file(name: str | None) -> PolicyFile:
    """The file's current content, parsed (None: no file, the defaults)."""
    if name is None:
        return NO_FILE
    try:
        text = Path(name).read_text()
    except FileNotFoundError:
        raise ConfigError(f"POLICY_FILE {name} does not exist") from None
    return _parsed(name, text)


@lru_cache(maxsize=16)
def _parsed(name: str, text: str) -> PolicyFile:
    return PolicyFile(name, text)
