"""Who a sandboxed process is on the host, so that a worker started as root never lends root to a tool.

A user namespace created by root maps root inside to root outside, and uid 0 passes every
permission check on /proc/sys and the like. So when the worker is root, the launcher builds the
sandbox's view with root's rights and then, as the last step before the command, `setpriv` drops to
an unprivileged host uid and gid (65534, nobody, unless configured): no capabilities, no
supplementary groups, no new privileges. The directory the tool runs in is given to that uid once,
so the command can write its workspace. A worker that is not root needs none of this: its user
namespace maps to its own uid.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def worker_is_root() -> bool:
    return os.geteuid() == 0


def setpriv_options(uid: int, gid: int, drop_root: bool) -> list[str]:
    """setpriv options that leave no capability to regain and, from root, switch to uid:gid."""
    switch = [f"--reuid={uid}", f"--regid={gid}", "--clear-groups"] if drop_root else []
    return [*switch, "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", "--"]


def give_workspace(workspace: Path, uid: int, gid: int) -> None:
    """Hand the workspace to the sandbox uid: the whole tree the first time (its top directory still
    another owner's), the top directory alone after. Walks by directory handle, follows no link.
    Refuses (PermissionError) a workspace whose parents the sandbox uid could write: a tool could
    swap the workspace for a link, and root would build the next sandbox around the link's target."""
    for parent in workspace.parents:
        st = os.stat(parent)
        if (
            st.st_uid == uid
            or (st.st_gid == gid and st.st_mode & stat.S_IWGRP)
            or (st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX)
        ):
            raise PermissionError(
                f"{parent}, a parent of the workspace {workspace}, is writable by the sandbox uid {uid}: "
                "make it root's (chown root and chmod go-w) so a tool cannot replace the workspace"
            )
    if given(workspace, uid, gid):
        return
    for _, dirs, files, dir_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in [*dirs, *files]:
            os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
    os.chown(workspace, uid, gid, follow_symlinks=False)


def given(workspace: Path, uid: int, gid: int) -> bool:
    """Whether the workspace is the sandbox uid's already (its top directory: a given tree stays so)."""
    top = os.stat(workspace, follow_symlinks=False)
    return (top.st_uid, top.st_gid) == (uid, gid)


def not_root_problem(status: str) -> str | None:
    """Why a process whose /proc/PID/status reads `status` holds root (None when it does not)."""
    for line in status.splitlines():
        if line.startswith(("Uid:", "Gid:")) and "0" in line.split()[1:]:
            return f"the sandboxed process still runs as root ({' '.join(line.split())})"
        if line.startswith("CapEff:") and int(line.split()[1], 16) != 0:
            return "the sandboxed process still holds capabilities"
    return None
