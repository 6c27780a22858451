"""Configuration from the environment: every variable is optional (see the README's table)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from activities.sandbox import SandboxPolicy
    from activities.tool_config import ToolsConfig
    from workflows.models import PolicyRules

SANDBOX_CHOICES = ("auto", "bwrap", "unshare", "off")
DEMO_MODEL_URL = "http://127.0.0.1:8100/v1"
DEMO_MODEL_NAME = "scripted-demo"
OPENAI_URL = "https://api.openai.com/v1"
OPENAI_DEFAULT_MODEL = "gpt-4o-mini"


def _model_url() -> str:
    """An API key alone means OpenAI itself; nothing at all means the local demo model."""
    if os.environ.get("OPENAI_BASE_URL"):
        return os.environ["OPENAI_BASE_URL"]
    return OPENAI_URL if os.environ.get("OPENAI_API_KEY") else DEMO_MODEL_URL


def _model_name() -> str:
    if os.environ.get("LLM_MODEL"):
        return os.environ["LLM_MODEL"]
    return DEMO_MODEL_NAME if _model_url() == DEMO_MODEL_URL else OPENAI_DEFAULT_MODEL


# Context windows (tokens) of models whose size is known, by name prefix; the longest prefix wins.
MODEL_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 128_000,
    "llama3.2": 128_000,
    "llama3.3": 128_000,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "scripted-demo": 32_000,
}
# The budget leaves room for the reply and for counting errors; the cap keeps every model call's
# input (and so each history event) a few hundred kilobytes at most.
CONTEXT_SAFETY_SHARE = 0.75
CONTEXT_BUDGET_CAP = 200_000
DEFAULT_CONTEXT_BUDGET = 24_000


def default_context_budget(model: str) -> int:
    """A share of the model's known window, capped; a conservative default for unknown models."""
    name = model.rsplit("/", 1)[-1].lower()
    known = [prefix for prefix in MODEL_CONTEXT_WINDOWS if name.startswith(prefix)]
    if not known:
        return DEFAULT_CONTEXT_BUDGET
    window = MODEL_CONTEXT_WINDOWS[max(known, key=len)]
    return min(CONTEXT_BUDGET_CAP, int(window * CONTEXT_SAFETY_SHARE))


def _context_budget() -> int:
    if os.environ.get("CONTEXT_BUDGET_TOKENS"):
        return int(_float_env("CONTEXT_BUDGET_TOKENS", DEFAULT_CONTEXT_BUDGET))
    return default_context_budget(_model_name())


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable."""


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


@dataclass(frozen=True)
class Settings:
    temporal_address: str = field(default_factory=lambda: os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    namespace: str = field(default_factory=lambda: os.environ.get("TEMPORAL_NAMESPACE", "default"))
    task_queue: str = field(default_factory=lambda: os.environ.get("TASK_QUEUE", "durable-approvals"))
    approvals_db: Path = field(default_factory=lambda: Path(os.environ.get("APPROVALS_DB", "data/approvals.db")))
    workspace_dir: Path = field(default_factory=lambda: Path(os.environ.get("WORKSPACE_DIR", "data/workspace")))
    openai_base_url: str = field(default_factory=_model_url)
    openai_api_key: str = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY") or "demo-key")
    llm_model: str = field(default_factory=_model_name)
    approval_timeout: float = field(default_factory=lambda: _float_env("APPROVAL_TIMEOUT", 604800.0))
    policy_file: str | None = field(default_factory=lambda: os.environ.get("POLICY_FILE") or None)
    ui_host: str = field(default_factory=lambda: os.environ.get("UI_HOST", "127.0.0.1"))
    ui_port: int = field(default_factory=lambda: int(os.environ.get("UI_PORT", "8000")))
    ui_token: str | None = field(default_factory=lambda: os.environ.get("UI_TOKEN") or None)
    workflow_cache_size: int = field(default_factory=lambda: int(_float_env("WORKFLOW_CACHE_SIZE", 1000)))
    context_budget_tokens: int = field(default_factory=_context_budget)
    failure_watch_interval: float = field(default_factory=lambda: _float_env("FAILURE_WATCH_INTERVAL", 5.0))
    temporal_ui_url: str = field(default_factory=lambda: os.environ.get("TEMPORAL_UI_URL", "http://localhost:8233"))
    tool_sandbox: str | None = field(default_factory=lambda: os.environ.get("TOOL_SANDBOX") or None)

    def load_policy(self) -> PolicyRules:
        """Read POLICY_FILE once; its rules travel in the workflow input so replays agree."""
        # Imported here: pydantic models cost every short CLI command a quarter second at start.
        from workflows.models import PolicyRules
        from workflows.policy import DEFAULT_RULES, InvalidRule, validate_rules

        if self.policy_file is None:
            return DEFAULT_RULES
        path = Path(self.policy_file)
        try:
            data = tomllib.loads(path.read_text())
            return validate_rules(PolicyRules.model_validate(data))
        except FileNotFoundError:
            raise ConfigError(f"POLICY_FILE {path} does not exist") from None
        except (tomllib.TOMLDecodeError, InvalidRule, ValueError) as err:
            raise ConfigError(f"POLICY_FILE {path} is not a valid policy: {err}") from None

    def sandbox_policy(self) -> SandboxPolicy:
        """How tools that start processes are confined: POLICY_FILE's [sandbox] table, then
        TOOL_SANDBOX (auto, bwrap, unshare or off) over it. What they must never read is hidden."""
        from activities.sandbox import SandboxPolicy

        table = self._policy_table().get("sandbox", {})
        if not isinstance(table, dict):
            raise ConfigError(f"POLICY_FILE {self.policy_file}: [sandbox] must be a table")
        enabled, launcher = table.get("enabled", True), table.get("launcher", "auto")
        names, hide = table.get("env", []), table.get("hide", [])
        if self.tool_sandbox is not None:
            enabled, launcher = self.tool_sandbox != "off", self.tool_sandbox
        if not isinstance(enabled, bool) or launcher not in SANDBOX_CHOICES:
            raise ConfigError(f"sandbox: enabled must be true or false, launcher one of {', '.join(SANDBOX_CHOICES)}")
        if (
            not isinstance(names, list)
            or not isinstance(hide, list)
            or not all(isinstance(n, str) for n in names + hide)
        ):
            raise ConfigError("sandbox: env and hide must be lists of strings")
        hidden = [self.approvals_db, self.approvals_db.parent, self.ledger_db, self.ledger_db.parent, *map(Path, hide)]
        if self.policy_file is not None:
            hidden.append(Path(self.policy_file))
        checkout = Path(__file__).resolve().parent
        if (checkout / "pyproject.toml").exists():  # a source checkout, not an installed package
            hidden.append(checkout)
        return SandboxPolicy(
            enabled=enabled,
            env=tuple(names),
            hidden=tuple(p.resolve() for p in hidden),
            launcher="auto" if launcher == "off" else launcher,
        )

    def _policy_table(self) -> dict[str, object]:
        if self.policy_file is None:
            return {}
        try:
            return tomllib.loads(Path(self.policy_file).read_text())
        except FileNotFoundError:
            raise ConfigError(f"POLICY_FILE {self.policy_file} does not exist") from None
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"POLICY_FILE {self.policy_file} is not valid TOML: {err}") from None

    def load_tools(self) -> ToolsConfig:
        """The Python tool modules and MCP servers of the same file; none without one."""
        from pydantic import ValidationError

        from activities.tool_config import ToolsConfig

        if self.policy_file is None:
            return ToolsConfig()
        path = Path(self.policy_file)
        try:
            data = tomllib.loads(path.read_text())
            return ToolsConfig.model_validate(
                {key: data[key] for key in ("python_tools", "mcp_servers") if key in data}
            )
        except FileNotFoundError:
            raise ConfigError(f"POLICY_FILE {path} does not exist") from None
        except (tomllib.TOMLDecodeError, ValidationError) as err:
            raise ConfigError(f"POLICY_FILE {path} has invalid tool settings: {err}") from None

    @property
    def ledger_db(self) -> Path:
        """The execution ledger lives apart from the projection, so losing one never loses the other."""
        return Path(os.environ.get("LEDGER_DB") or self.approvals_db.with_name("ledger.db"))
