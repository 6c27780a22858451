"""The order the suite hands its tests out in: the modules that take longest first.

`make test` runs in parallel processes that each take a whole module at a time (`--dist
loadscope`, so a module's fixtures start once), in collection order (`--no-loadscope-reorder`).
A long module left for the end keeps one process busy while the others have finished; started
first, it runs beside the short ones. The list is measured (`--durations`),
longest first; a module missing from it only runs later, never wrongly. Modules that first install
from npm (a fresh clone's cache is empty) come early, and so do `make test-scale`'s longest.
"""

from __future__ import annotations

import pytest

LONGEST_FIRST = (
    "tests/tools/test_many_hosts.py",
    "tests/tools/test_rolling_deploy.py",
    "tests/durability/test_compaction.py",
    "tests/agents/test_typescript_caller.py",
    "tests/ui/test_ui_api.py",
    "tests/tools/test_tools_cli.py",
    "tests/tools/test_mcp_npm_filesystem.py",
    "tests/approvals/test_supplied_by_approver.py",
    "tests/durability/test_failure_watch.py",
    "tests/doors/test_e2e_cli.py",
    "tests/tools/test_mcp_http.py",
    "tests/doors/test_cli_errors.py",
    "tests/browser/test_ui_browser.py",
    "tests/tools/test_host_gone.py",
    "tests/tools/test_earlier_release_hosts.py",
    "tests/observability/test_metrics.py",
    "tests/faults/test_postgres_faults.py",
    "tests/durability/test_long_conversation.py",
    "tests/durability/test_continue_as_new.py",
    "tests/project/test_run_local.py",
    "tests/tools/test_host_handoff.py",
    "tests/tools/test_sandbox_escape.py",
    "tests/browser/test_ui_elicitation_browser.py",
    "tests/tools/test_mcp_venv_base.py",
    "tests/faults/test_model_faults.py",
    "tests/subagents/test_subagent_doors.py",
    "tests/approvals/test_stale_decisions.py",
    "tests/durability/test_compaction_views.py",
    "tests/doors/test_mcp_permissions.py",
    "tests/ui/test_agui_endpoint.py",
)


def longest_first(items: list[pytest.Item]) -> None:
    """Sort in place by the module's rank; the order within a module is kept (a stable sort)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(LONGEST_FIRST)))
