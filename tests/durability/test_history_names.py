"""The committed histories are named by what they record, and the rename that named them lost none.

tests/histories/renamed.json maps each name the histories had while they were named by release
(`release3_resolution_carried_by_the_tool.json`) to its path now, with the sha256 of the bytes
`git show` gave for the old name before the move: the rename moved files and changed none.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.support.histories import HISTORY_DIR, RENAMED, committed_histories, workflow_id

# Histories committed after the rename, by their path under tests/histories/: add a new one here.
NEW_SINCE_THE_RENAME: tuple[str, ...] = (
    "decisions/supplied_password_approved_from_the_cli.json",
    "decisions/approved_and_denied_through_links.json",
    "requests/approval-3ba52a059b2dba74037a.resolution_written_by_the_door_that_decided.json",
    "turns/turn_start_written_with_the_listing.json",
    "hosts/host_picked_while_the_asked_call_is_judged.json",
)


def _renamed() -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = json.loads(RENAMED.read_text())["renamed"]
    return entries


def _relative(path: Path) -> str:
    return path.relative_to(HISTORY_DIR).as_posix()


def _started(path: Path) -> dict[str, Any]:
    first: dict[str, Any] = json.loads(path.read_text())["events"][0]
    return first["workflowExecutionStartedEventAttributes"]


def test_every_old_name_maps_to_a_history_that_exists_and_not_to_its_old_place() -> None:
    renamed = _renamed()
    assert len(renamed) >= 100
    missing = [new["path"] for new in renamed.values() if not (HISTORY_DIR / new["path"]).is_file()]
    assert not missing
    assert not [old for old in renamed if (HISTORY_DIR / old).exists()], "an old name is still there"


def test_no_two_old_names_map_to_one_history() -> None:
    shared = [path for path, n in Counter(new["path"] for new in _renamed().values()).items() if n > 1]
    assert not shared


def test_every_history_is_a_renamed_one_or_listed_as_new() -> None:
    known = {new["path"] for new in _renamed().values()} | set(NEW_SINCE_THE_RENAME)
    unlisted = [_relative(path) for path in committed_histories() if _relative(path) not in known]
    assert not unlisted, f"add each to NEW_SINCE_THE_RENAME: {unlisted}"
    assert not set(NEW_SINCE_THE_RENAME) & {new["path"] for new in _renamed().values()}


def test_a_renamed_history_has_the_bytes_it_had_under_its_old_name() -> None:
    changed = [
        old
        for old, new in _renamed().items()
        if hashlib.sha256((HISTORY_DIR / new["path"]).read_bytes()).hexdigest() != new["sha256"]
    ]
    assert not changed, "a committed history is never edited"


def test_no_history_is_named_by_a_release() -> None:
    names = [_relative(path) for path in committed_histories()]
    named = [name for name in names if any(part.startswith("release") for part in name.split("/"))]
    assert not named, "name a history by what it records; say which release recorded it in the README"


def test_a_request_history_is_named_by_its_workflow_id() -> None:
    """Replay takes the id from the name; an `ApprovalRequest` replays only under its own."""
    requests = [path for path in committed_histories() if _started(path)["workflowType"]["name"] == "ApprovalRequest"]
    assert len(requests) >= 12
    for path in requests:
        assert workflow_id(path) == _started(path)["workflowId"], _relative(path)
