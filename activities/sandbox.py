"""Turn a command into a sandboxed launch: the argv and environment to exec instead of the command.

A tool that starts a process (run_shell, stdio MCP servers) runs in fresh mount, PID, IPC and UTS
namespaces, and in a network namespace of its own unless its rule opts in to network; a worker
that is not root adds a user namespace, a root worker drops to an unprivileged uid instead.
Its filesystem is built from nothing: the system directories read-only, an empty /tmp, a minimal
/dev, its own /proc, and the workspace read-write as the working directory. The project's data,
configuration and checkout, the home directories and everything else are absent; paths named as
hidden that fall inside a visible tree are covered. It holds no capabilities, so it cannot undo a
mount, and its environment is an explicit allow-list, so no secret or Temporal address leaks in.
/proc/sys and /proc/sysrq-trigger are read-only and /sys is absent, so no kernel setting can be
written. Who the process is on the host is sandbox_identity's rule; how much it may use (the policy's
limits) is config/sandbox_section's.

Bubblewrap is preferred; util-linux `unshare` (present on every Linux machine) builds the same
view when bubblewrap is missing (sandbox_unshare). When neither starts, or one would leave the
command root on the host, the launch fails closed.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from activities.sandbox_identity import (
    give_workspace,
    given,
    not_root_problem,
    out_of_reach,
    setpriv_options,
    worker_is_root,
)
from activities.sandbox_unshare import PID1_SHELL, unshare_argv
from config.sandbox_section import SandboxPolicy

LAUNCHERS = ("bwrap", "unshare")
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Always covered: the machine's own secrets under /etc (root inside may map to root outside).
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d")
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "TERM", "TZ")
SANDBOX_HOME = "/tmp"
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger")
# How a root worker leaves root, in order of preference: "root" builds the view with root's rights
# and drops to the sandbox uid as the last step (needs CAP_SYS_ADMIN, as on a host); "dropped"
# drops first and builds the view in a user namespace, like any user (needs unprivileged user
# namespaces and a view the sandbox uid can reach, as in a container without CAP_SYS_ADMIN).
ROOT_MODES = ("root", "dropped")
PROBE_TIMEOUT_SECONDS = 10.0


class SandboxUnavailable(RuntimeError):
    """No sandbox could start here; the tool must not run."""


class SandboxOutOfReach(SandboxUnavailable):
    """A tree the launch must show (a server's base interpreter) is beyond the reach of the user
    who builds the sandbox; the tool must not run, and the message names the directory in the way."""


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
    """`path` is `root` or below it. Both are absolute and normalised, so their strings compare as
    the paths do, with no Path built per call: a launch asks this dozens of times."""
    below, top = str(path), str(root)
    return below == top or below.startswith(top if top.endswith("/") else top + "/")


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
    for extra in sorted({Path(os.path.abspath(p)) for p in policy.readonly}, key=lambda p: len(p.parts)):
        if extra.is_dir() and not any(_inside(extra, v) for v in visible):
            steps.append(("ro", str(extra)))
            visible.append(extra)
    hidden = _hidden(policy)
    for path in hidden:
        if any(_inside(path, v) and path != v for v in visible) and not _inside(path, workspace):
            steps.append(_cover(path))
    steps.append(("rw", str(workspace)))
    steps += [_cover(path) for path in hidden_inside(workspace, policy)]
    return [step for step in steps if step[0] != "skip"]


def _hidden(policy: SandboxPolicy) -> tuple[Path, ...]:
    return _hidden_paths(policy.hidden)


@functools.cache
def _hidden_paths(named: tuple[Path, ...]) -> tuple[Path, ...]:
    """The policy's hidden paths and the system's secrets, normalised, shallowest first (a worker has
    a policy or two: worked out once each, not at every launch)."""
    every: list[str | Path] = [*named, *SYSTEM_SECRETS]
    paths = {Path(os.path.abspath(p)) for p in every}
    return tuple(sorted(paths, key=lambda p: len(p.parts)))


def hidden_inside(workspace: Path, policy: SandboxPolicy) -> list[Path]:
    """The hidden paths a sandboxed tool of this workspace finds covered inside it."""
    return [path for path in _hidden(policy) if _inside(path, workspace) and path != workspace]


def _cover(path: Path) -> tuple[str, ...]:
    if path.is_dir():
        return ("hide-dir", str(path))
    if path.exists():
        return ("hide-file", str(path))
    return ("skip", str(path))


def _tool(name: str) -> str:
    found = shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")
    if found is None:
        raise SandboxUnavailable(f"{name} (util-linux) not found: it sets the sandbox's uid and limits")
    return found


def _modes() -> tuple[str, ...]:
    return ROOT_MODES if worker_is_root() else ("user",)


def _command_prefix(launcher: str, policy: SandboxPolicy, mode: str) -> list[str]:
    """What runs inside the sandbox before the command: setpriv (dropping root in mode "root"; the
    unshare set-up execs setpriv itself, so it gets only the options), then the limits."""
    limits = policy.limits.prlimit_argv(_tool("prlimit"))
    if launcher == "unshare":
        return [*setpriv_options(policy.uid, policy.gid, mode == "root"), *PID1_SHELL, *limits]
    if mode == "root":
        return [_tool("setpriv"), *setpriv_options(policy.uid, policy.gid, True), *limits]
    return limits


def _bwrap_parents(path: Path, mounted: list[Path], made: set[Path]) -> list[str]:
    """Directories leading to a mount point, made traversable (bubblewrap as root would copy
    the host's modes, and a 0700 parent would shut the sandbox uid out of its own workspace)."""
    argv: list[str] = []
    for parent in reversed(path.parents[:-1]):
        if parent not in made and not any(_inside(parent, m) for m in mounted):
            argv += ["--perms", "0755", "--dir", str(parent)]
            made.add(parent)
    return argv


def _bwrap_argv(
    binary: str, steps: list[tuple[str, ...]], workspace: Path, policy: SandboxPolicy, mode: str
) -> list[str]:
    if mode == "root":  # no user namespace: root builds the view, setpriv drops to the sandbox uid
        argv = [binary, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
        argv += ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_READ_SEARCH"):  # setpriv drops them all
            argv += ["--cap-add", cap]
        argv += [] if policy.network else ["--unshare-net"]
    else:
        argv = [binary, "--unshare-all", "--cap-drop", "ALL", *(["--share-net"] if policy.network else [])]
    argv += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev"]
    for path in PROC_READ_ONLY:
        argv += ["--ro-bind-try", path, path]
    tmp_size = policy.limits.tmp_bytes()
    argv += [*(["--size", str(tmp_size)] if tmp_size else []), "--perms", "1777", "--tmpfs", "/tmp"]
    mounted: list[Path] = []
    made = {Path("/tmp")}
    for step in steps:
        argv += _bwrap_parents(Path(step[1]), mounted, made)
        if step[0] in ("ro", "rw"):
            mounted.append(Path(step[1]))
        if step[0] == "link":
            argv += ["--symlink", step[2], step[1]]
        elif step[0] == "hide-dir":
            argv += ["--tmpfs", step[1]]
        elif step[0] == "hide-file":
            argv += ["--ro-bind", "/dev/null", step[1]]
        else:
            argv += ["--ro-bind" if step[0] == "ro" else "--bind", step[1], step[1]]
    return [*argv, "--chdir", str(workspace), "--", *_command_prefix("bwrap", policy, mode)]


def _unshare_argv(
    binary: str, steps: list[tuple[str, ...]], workspace: Path, policy: SandboxPolicy, mode: str
) -> list[str]:
    prefix = _command_prefix("unshare", policy, mode)
    tmp_bytes = policy.limits.tmp_bytes()
    return unshare_argv(binary, steps, workspace, policy.network, tmp_bytes, prefix, userns=mode != "root")


_RENDER = {"bwrap": _bwrap_argv, "unshare": _unshare_argv}
_works: set[tuple[str, str, int, int, str]] = set()


def _launcher_argv(name: str, binary: str, workspace: Path, policy: SandboxPolicy, mode: str) -> list[str]:
    argv = _RENDER[name](binary, _steps(workspace, policy), workspace, policy, mode)
    if mode == "dropped":
        return [_tool("setpriv"), *setpriv_options(policy.uid, policy.gid, True), *argv]
    return argv


def _probe(name: str, binary: str, policy: SandboxPolicy, environ: Mapping[str, str], mode: str) -> str | None:
    """Start a command in this launcher once; None when it runs, and not as root, else why not
    (cached on success)."""
    key = (name, binary, policy.uid, policy.gid, mode)
    if key in _works:
        return None
    workspace = Path(tempfile.mkdtemp(prefix="sandbox-probe-"))
    bare = replace(policy, readonly=())  # whether the launcher starts, not what one server needs shown
    try:
        if mode != "user":
            give_workspace(workspace, policy.uid, policy.gid)
        argv = [*_launcher_argv(name, binary, workspace, bare, mode), "/bin/cat", "/proc/self/status"]
        env = scrubbed_env(policy, environ, SANDBOX_HOME)
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as err:
        return f"{name}: {err}"
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return detail if detail.startswith(f"{name}:") else f"{name}: {detail}"
    root = not_root_problem(done.stdout) if mode == "root" else None  # "dropped" is uid 0 of its namespace
    if root is not None:
        return f"{name}: {root}; tools do not run as the host's root"
    _works.add(key)
    return None


# The launcher and mode each policy's choice settled on (see _choose), by what the choice depends on.
_chosen: dict[tuple[str, int, int, str, tuple[str, ...]], tuple[str, str, str]] = {}


def _choice_key(policy: SandboxPolicy, environ: Mapping[str, str]) -> tuple[str, int, int, str, tuple[str, ...]]:
    return (policy.launcher, policy.uid, policy.gid, environ.get("PATH", os.defpath), _modes())


def quick_to_launch(workspace: Path, policy: SandboxPolicy, environ: Mapping[str, str] | None = None) -> bool:
    """Whether preparing a launch in `workspace` is a fraction of a millisecond, fit for the event
    loop: no launcher left to probe (processes, up to PROBE_TIMEOUT_SECONDS), and no tree to hand to
    the sandbox uid (the first launch in a workspace chowns everything in it)."""
    if not policy.enabled:
        return True
    chosen = _chosen.get(_choice_key(policy, os.environ if environ is None else environ))
    if chosen is None:
        return False
    if chosen[2] == "user":
        return True
    try:
        if given(workspace, policy.uid, policy.gid):
            return True
        with os.scandir(workspace) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def _choose(policy: SandboxPolicy, environ: Mapping[str, str]) -> tuple[str, str, str]:
    """The first launcher and mode that start here, and not as the host's root. Settled once per
    policy and PATH: a candidate that failed its probe (bubblewrap as root in a container without
    CAP_SYS_ADMIN) is not started again before every launch."""
    if worker_is_root() and 0 in (policy.uid, policy.gid):
        raise SandboxUnavailable("the worker is root and the sandbox uid or gid is 0: tools do not run as root")
    key = _choice_key(policy, environ)
    if key not in _chosen:
        _chosen[key] = _first_that_starts(policy, environ)
    return _chosen[key]


def _first_that_starts(policy: SandboxPolicy, environ: Mapping[str, str]) -> tuple[str, str, str]:
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
        for mode in _modes():
            why = _probe(name, binary, policy, environ, mode)
            if why is None:
                return name, binary, mode
            reasons.append(why if mode == "user" else f"{why} (as root, {mode})")
    raise SandboxUnavailable(
        "the sandbox could not start (" + "; ".join(reasons) + "). Install bubblewrap (Debian: apt-get install "
        "bubblewrap) or allow user namespaces; only if this machine is itself a throwaway sandbox, "
        "turn it off with [sandbox] enabled = false or TOOL_SANDBOX=off"
    )


def sandboxed_launch(
    argv: Sequence[str], workspace: Path, policy: SandboxPolicy, environ: Mapping[str, str] | None = None
) -> Launch:
    """What to exec for `argv` in `workspace` under `policy`. Raises SandboxUnavailable, never
    returns an unsandboxed launch unless the policy itself turned the sandbox off, never one that
    runs the command as the host's root."""
    environ = os.environ if environ is None else environ
    workspace = Path(workspace).resolve()
    if not policy.enabled:
        return Launch(list(argv), scrubbed_env(policy, environ, str(workspace)), workspace, None)
    if policy.readonly and not worker_is_root():  # before the launcher's probe, which would fail too
        _check_reach(policy, None)
    name, binary, mode = _choose(policy, environ)
    if policy.readonly and mode == "dropped":
        _check_reach(policy, policy.uid)
    if mode != "user":
        try:
            give_workspace(workspace, policy.uid, policy.gid)
        except PermissionError as err:
            raise SandboxUnavailable(str(err)) from None
    prefix = _launcher_argv(name, binary, workspace, policy, mode)
    return Launch([*prefix, *argv], scrubbed_env(policy, environ, SANDBOX_HOME), workspace, name)


def _check_reach(policy: SandboxPolicy, uid: int | None) -> None:
    """Refuse, in one line, a read-only tree the user who builds the view cannot reach: the worker's
    own user (uid None), or the sandbox uid when a root worker drops first. Unchecked, bubblewrap
    and mount say only "Permission denied", and a tree skipped as missing leaves the server to fail
    on its own."""
    found = out_of_reach((Path(os.path.abspath(p)) for p in policy.readonly), uid, policy.gid)
    if found is None:
        return
    tree, blocker = found
    who = os.geteuid() if uid is None else uid
    try:
        st = os.stat(blocker)
        how = f" (mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid})"
    except OSError:
        how = ""
    role = "the worker's user" if uid is None else "the sandbox uid"
    raise SandboxOutOfReach(
        f"{tree} cannot be shown in the sandbox: uid {who}, {role}, builds it and may not pass {blocker}{how}; "
        f"let it through (setfacl -m u:{who}:x {blocker}) or install what the tool runs where uid {who} can reach it"
    )


def tool_uid(workspace: Path, policy: SandboxPolicy) -> int | None:
    """The host uid a sandboxed tool of this workspace runs as (None: the worker's own, in a user
    namespace), the workspace handed to it as a launch would hand it. Raises SandboxUnavailable."""
    _, _, mode = _choose(policy, os.environ)
    if mode == "user":
        return None
    try:
        give_workspace(workspace, policy.uid, policy.gid)
    except PermissionError as err:
        raise SandboxUnavailable(str(err)) from None
    return policy.uid


def describe(policy: SandboxPolicy) -> str:
    """One line for the worker's log at start: how tools will be confined, or why they will not run."""
    if not policy.enabled:
        who = "as root, " if worker_is_root() else ""
        return (
            f"OFF: tools run {who}with the worker's files and network (TOOL_SANDBOX=off or [sandbox] enabled = false)"
        )
    try:
        name, binary, mode = _choose(policy, os.environ)
    except SandboxUnavailable as err:
        return f"UNAVAILABLE: shell commands and stdio MCP servers will not run: {err}"
    who = {
        "root": f"running as root: tools run as uid {policy.uid} gid {policy.gid}, not root, with no capabilities",
        "dropped": f"running as root: tools run as uid {policy.uid} gid {policy.gid} in a user namespace, not root",
        "user": f"tools run as uid {os.geteuid()} in a user namespace",
    }[mode]
    return (
        f"{name} ({binary}): {who}; /proc/sys read-only, /sys absent; {policy.limits.describe()}; "
        "no network unless a rule opts in, no project files, an allow-listed environment"
    )
