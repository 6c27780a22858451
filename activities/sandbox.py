"""Turn a command into a sandboxed launch: the argv and environment to exec instead of the command.

A tool that starts a process (run_shell, later stdio MCP servers) runs in fresh user, mount, PID,
IPC and UTS namespaces, and in a network namespace of its own unless its rule opts in to network.
Its filesystem is built from nothing: the system directories read-only, an empty /tmp, a minimal
/dev, its own /proc, and the workspace read-write as the working directory. The project's data,
configuration and checkout, the home directories and everything else are absent; paths named as
hidden that fall inside a visible tree are covered. It holds no capabilities, so it cannot undo a
mount, and its environment is an explicit allow-list, so no secret or Temporal address leaks in.

Bubblewrap is preferred; util-linux `unshare` (present on every Linux machine) builds the same
view when bubblewrap is missing. When neither starts, the launch fails closed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

LAUNCHERS = ("bwrap", "unshare")
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Always covered: the machine's own secrets under /etc (root inside may map to root outside).
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d")
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
SANDBOX_HOME = "/tmp"
PROBE_TIMEOUT_SECONDS = 10.0


class SandboxUnavailable(RuntimeError):
    """No sandbox could start here; the tool must not run."""


@dataclass(frozen=True)
class SandboxPolicy:
    """How tools that start processes are confined. `enabled=False` runs them as the worker does."""

    enabled: bool = True
    network: bool = False
    env: tuple[str, ...] = ()  # variables passed through besides PATH, LANG, LC_*, TERM, TZ
    hidden: tuple[Path, ...] = ()  # covered if they fall inside a visible tree (a system dir, the workspace)
    launcher: str = "auto"  # auto (bwrap, else unshare), bwrap or unshare

    def with_network(self, network: bool) -> SandboxPolicy:
        return replace(self, network=network)


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    launcher: str | None  # None: unsandboxed, because the policy turned the sandbox off


def scrubbed_env(policy: SandboxPolicy, environ: Mapping[str, str], home: str) -> dict[str, str]:
    """Only allow-listed variables; HOME is never the worker's."""
    keep = {*BASE_ENV, *policy.env}
    env = {k: v for k, v in environ.items() if k in keep or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = home
    return env


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _steps(workspace: Path, policy: SandboxPolicy) -> list[tuple[str, ...]]:
    """The filesystem view, in mount order, as (step, path[, target]) tuples both launchers render."""
    steps: list[tuple[str, ...]] = []
    visible: list[Path] = []
    for name in SYSTEM_PATHS:
        path = Path(name)
        if path.is_symlink():
            steps.append(("link", name, os.readlink(path)))
        elif path.is_dir():
            steps.append(("ro", name))
            visible.append(path)
    if policy.network:
        resolv = Path("/etc/resolv.conf").resolve()  # often a link into /run (systemd-resolved)
        if resolv.exists() and not any(_inside(resolv, v) for v in visible):
            steps.append(("ro", str(resolv.parent)))
            visible.append(resolv.parent)
    named: list[str | Path] = [*policy.hidden, *SYSTEM_SECRETS]
    hidden = sorted({Path(os.path.abspath(p)) for p in named}, key=lambda p: len(p.parts))
    for path in hidden:
        if any(_inside(path, v) and path != v for v in visible) and not _inside(path, workspace):
            steps.append(_cover(path))
    steps.append(("rw", str(workspace)))
    steps += [_cover(path) for path in hidden if _inside(path, workspace) and path != workspace]
    return [step for step in steps if step[0] != "skip"]


def _cover(path: Path) -> tuple[str, ...]:
    if path.is_dir():
        return ("hide-dir", str(path))
    if path.exists():
        return ("hide-file", str(path))
    return ("skip", str(path))


def _bwrap_argv(binary: str, steps: list[tuple[str, ...]], workspace: Path, policy: SandboxPolicy) -> list[str]:
    argv = [binary, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if policy.network:
        argv.append("--share-net")
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for step in steps:
        if step[0] == "link":
            argv += ["--symlink", step[2], step[1]]
        elif step[0] == "hide-dir":
            argv += ["--tmpfs", step[1]]
        elif step[0] == "hide-file":
            argv += ["--ro-bind", "/dev/null", step[1]]
        else:
            argv += ["--ro-bind" if step[0] == "ro" else "--bind", step[1], step[1]]
    return [*argv, "--chdir", str(workspace), "--"]


# The unshare launcher's set-up, run as root of the new user namespace: build the view on a tmpfs,
# pivot into it, drop the old root, then exec the command with no capabilities left.
_UNSHARE_SETUP = r"""
set -eu
R=$1; W=$2; shift 2
P=${PATH:-/usr/bin:/bin}
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t tmpfs -o mode=0755 sandbox "$R"
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
cd "$R"; mkdir .old; pivot_root . .old; umount -l /.old; rmdir /.old
cd "$W"; unset OLDPWD
PATH=$P exec setpriv --bounding-set=-all --inh-caps=-all --no-new-privs -- "$@"
"""

_staging: Path | None = None


def _staging_dir() -> Path:
    """An empty host directory the unshare set-up mounts its private tmpfs on (one per worker)."""
    global _staging
    if _staging is None or not _staging.is_dir():
        _staging = Path(tempfile.mkdtemp(prefix="sandbox-root-"))
    return _staging


def _unshare_argv(binary: str, steps: list[tuple[str, ...]], workspace: Path, policy: SandboxPolicy) -> list[str]:
    argv = [binary, "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child", "--ipc", "--uts"]
    if not policy.network:
        argv.append("--net")
    argv += ["--propagation", "private", "--", "/bin/sh", "-c", _UNSHARE_SETUP, "sandbox"]
    argv += [str(_staging_dir()), str(workspace)]
    for step in steps:
        argv += list(step)
    return [*argv, "--"]


_RENDER = {"bwrap": _bwrap_argv, "unshare": _unshare_argv}
_works: set[tuple[str, str]] = set()


def _probe(name: str, binary: str, policy: SandboxPolicy, environ: Mapping[str, str]) -> str | None:
    """Start `true` in this launcher once; None when it works, else why not (cached on success)."""
    if (name, binary) in _works:
        return None
    workspace = Path(tempfile.mkdtemp(prefix="sandbox-probe-"))
    try:
        argv = [*_RENDER[name](binary, _steps(workspace, policy), workspace, policy), "/bin/sh", "-c", "exit 0"]
        env = scrubbed_env(policy, environ, SANDBOX_HOME)
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{name}: {err}"
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return detail if detail.startswith(f"{name}:") else f"{name}: {detail}"
    _works.add((name, binary))
    return None


def choose_launcher(policy: SandboxPolicy, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The first launcher that starts here, as (name, binary); SandboxUnavailable says why none did."""
    environ = os.environ if environ is None else environ
    wanted = LAUNCHERS if policy.launcher == "auto" else (policy.launcher,)
    reasons = []
    for name in wanted:
        if name not in _RENDER:
            reasons.append(f"{name}: not a known launcher (use bwrap or unshare)")
            continue
        binary = shutil.which(name, path=environ.get("PATH", os.defpath))
        if binary is None:
            reasons.append(f"{name}: not found on PATH")
            continue
        why = _probe(name, binary, policy, environ)
        if why is None:
            return name, binary
        reasons.append(why)
    raise SandboxUnavailable(
        "the sandbox could not start (" + "; ".join(reasons) + "). Install bubblewrap (Debian: apt-get install "
        "bubblewrap) or allow user namespaces; only if this machine is itself a throwaway sandbox, "
        "turn it off with [sandbox] enabled = false or TOOL_SANDBOX=off"
    )


def sandboxed_launch(
    argv: Sequence[str], workspace: Path, policy: SandboxPolicy, environ: Mapping[str, str] | None = None
) -> Launch:
    """What to exec for `argv` in `workspace` under `policy`. Raises SandboxUnavailable, never
    returns an unsandboxed launch unless the policy itself turned the sandbox off."""
    environ = os.environ if environ is None else environ
    workspace = Path(workspace).resolve()
    if not policy.enabled:
        return Launch(list(argv), scrubbed_env(policy, environ, str(workspace)), workspace, None)
    name, binary = choose_launcher(policy, environ)
    prefix = _RENDER[name](binary, _steps(workspace, policy), workspace, policy)
    return Launch([*prefix, *argv], scrubbed_env(policy, environ, SANDBOX_HOME), workspace, name)


def describe(policy: SandboxPolicy) -> str:
    """One line for the worker's log at start: how tools will be confined, or why they will not run."""
    if not policy.enabled:
        return "OFF: tools run with the worker's files and network (TOOL_SANDBOX=off or [sandbox] enabled = false)"
    try:
        name, binary = choose_launcher(policy)
    except SandboxUnavailable as err:
        return f"UNAVAILABLE: shell commands will not run: {err}"
    return f"{name} ({binary}): no network unless a rule opts in, no project files, an allow-listed environment"
