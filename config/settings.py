"""Configuration from the environment: every variable is optional (see the README's table)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from config.database_location import DEFAULT_WAIT_SECONDS, WAIT_VARIABLE, is_postgres, sqlite_path
from config.decision_link_key import decision_link_key
from config.errors import ConfigError
from config.sandbox_section import SANDBOX_CHOICES, SandboxPolicy

if TYPE_CHECKING:
    from config.notify_section import NotifyConfig
    from config.policy_file import PolicyFile
    from config.prescreen_section import PrescreenConfig
    from config.proxy_section import ProxyIdentity
    from config.tools_section import ToolsConfig
    from core.policy_rules import DelegationLimits, PolicyRules
    from core.push_subscription import VapidKeys

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


def _count_env(name: str, default: int) -> int:
    """A whole number, zero allowed (a workflow cache of 0 is valid: every task replays)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative, got {raw!r}")
    return value


def _port_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"{name}={raw!r} is not a port number")
    return int(raw)


DEFAULT_SAVE_EXCLUSIONS = (".venv", "node_modules", "__pycache__")


def _save_exclusions() -> tuple[str, ...]:
    """WORKSPACE_SAVE_EXCLUDE: comma-separated names or relative paths never saved (`.git/objects`)."""
    raw = os.environ.get("WORKSPACE_SAVE_EXCLUDE")
    if raw is None:
        return DEFAULT_SAVE_EXCLUSIONS
    return tuple(part.strip().strip("/") for part in raw.split(",") if part.strip().strip("/"))


def _switch_env(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("on", "true", "1", "yes"):
        return True
    if raw in ("off", "false", "0", "no"):
        return False
    raise ConfigError(f"{name} must be on or off, not {raw!r}")


def _database(name: str, default: str | None) -> str | Path | None:
    """A database setting: a PostgreSQL URL stays a string, anything else is a SQLite path."""
    raw = os.environ.get(name) or default
    if raw is None:
        return None
    return raw if is_postgres(raw) else sqlite_path(raw)


def _s3_endpoint() -> str | None:
    """The S3 endpoint botocore itself would use; set for S3-compatible stores such as MinIO."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


@dataclass(frozen=True)
class Settings:
    temporal_address: str = field(default_factory=lambda: os.environ.get("TEMPORAL_ADDRESS", "localhost:7233"))
    namespace: str = field(default_factory=lambda: os.environ.get("TEMPORAL_NAMESPACE", "default"))
    task_queue: str = field(default_factory=lambda: os.environ.get("TASK_QUEUE", "durable-approvals"))
    # A SQLite path (plain or `sqlite:///path`) or a `postgresql://` URL.
    approvals_db: str | Path = field(default_factory=lambda: _database("APPROVALS_DB", "data/approvals.db") or "")
    # LEDGER_DB, read once like every setting; None means beside approvals_db (see `ledger_db`).
    ledger_location: str | Path | None = field(default_factory=lambda: _database("LEDGER_DB", None))
    workspace_dir: Path = field(default_factory=lambda: Path(os.environ.get("WORKSPACE_DIR", "data/workspace")))
    # What signs one-time decision links; unset: a key generated once in the data directory.
    decision_link_secret: str = field(default_factory=lambda: os.environ.get("DECISION_LINK_SECRET", ""))
    # What seals the values a person supplies (supplied_by_approver); unset: a key file in the data directory.
    supplied_secret: str = field(default_factory=lambda: os.environ.get("SUPPLIED_SECRET_KEY", ""), repr=False)
    # What Web Push is signed with (VAPID); unset: a key generated once in the data directory.
    vapid_private_key: str = field(default_factory=lambda: os.environ.get("VAPID_PRIVATE_KEY", ""))
    vapid_subject: str = field(default_factory=lambda: os.environ.get("VAPID_SUBJECT", ""))
    # This worker's host: a conversation's tools run on the host that holds its workspace. Empty
    # (WORKER_HOST unset): the id kept in the workspace directory (`host_name`).
    worker_host: str = field(default_factory=lambda: os.environ.get("WORKER_HOST", "").strip())
    # A tool sent to a host that no worker polls moves to a live host after this many seconds.
    host_gone_seconds: float = field(default_factory=lambda: _float_env("HOST_GONE_SECONDS", 120.0))
    # On SIGTERM, how long running tools may take to finish before the worker hands its conversations over.
    worker_stop_grace_seconds: float = field(default_factory=lambda: _float_env("WORKER_STOP_GRACE_SECONDS", 25.0))
    # Workspaces saved to the payload store when a tool that may write ends: on by default where
    # the store is shared (PAYLOAD_STORE set, S3 or a shared directory), off for a single host.
    workspace_saves: bool = field(
        default_factory=lambda: _switch_env("WORKSPACE_SAVES", bool(os.environ.get("PAYLOAD_STORE")))
    )
    workspace_save_max_bytes: int = field(default_factory=lambda: _count_env("WORKSPACE_SAVE_MAX_BYTES", 1 << 30))
    workspace_save_exclude: tuple[str, ...] = field(default_factory=_save_exclusions)
    openai_base_url: str = field(default_factory=_model_url)
    openai_api_key: str = field(default_factory=lambda: os.environ.get("OPENAI_API_KEY") or "demo-key")
    llm_model: str = field(default_factory=_model_name)
    # LLM_STREAM=off asks for whole replies (endpoints that cannot stream); on by default.
    llm_stream: bool = field(default_factory=lambda: _switch_env("LLM_STREAM", True))
    # The longest reply asked for (sent as max_tokens; 0 sends no limit), and how long the client
    # waits for the model server before the call fails as timed out (and is retried).
    llm_max_tokens: int = field(default_factory=lambda: _count_env("LLM_MAX_TOKENS", 4096))
    llm_timeout_seconds: float = field(default_factory=lambda: _float_env("LLM_TIMEOUT_SECONDS", 120.0))
    approval_timeout: float = field(default_factory=lambda: _float_env("APPROVAL_TIMEOUT", 604800.0))
    # How long a PostgreSQL operation waits for the server before it fails; read where it is used
    # (config/database_location.py), refused here at start when it is no number.
    database_wait_seconds: float = field(default_factory=lambda: _float_env(WAIT_VARIABLE, DEFAULT_WAIT_SECONDS))
    # Streamed `message.delta` rows are pruned this long after they were written (the reply ended).
    stream_delta_retention: float = field(default_factory=lambda: _float_env("STREAM_DELTA_RETENTION_SECONDS", 3600.0))
    # What an approved write_file replaced is kept this long for an undo (docs/preview.md).
    undo_retention: float = field(default_factory=lambda: _float_env("UNDO_RETENTION_SECONDS", 7 * 86400.0))
    policy_file: str | None = field(default_factory=lambda: os.environ.get("POLICY_FILE") or None)
    ui_host: str = field(default_factory=lambda: os.environ.get("UI_HOST", "127.0.0.1"))
    ui_port: int = field(default_factory=lambda: int(os.environ.get("UI_PORT", "8000")))
    ui_token: str | None = field(default_factory=lambda: os.environ.get("UI_TOKEN") or None)
    # Identity from a reverse proxy: off unless TRUSTED_PROXIES names its addresses (ui/proxy_identity.py).
    trusted_proxies: str | None = field(default_factory=lambda: os.environ.get("TRUSTED_PROXIES") or None)
    proxy_user_header: str = field(default_factory=lambda: os.environ.get("PROXY_USER_HEADER") or "X-Forwarded-User")
    proxy_groups_header: str = field(
        default_factory=lambda: os.environ.get("PROXY_GROUPS_HEADER") or "X-Forwarded-Groups"
    )
    workflow_cache_size: int = field(default_factory=lambda: _count_env("WORKFLOW_CACHE_SIZE", 1000))
    context_budget_tokens: int = field(default_factory=_context_budget)
    failure_watch_interval: float = field(default_factory=lambda: _float_env("FAILURE_WATCH_INTERVAL", 5.0))
    temporal_ui_url: str = field(default_factory=lambda: os.environ.get("TEMPORAL_UI_URL", "http://localhost:8233"))
    tool_sandbox: str | None = field(default_factory=lambda: os.environ.get("TOOL_SANDBOX") or None)
    payload_store: str | None = field(default_factory=lambda: os.environ.get("PAYLOAD_STORE") or None)
    payload_store_threshold: int = field(default_factory=lambda: _count_env("PAYLOAD_STORE_THRESHOLD", 64 * 1024))
    # `collect-payloads` keeps a closed workflow's payloads this long after it closed (and every file this young).
    payload_store_retention: float = field(
        default_factory=lambda: _float_env("PAYLOAD_STORE_RETENTION_SECONDS", 30 * 86400.0)
    )
    s3_endpoint_url: str | None = field(default_factory=_s3_endpoint)
    # Where links in notifications point; default: the UI's own address.
    ui_public_url: str | None = field(default_factory=lambda: os.environ.get("UI_PUBLIC_URL") or None)
    # The worker's own /metrics (None: not served); the UI serves its /metrics on UI_PORT.
    worker_metrics_port: int | None = field(default_factory=lambda: _port_env("WORKER_METRICS_PORT"))
    # A run of this many approvals by one person, each within RAPID_APPROVAL_SECONDS of the one
    # before, is noticed on the page and recorded in the audit (0: never).
    rapid_approval_count: int = field(default_factory=lambda: _count_env("RAPID_APPROVAL_COUNT", 10))
    rapid_approval_seconds: float = field(default_factory=lambda: _float_env("RAPID_APPROVAL_SECONDS", 3.0))

    def proxy_identity(self) -> ProxyIdentity:
        """Who the trusted proxy may name, and in which headers; ConfigError for a bad address."""
        from config.proxy_section import ProxyIdentity, parse_proxies

        try:
            proxies = parse_proxies(self.trusted_proxies)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        return ProxyIdentity(proxies, self.proxy_user_header, self.proxy_groups_header)

    @property
    def host_queue(self) -> str:
        """The host queue: the task queue only this host's workers poll, where the tools of the
        conversations pinned here run."""
        return f"{self.task_queue}@{self.host_name}"

    @property
    def host_name(self) -> str:
        """WORKER_HOST, or the id kept in the workspace directory (config/host_identity.py)."""
        if self.worker_host:
            return self.worker_host
        from config.host_identity import kept_host_id

        return kept_host_id(self.workspace_dir)

    def policy(self) -> PolicyFile:
        """POLICY_FILE's current content, parsed once for each content (config/policy_file.py)."""
        from config.policy_file import read_policy_file

        return read_policy_file(self.policy_file)

    def load_policy(self) -> PolicyRules:
        """POLICY_FILE's rules; they travel in the workflow input so replays agree."""
        return self.policy().rules

    def load_delegation(self) -> DelegationLimits:
        """Subagent limits and rules: POLICY_FILE's [delegation] table, DELEGATION_MAX_DEPTH and
        DELEGATION_MAX_CHILDREN over it. They travel in the workflow input, like the rules."""
        from pydantic import ValidationError

        from core.policy_rules import DelegationLimits

        policy = self.policy()
        table = policy.table("delegation")
        try:
            return DelegationLimits(
                max_depth=_count_env("DELEGATION_MAX_DEPTH", table.get("max_depth", 2)),  # type: ignore[arg-type]
                max_children=_count_env("DELEGATION_MAX_CHILDREN", table.get("max_children", 4)),  # type: ignore[arg-type]
                rules=policy.delegation_rules,
            )
        except ValidationError as err:
            from config.policy_file import one_line

            raise ConfigError(f"POLICY_FILE {self.policy_file}: invalid [delegation]: {one_line(err)}") from None

    def sandbox_policy(self) -> SandboxPolicy:
        """How tools that start processes are confined: POLICY_FILE's [sandbox] table, then
        TOOL_SANDBOX (auto, bwrap, unshare or off) over it. What they must never read is hidden."""
        section = self.policy().sandbox
        enabled, launcher, names, hide = section.enabled, section.launcher, section.env, section.hide
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
        files = [db for db in (self.approvals_db, self.ledger_db) if isinstance(db, Path)]  # not a database URL
        hidden = [*files, *(db.parent for db in files), self.local_payload_dir, *map(Path, hide)]
        if self.payload_store and "://" not in self.payload_store:
            hidden.append(Path(self.payload_store))
        if self.policy_file is not None:
            hidden.append(Path(self.policy_file))
        checkout = Path(__file__).resolve().parents[1]  # config/ sits at the top of the checkout
        if (checkout / "pyproject.toml").exists():  # a source checkout, not an installed package
            hidden.append(checkout)
        return SandboxPolicy(
            enabled=enabled,
            env=tuple(names),
            hidden=tuple(p.resolve() for p in hidden),
            launcher="auto" if launcher == "off" else str(launcher),
            limits=section.limits,
            uid=section.uid,
            gid=section.gid,
        )

    def max_read_bytes(self) -> int:
        """The most read_file returns of one file: POLICY_FILE's [tools] max_read_bytes, then
        TOOL_MAX_READ_BYTES over it; a bigger file is refused with its size, never read whole."""
        from config.tools_section import DEFAULT_MAX_READ_BYTES

        table = self.policy().table("tools")
        value = os.environ.get("TOOL_MAX_READ_BYTES") or table.get("max_read_bytes", DEFAULT_MAX_READ_BYTES)
        try:
            limit = int(value)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            limit = 0
        if isinstance(value, bool) or limit <= 0:
            raise ConfigError(f"tools: max_read_bytes must be a positive whole number of bytes, not {value!r}")
        return limit

    def load_tools(self) -> ToolsConfig:
        """The Python tool modules and MCP servers of the same file; none without one."""
        return self.policy().tools

    def load_notify(self) -> NotifyConfig:
        """The notification channels and the Slack settings of the same file; none without one.
        Every channel an approver rule names must be defined."""
        return self.policy().notify

    def load_shadow_policy(self) -> PolicyRules | None:
        """The rules of `[shadow] policy = "NEW.toml"` (a path beside POLICY_FILE or absolute): judged
        beside the live rules and recorded where they differ, never acted on. None: no shadow."""
        from config.policy_file import read_policy_file

        table = self.policy().table("shadow")
        name = table.get("policy")
        if name is None:
            return None
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"POLICY_FILE {self.policy_file}: [shadow] policy must be a file name")
        path = Path(name)
        if not path.is_absolute() and self.policy_file is not None:
            path = Path(self.policy_file).parent / path
        return read_policy_file(str(path)).rules

    def load_prescreen(self) -> PrescreenConfig | None:
        """The same file's [prescreen] model, its key resolved here in the worker; None when the
        section is absent or says `enabled = false` (config/prescreen_section.py)."""
        from config.prescreen_section import parse_prescreen

        table = self.policy().table("prescreen")
        try:
            return parse_prescreen(table)
        except ConfigError as err:
            raise ConfigError(f"POLICY_FILE {self.policy_file}: {err}") from None

    @property
    def link_base(self) -> str:
        """The UI address notifications link to: UI_PUBLIC_URL, the file's link_base, or the UI's own."""
        if self.ui_public_url:
            return self.ui_public_url
        configured = self.load_notify().notifications.link_base
        return configured or f"http://{self.ui_host}:{self.ui_port}"

    @property
    def ledger_db(self) -> str | Path:
        """The execution ledger: a file of its own beside a SQLite projection, so losing one never
        loses the other; its own table in the same database beside a PostgreSQL projection."""
        if self.ledger_location is not None:
            return self.ledger_location
        if isinstance(self.approvals_db, Path):
            return self.approvals_db.with_name("ledger.db")
        return self.approvals_db

    @property
    def payload_store_location(self) -> str:
        """PAYLOAD_STORE, or a `payloads` directory beside the projection (the data directory)."""
        return self.payload_store or str(self.local_payload_dir)

    @property
    def data_dir(self) -> Path:
        """Where the service keeps its own files: beside a SQLite projection, else `data/`."""
        return self.approvals_db.parent if isinstance(self.approvals_db, Path) else Path("data")

    def supplied_secret_key(self) -> bytes:
        """The key doors seal supplied values with and tool activities open them with
        (config/supplied_secret.py)."""
        from config.supplied_secret import supplied_secret_key

        return supplied_secret_key(self.supplied_secret, self.data_dir)

    def decision_link_key(self) -> bytes:
        """The key one-time decision links are signed and checked with (config/decision_link_key.py)."""
        return decision_link_key(self.decision_link_secret, self.data_dir)

    def push_keys(self) -> VapidKeys:
        """The VAPID keys Web Push is signed with and browsers subscribe with (config/push_keys.py)."""
        from config.push_keys import push_keys  # cryptography loads only where push is used

        return push_keys(self.vapid_private_key, self.vapid_subject, self.data_dir)

    @property
    def local_payload_dir(self) -> Path:
        """Where the local driver keeps payloads by default; also read when S3 is configured, so
        references written before a move to S3 still resolve. Beside a SQLite projection; in the
        data directory when the projection is a PostgreSQL database."""
        if isinstance(self.approvals_db, Path):
            return self.approvals_db.with_name("payloads")
        return Path("data/payloads")
