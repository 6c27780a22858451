"""The fallback launcher: util-linux `unshare` and a short shell set-up build the same view as bubblewrap.

Where bubblewrap is missing, every Linux machine still has util-linux. The set-up runs as root of
a new user namespace (a worker that is not root) or as the host's root in new mount, PID, IPC, UTS
and network namespaces (a root worker, whose set-up ends by dropping to the sandbox uid); either
way it mounts the view on a private tmpfs, pivots into it and leaves no way back.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

# The unshare launcher's set-up, run as root of the new user namespace (or as the host's root, which
# then drops to the sandbox uid): build the view on a tmpfs, make /proc/sys read-only, pivot into
# it, drop the old root, then exec setpriv with its options and the command: no capabilities left.
_UNSHARE_SETUP = r"""
set -eu
R=$1; W=$2; S=$3; shift 3
P=${PATH:-/usr/bin:/bin}
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t tmpfs -o "mode=0755$S" sandbox "$R"
readonly_below() {
  while read -r _ _ _ _ mp _; do
    case $mp in "$1"|"$1"/*) mount -o remount,bind,ro,nosuid,nodev "$mp" ;; esac
  done < /proc/self/mountinfo
}
while [ "$1" != "--" ]; do
  case $1 in
    ro) mkdir -p "$R$2"; mount --rbind "$2" "$R$2"; readonly_below "$R$2"; shift 2 ;;
    rw) mkdir -p "$R$2"; mount --bind "$2" "$R$2"; shift 2 ;;
    link) mkdir -p "$R${2%/*}"; ln -s "$3" "$R$2"; shift 3 ;;
    hide-dir) mount -t tmpfs -o mode=0755,size=64k sandbox "$R$2"; shift 2 ;;
    hide-file) mount --bind /dev/null "$R$2"; shift 2 ;;
    *) echo "sandbox: unknown step $1" >&2; exit 125 ;;
  esac
done
shift
mkdir -p "$R/dev" "$R/proc" "$R/tmp"; chmod 1777 "$R/tmp"
for d in null zero full random urandom; do : > "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
ln -s /proc/self/fd "$R/dev/fd"
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
for p in sys sysrq-trigger; do
  if [ -e "$R/proc/$p" ]; then mount --bind -o ro,nosuid,nodev,noexec "$R/proc/$p" "$R/proc/$p"; fi
done
cd "$R"; mkdir .old; pivot_root . .old; umount -l /.old; rmdir /.old
cd "$W"; unset OLDPWD
PATH=$P exec setpriv "$@"
"""

# What stands as the sandbox's PID 1, once setpriv has dropped to the sandbox uid: a shell that
# starts the command as its child and waits for it, as bubblewrap's own init does. A command that
# were PID 1 itself would ignore every signal it has no handler for, the CPU limit's SIGXCPU
# included (it would run on to the hard limit). The command gets the shell's stdin and stderr
# through fds 3 and 4 (a shell gives a background command /dev/null); the shell's own stderr is
# closed to it, so a command ended by a signal gets no "Terminated" line that bubblewrap would not add.
PID1_SHELL = [
    "/bin/sh",
    "-c",
    'exec 3<&0 4>&2 </dev/null 2>/dev/null; "$@" <&3 2>&4 3<&- 4>&- & exec 3<&- 4>&-; wait $!',
    "sandbox-init",
]

_staging: Path | None = None


def _staging_dir() -> Path:
    """An empty host directory the unshare set-up mounts its private tmpfs on (one per worker)."""
    global _staging
    if _staging is None or not _staging.is_dir():
        _staging = Path(tempfile.mkdtemp(prefix="sandbox-root-"))
        _staging.chmod(0o755)  # empty; a root worker that drops first mounts on it as the sandbox uid
    return _staging


def unshare_argv(
    binary: str,
    steps: list[tuple[str, ...]],
    workspace: Path,
    network: bool,
    tmp_bytes: int | None,
    inner: list[str],
    userns: bool,
) -> list[str]:
    """The unshare command that builds `steps` around `workspace` (in a user namespace of its own
    unless the host's root builds it) and execs setpriv with `inner`: its options, the command."""
    argv = [binary, *(["--user", "--map-root-user"] if userns else [])]
    argv += ["--mount", "--pid", "--fork", "--kill-child", "--ipc", "--uts", *([] if network else ["--net"])]
    argv += ["--propagation", "private", "--", "/bin/sh", "-c", _UNSHARE_SETUP, "sandbox"]
    argv += [str(_staging_dir()), str(workspace), f",size={tmp_bytes}" if tmp_bytes else ""]
    for step in steps:
        argv += list(step)
    return [*argv, "--", *inner]
