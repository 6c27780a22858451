"""What crosses Temporal's boundary when a conversation outlives its host: saves, restores, moves.

A conversation's tools run on one host (its workspace); a host that leaves (a deploy, a lost
machine) hands its conversations to a live host, whose worker restores the workspace from the
last save in the payload store. These are the payloads and projection events of that path.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from core.wire_model import WireModel

# Projection events: a tool waits for a host that no worker polls; it no longer does; it moved.
EVENT_HOST_WAITING = "conversation.host_waiting"
EVENT_HOST_BACK = "conversation.host_back"
EVENT_MOVED = "conversation.moved"
EVENT_NOT_SAVED = "workspace.not_saved"  # a writing tool's workspace was not saved (over the limit)
# Why a conversation changed hosts: no worker polled its host queue for HOST_GONE_SECONDS, its
# host's worker stopped and handed it over, or a person moved it (`starter.py move`).
MoveReason = Literal["host_gone", "handed_over", "moved"]


def host_of(host_queue: str) -> str:
    """`pod-a` for the host queue `durable-approvals@pod-a` (the queue itself when it has no host)."""
    return host_queue.rpartition("@")[2] or host_queue


class WorkspaceSaved(WireModel):
    """One save of a workspace to the payload store (content-addressed: only what changed is written)."""

    manifest: str = Field(description="the digest of the save's manifest; '' when nothing was saved")
    saved_at: datetime
    files: int = 0
    total_bytes: int = Field(default=0, description="what the saved files hold")
    written_bytes: int = Field(default=0, description="bytes new to the store in this save")
    skipped: str | None = Field(default=None, description="set when the workspace was not saved: why")


class WorkspaceRestored(WireModel):
    """A workspace rebuilt on a new host from its last save, before a moved conversation's tool ran."""

    manifest: str
    saved_at: datetime
    files: int
    total_bytes: int
    written_bytes: int = Field(default=0, description="bytes this restore wrote to the workspace")


class HostLeft(WireModel):
    """SIGNAL_HOST_LEFT's payload: the host queue, whether its workspaces were saved, and why
    it left: its stopping worker handed it over, or a watch found a tool stranded there."""

    # The host queue, under its wire name (signals already sent and recorded histories hold it).
    task_queue: str = Field(description="the host queue of the host that left")
    saved: bool = False
    why: Literal["handed_over", "host_gone"] = "handed_over"


class HostCheck(WireModel):
    """Whether any worker polls a host queue, as Temporal's task queue description says."""

    task_queue: str = Field(description="the host queue checked (its wire name: recorded results hold it)")
    polled: bool
    last_poll: datetime | None = None
