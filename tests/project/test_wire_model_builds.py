"""A wire type's validator is built on first use in a short process, and at start where workflows run.

The CLI imports every wire type and uses a few; a worker builds them all before it takes work, so
no activation pays for a build against the SDK's deadlock timer."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import REPO_ROOT

COUNT_UNBUILT = """
import sys
for name in sys.argv[1:]:
    __import__(name)
from core.wire_model import wire_models
models = wire_models()
print(sum(not model.__pydantic_complete__ for model in models), len(models))
"""


def _unbuilt_and_total(*modules: str) -> tuple[int, int]:
    done = subprocess.run(
        [sys.executable, "-c", COUNT_UNBUILT, *modules], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    unbuilt, total = done.stdout.split()
    return int(unbuilt), int(total)


def test_the_cli_leaves_the_wire_types_it_does_not_use_unbuilt() -> None:
    unbuilt, total = _unbuilt_and_total(
        "cli.main",
        "cli.approvals",
        "core.tool_model",
        "core.chat_model",
        "core.policy_rules",
        "core.conversation_model",
        "core.tool_run_model",
        "core.projection_model",
    )
    assert total > 40 and unbuilt > total // 2


def test_importing_the_worker_builds_every_wire_type() -> None:
    unbuilt, total = _unbuilt_and_total("worker")
    assert total > 40 and unbuilt == 0
