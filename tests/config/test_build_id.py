"""The worker's build id: this project's loaded code, and nothing else, decides it."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.build_id import PROJECT_ROOT, _project_sources, project_build_id


@pytest.fixture
def loaded_probe() -> Iterator[Path]:
    """A module of the project's own, loaded (its file in the project's ignored build directory)."""
    path = PROJECT_ROOT / "build" / "build_id_probe.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text("ANSWER = 1\n")
    module = types.ModuleType("build_id_probe")
    module.__file__ = str(path)
    sys.modules["build_id_probe"] = module
    yield path
    del sys.modules["build_id_probe"]
    path.unlink()


def test_it_covers_the_workflow_code_and_no_installed_package() -> None:
    import worker  # noqa: F401  (what a worker process has loaded)

    names = {name for name, _ in _project_sources()}
    assert {"workflows.conversation", "activities.tools", "worker"} <= names
    assert not any(name.split(".")[0] in ("temporalio", "pydantic", "openai") for name in names)
    assert project_build_id().startswith("durable-approvals-")


def test_the_same_code_gives_the_same_id_and_changed_code_another(loaded_probe: Path) -> None:
    computed = project_build_id.__wrapped__  # the id without its cache, as a new process works it out
    first = computed()
    assert computed() == first
    loaded_probe.write_text("ANSWER = 2\n")
    assert computed() != first
