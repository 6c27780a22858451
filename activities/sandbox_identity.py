"""Who a sandboxed process is on the host, so that a worker started as root never lends root to a tool.

A user namespace created by root maps root inside to root outside, and uid 0 passes every
permission check on /proc/sys and the like. So when the worker is root, the launcher builds the
sandbox's view with root's rights and then, as the last step before the command, `setpriv` drops to
an unprivileged host uid and gid (65534, nobody, unless configured): no capabilities, no
supplementary groups, no new privileges. The directory the tool runs in is given to that uid once,
so the command can write its workspace. A worker that is not root needs none of this: its user
namespace maps to its own uid. But then it is that user who builds the view (as is the sandbox uid
for a root worker that drops first), and a tree the view shows must be within its reach: a base
interpreter under another user's 0700 home is not, and that is said up front (`out_of_reach`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
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


def out_of_reach(trees: Iterable[Path], uid: int | None, gid: int) -> tuple[Path, Path] | None:
    """The first tree that whoever builds the sandbox cannot reach and the directory on the way it
    may not pass (None when every tree can be reached or is simply missing). uid None: the worker's
    own user, asked of the kernel (ACLs included); else an id with no supplementary groups, as
    setpriv --clear-groups leaves it, judged by the mode bits (a directory with an ACL is given the
    benefit of the doubt)."""
    for tree in trees:
        for step in [*reversed(tree.parents), tree]:
            try:
                st = os.stat(step)
            except (FileNotFoundError, NotADirectoryError):  # missing: not shown, as before
                break
            except OSError:
                return tree, step
            if not stat.S_ISDIR(st.st_mode):
                break
            if not _passes(step, st, uid, gid):
                return tree, step
    return None


def _passes(directory: Path, st: os.stat_result, uid: int | None, gid: int) -> bool:
    if uid is None:
        return os.access(directory, os.X_OK)
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IXGRP)
    if st.st_mode & stat.S_IXOTH:
        return True
    try:
        return "system.posix_acl_access" in os.listxattr(directory)
    except OSError:
        return False


def not_root_problem(status: str) -> str | None:
    """Why a process whose /proc/PID/status reads `status` holds root (None when it does not)."""
    for line in status.splitlines():
        if line.startswith(("Uid:", "Gid:")) and "0" in line.split()[1:]:
            return f"the sandboxed process still runs as root ({' '.join(line.split())})"
        if line.startswith("CapEff:") and int(line.split()[1], 16) != 0:
            return "the sandboxed process still holds capabilities"
    return None
