"""A request's resolution is written from one module: workflows/approved_calls.py decides whether
the workflow writes it or the approved tool's activity carries it, and holds both writes."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORRIDOR = "workflows/approved_calls.py"
# Where else a resolution may reach the store, and why each is not a second writer.
ALLOWED = {
    "activities/projection.py": "the projection activity the corridor's own write runs as",
    "maintenance/history_decisions.py": "a rebuild of the read model from recorded histories",
}
SKIPPED = {"tests", "build", "node_modules", "bench", "examples", "callers"}


def _source_files() -> list[Path]:
    return [
        path
        for path in ROOT.rglob("*.py")
        if not path.relative_to(ROOT).parts[0].startswith(".") and path.relative_to(ROOT).parts[0] not in SKIPPED
    ]


def _writes(tree: ast.AST) -> list[int]:
    """Lines that build a resolution's projection or hand one to a store."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in ("ApprovalResolvedProjection", "project_approval_resolved"):
            found.append(node.lineno)
    return found


def test_resolutions_are_written_from_one_module_only() -> None:
    writers = {}
    for path in _source_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("storage/"):
            continue  # the store itself
        lines = _writes(ast.parse(path.read_text(), str(path)))
        if lines:
            writers[relative] = lines
    assert CORRIDOR in writers
    assert set(writers) - {CORRIDOR} <= set(ALLOWED), writers


def test_the_check_sees_a_second_writer() -> None:
    second = (
        "async def f(calls, record, snap):\n"
        "    await calls.project(ApprovalResolvedProjection(approval=record, conversation=snap))\n"
    )
    assert _writes(ast.parse(second)) == [2]
