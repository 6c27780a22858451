"""The committed histories (tests/histories/): where they are, and the workflow id each replays as.

A history is named by what it records, in a folder by concern (`decisions/approved_write.json`).
Replay takes the workflow id from the file name, up to its first dot: a conversation's id changes
nothing it did, so its name is all behaviour; an `ApprovalRequest` uses its workflow id as the
request id its recorded decisions name, so its file keeps that id first and the behaviour after
the dot (`requests/approval-2373f86acd30720c72b0.approved_from_the_cli.json`).
"""

from __future__ import annotations

from pathlib import Path

HISTORY_DIR = Path(__file__).resolve().parents[1] / "histories"
# The payload store the histories with references were recorded against (read only), beside them.
PAYLOADS = HISTORY_DIR / "stored_payloads" / "payloads"
# Each old name (release by release) and where its history is now, with its bytes' digest.
RENAMED = HISTORY_DIR / "renamed.json"


def committed_histories() -> list[Path]:
    return sorted(path for path in HISTORY_DIR.rglob("*.json") if path != RENAMED)


def history_path(name: str) -> Path:
    """A history by its name under tests/histories/, without `.json` (`compaction/compacted_conversation`)."""
    return HISTORY_DIR / f"{name}.json"


def workflow_id(path: Path) -> str:
    """The workflow id a history replays as: its file name up to the first dot."""
    return path.name.split(".", 1)[0]
