"""The layout's import rules, checked: each package imports only the packages below it.

core is pure (no temporalio, no I/O; a built-in tool's code in core/builtin/ imports activity
helpers only when it runs, see DEFERRED); workflows/ is Temporal-bound workflow code and reaches no
storage, door or UI code; nothing below the doors imports a door, the UI or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = {
    "core",
    "channels",
    "config",
    "storage",
    "doors",
    "maintenance",
    "workflows",
    "activities",
    "payload_store",
    "demo_model",
    "ui",
    "cli",
    "approvals_tools",
    "durable_approvals",
    "worker",
    "starter",
    "run_local",
}
# What each package may import from the project (itself always).
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "approvals_tools": set(),
    "durable_approvals": set(),
    # The channel kinds: one class each, its settings and its sender (httpx only for types), below
    # config, which reads each channel's table by its kind's class.
    "channels": {"core"},
    "config": {"core", "channels"},
    "payload_store": {"config"},
    "storage": {"core", "config"},
    "workflows": {"core", "durable_approvals"},
    # The payload store: workspaces are saved there when a tool ends, and restored on a new host.
    "activities": {
        "core",
        "channels",
        "config",
        "storage",
        "payload_store",
        "workflows",
        "approvals_tools",
        "durable_approvals",
    },
    # The caller library's wire types: the doors ask on behalf of callers off Temporal (doors/ask.py).
    "doors": {"core", "config", "storage", "payload_store", "workflows", "durable_approvals"},
    "maintenance": {"core", "config", "storage", "doors", "payload_store", "workflows"},
    "demo_model": {"core"},
    # The request's wire types (durable_approvals.types): the HTTP request API and the MCP permission server.
    "ui": {
        "core",
        "channels",
        "config",
        "storage",
        "doors",
        "payload_store",
        "activities",
        "workflows",
        "durable_approvals",
    },
    "cli": {
        "core",
        "channels",
        "config",
        "storage",
        "doors",
        "maintenance",
        "payload_store",
        "activities",
        "ui",
        "durable_approvals",
    },
}
# A built-in tool is one definition in core/builtin/: its spec and capabilities, read by workflow
# code and the doors, and its code, which runs only in the tool activity. So that code may import
# activity helpers, but only where nothing runs at import: inside a function, or for type checking.
# Importing a definition stays pure (test_importing_the_built_in_tools_loads_no_activity_code).
DEFERRED: dict[str, set[str]] = {"core/builtin": {"activities"}}
# Standard-library and third-party modules that do I/O or need a server: never in the core.
IO_MODULES = {
    "os",
    "io",
    "subprocess",
    "socket",
    "sqlite3",
    "asyncio",
    "pathlib",
    "shutil",
    "tempfile",
    "threading",
    "multiprocessing",
    "urllib",
    "http",
    "httpx",
    "psycopg",
    "psycopg_pool",
    "temporalio",
    "openai",
    "mcp",
    "fastapi",
    "uvicorn",
    "aioboto3",
    "boto3",
    "logging",
}


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def imports_now_and_later(path: Path) -> tuple[set[str], set[str]]:
    """What a file imports when it is imported, and what only inside a function or under
    `if TYPE_CHECKING:`."""
    now: set[str] = set()
    later: set[str] = set()

    def visit(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            (later if deferred else now).add(node.module)
        elif isinstance(node, ast.Import):
            (later if deferred else now).update(alias.name for alias in node.names)
        inside = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or (
            isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        )
        for child in ast.iter_child_nodes(node):
            visit(child, deferred or inside)

    visit(ast.parse(path.read_text()), False)
    return now, later


def package_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_every_package_imports_only_what_its_rule_allows() -> None:
    broken = []
    for package, allowed in ALLOWED.items():
        for path in package_files(package):
            relative = path.relative_to(ROOT)
            later = next((tops for folder, tops in DEFERRED.items() if relative.is_relative_to(folder)), set())
            now, deferred = imports_now_and_later(path)
            for module, may in [*((m, allowed) for m in now), *((m, allowed | later) for m in deferred)]:
                top = module.split(".")[0]
                if top in PROJECT and top != package and top not in may:
                    broken.append(f"{relative} imports {module}")
    assert broken == [], "\n".join(sorted(broken))


def test_the_core_is_pure() -> None:
    broken = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in package_files("core")
        for module in imports_of(path)
        if module.split(".")[0] in IO_MODULES
    ]
    assert broken == [], "\n".join(broken)


def test_importing_the_built_in_tools_loads_no_activity_code() -> None:
    """Workflow code reads the definitions (core/builtin/) in the sandbox: their code's imports wait
    until it runs in an activity."""
    import subprocess
    import sys

    probe = (
        "import sys, core.tool_specs\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'activities', 'temporalio', 'storage'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_workflows_reach_no_activity_code_but_its_names() -> None:
    """Workflow code names activities by their string constants (workflows/activity_calls.py)."""
    for path in package_files("workflows"):
        assert not {m for m in imports_of(path) if m.split(".")[0] in {"activities", "storage", "ui", "cli", "doors"}}


def test_only_the_entry_points_sit_at_the_root() -> None:
    loose = {path.name for path in ROOT.glob("*.py")}
    assert loose <= {"worker.py", "starter.py", "run_local.py"}, loose


# Each adapter of durable_approvals may import its own agent SDK, and only that one.
# (genai_prices is Pydantic AI's own price table, installed with it.)
ADAPTER_SDKS: dict[str, set[str]] = {"openai_agents.py": {"agents"}, "pydantic_ai.py": {"pydantic_ai", "genai_prices"}}


def test_the_callers_package_needs_only_temporalio_and_pydantic() -> None:
    """A caller installs durable_approvals into its own project: its core modules bring nothing
    else, an adapter brings only its SDK, and no core module imports an adapter."""
    import sys

    base = {*sys.stdlib_module_names, "temporalio", "nexusrpc", "pydantic", "durable_approvals"}
    adapters = {f"durable_approvals.{name.removesuffix('.py')}" for name in ADAPTER_SDKS}
    outside = {
        f"{path.name} imports {module}"
        for path in package_files("durable_approvals")
        for module in imports_of(path)
        if module.split(".")[0] not in base | ADAPTER_SDKS.get(path.name, set()) and module != "__future__"
    }
    core_to_adapter = {
        f"{path.name} imports {module}"
        for path in package_files("durable_approvals")
        for module in imports_of(path)
        if path.name not in ADAPTER_SDKS and module in adapters
    }
    assert outside | core_to_adapter == set()


def test_a_worker_loads_the_mcp_sdk_and_the_openai_client_only_when_it_uses_them() -> None:
    """The MCP SDK is a second of CPU at every worker start, the openai package a third of one; the
    first loads with the first MCP connection, the second with the first model call."""
    import subprocess
    import sys

    probe = "import sys, worker; print(sorted(m for m in ('mcp', 'mcp_types', 'openai') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_a_cli_decision_without_tracing_never_loads_opentelemetry() -> None:
    """With no OTEL_* endpoint set, a decision's span is a no-op and OpenTelemetry stays unloaded
    (a tenth of every CLI run's start); with one set, tests/observability checks the spans."""
    import os
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    probe = (
        "import sys, starter, cli.approvals, doors.control, activities.projection, worker\n"
        "from config.telemetry import current_traceparent, span\n"
        "with span('probe', {}) as current: pass\n"
        "print(current, current_traceparent(), sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True)
    assert loaded.stdout.strip() == "None None []", loaded.stdout + loaded.stderr


def test_the_doors_rules_load_without_a_json_schema_validator() -> None:
    """A CLI decision's pre-check (claims, refusals, approver rules, the policy) needs no argument
    validation: jsonschema, a sixth of a CLI run's start, loads only with core.tool_arguments."""
    import subprocess
    import sys

    probe = (
        "import sys, storage.claims, core.refusals, core.policy, core.tool_specs, cli.approvals\n"
        "before = 'jsonschema' in sys.modules\n"
        "import core.tool_arguments\n"
        "print(before, 'jsonschema' in sys.modules)"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert loaded.stdout.strip() == "False True", loaded.stdout + loaded.stderr
