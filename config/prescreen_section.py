"""The pre-screen's settings: the `[prescreen]` table of the policy file.

    [prescreen]
    base_url = "https://api.openai.com/v1"   # any OpenAI-compatible Chat Completions endpoint
    model = "gpt-4o-mini"
    api_key_env = "PRESCREEN_API_KEY"        # the variable holding the key (or api_key = "...")
    tools = ["run_shell", "write_file(docs/**)", "mcp__git__*"]
    criteria = "Allow read-only commands and edits under docs/. Bring deletes, pushes and uploads to a person."
    deny_limit = 3          # denials in one conversation before every later call goes to a person
    timeout_seconds = 20    # an answer later than this is no answer: a person decides

The key is resolved here, in the worker, and stays there: the workflow holds only `scope()`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from config.errors import ConfigError
from core.prescreen import PrescreenScope

KEYS = frozenset(
    ["enabled", "base_url", "model", "api_key", "api_key_env", "tools", "criteria", "deny_limit", "timeout_seconds"]
)
DEFAULT_DENY_LIMIT = 3
DEFAULT_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class PrescreenConfig:
    base_url: str
    model: str
    api_key: str = field(repr=False)  # never printed, logged or sent to the workflow
    tools: tuple[str, ...]
    criteria: str
    deny_limit: int = DEFAULT_DENY_LIMIT
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    def scope(self) -> PrescreenScope:
        """What the workflow may carry: the patterns, the deny limit and the model's name."""
        return PrescreenScope(tools=self.tools, deny_limit=self.deny_limit, model=self.model)


def _text(table: Mapping[str, object], key: str) -> str:
    value = table.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"[prescreen]: {key} must be a non-empty string, not {value!r}")
    return value.strip()


def _api_key(table: Mapping[str, object]) -> str:
    """From api_key_env (the better way: the file can be shared) or api_key; exactly one."""
    if ("api_key" in table) == ("api_key_env" in table):
        raise ConfigError("[prescreen]: give exactly one of api_key_env (the variable holding the key) or api_key")
    if "api_key" in table:
        return _text(table, "api_key")
    name = _text(table, "api_key_env")
    value = os.environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"[prescreen]: the environment variable {name} (api_key_env) is not set")
    return value


def _tools(table: Mapping[str, object]) -> tuple[str, ...]:
    """Rule patterns in the policy's own syntax; a pattern the rules would refuse is refused here."""
    from core.policy import InvalidRule, validate_rules
    from core.policy_rules import PolicyRules

    value = table.get("tools")
    if not isinstance(value, list) or not value or not all(isinstance(p, str) and p.strip() for p in value):
        raise ConfigError(f"[prescreen]: tools must be a non-empty list of rule patterns, not {value!r}")
    try:
        validate_rules(PolicyRules(allow=list(value)))
    except InvalidRule as err:
        raise ConfigError(f"[prescreen] tools: {err}") from None
    return tuple(pattern.strip() for pattern in value)


def _deny_limit(table: Mapping[str, object]) -> int:
    value = table.get("deny_limit", DEFAULT_DENY_LIMIT)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"[prescreen]: deny_limit must be a whole number of at least 1, not {value!r}")
    return value


def _timeout(table: Mapping[str, object]) -> float:
    value = table.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ConfigError(f"[prescreen]: timeout_seconds must be a positive number of seconds, not {value!r}")
    return float(value)


def parse_prescreen(table: Mapping[str, object] | None) -> PrescreenConfig | None:
    """The table typed; None when it is absent (or empty) or says `enabled = false`.
    ConfigError, in one line, names the first bad key."""
    if not table:
        return None
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(f"[prescreen]: unknown keys {unknown} (known: {', '.join(sorted(KEYS))})")
    enabled = table.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"[prescreen]: enabled must be true or false, not {enabled!r}")
    if not enabled:
        return None
    base_url = _text(table, "base_url")
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"[prescreen]: base_url must be an http:// or https:// URL, not {base_url!r}")
    return PrescreenConfig(
        base_url=base_url,
        model=_text(table, "model"),
        api_key=_api_key(table),
        tools=_tools(table),
        criteria=_text(table, "criteria"),
        deny_limit=_deny_limit(table),
        timeout_seconds=_timeout(table),
    )
