"""The sandbox's settings: the `[sandbox]` table of the policy file, as the typed policy tools run under.

What one sandboxed process may use is bounded by rlimits (address space, processes, file size, CPU
time), set by util-linux `prlimit` as the last step inside the sandbox, so they bind the command
and everything it starts, and none of the launcher's own set-up. The process count is per uid:
inside a user namespace (a worker that is not root) that is the sandbox's own processes; for a
worker started as root it is every process of the sandbox uid on the host. The sandbox's /tmp is a
tmpfs of at most the memory limit, so it cannot be used to fill the host's RAM. A limit of 0 means
none. A root worker's tools run as an unprivileged uid and gid (65534, nobody, unless configured),
never as root. How the sandbox is built from this policy is activities/sandbox.py's part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

MIB = 1024 * 1024
CPU_GRACE_SECONDS = 5
NOBODY = 65534
SANDBOX_CHOICES = ("auto", "bwrap", "unshare", "off")


@dataclass(frozen=True)
class SandboxLimits:
    memory_mb: int = 2048  # address space of each process (RLIMIT_AS), and the size of /tmp
    max_processes: int = 256  # RLIMIT_NPROC
    file_size_mb: int = 1024  # largest file a process may write (RLIMIT_FSIZE)
    cpu_seconds: int = 600  # CPU time of each process (RLIMIT_CPU)

    def prlimit_argv(self, prlimit: str) -> list[str]:
        """`prlimit` options that set every limit, soft and hard, then exec the rest of the argv."""
        values = {
            "--as": self.memory_mb * MIB,
            "--nproc": self.max_processes,
            "--fsize": self.file_size_mb * MIB,
        }
        argv = [prlimit, *(f"{name}={value or 'unlimited'}" for name, value in values.items())]
        # CPU: SIGXCPU at the limit (the command may still report), SIGKILL a grace period later.
        cpu = f"{self.cpu_seconds}:{self.cpu_seconds + CPU_GRACE_SECONDS}" if self.cpu_seconds else "unlimited"
        return [*argv, f"--cpu={cpu}", "--"]

    def tmp_bytes(self) -> int | None:
        return self.memory_mb * MIB if self.memory_mb else None

    def describe(self) -> str:
        def show(value: int, unit: str) -> str:
            return f"{value}{unit}" if value else "unlimited"

        return (
            f"limits per process: memory {show(self.memory_mb, ' MiB')}, processes {show(self.max_processes, '')}, "
            f"file size {show(self.file_size_mb, ' MiB')}, CPU {show(self.cpu_seconds, ' s')}"
        )


@dataclass(frozen=True)
class SandboxPolicy:
    """How tools that start processes are confined. `enabled=False` runs them as the worker does."""

    enabled: bool = True
    network: bool = False
    env: tuple[str, ...] = ()  # variables passed through besides PATH, LANG, LC_*, TERM, TZ
    hidden: tuple[Path, ...] = ()  # covered if they fall inside a visible tree (a system dir, the workspace)
    launcher: str = "auto"  # auto (bwrap, else unshare), bwrap or unshare
    readonly: tuple[Path, ...] = ()  # more directories visible read-only (an MCP server's installation)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    uid: int = NOBODY  # the host uid and gid tools run as when the worker is root
    gid: int = NOBODY

    def with_network(self, network: bool) -> SandboxPolicy:
        return replace(self, network=network)


@dataclass(frozen=True)
class SandboxSection:
    """What the file's [sandbox] table says, before TOOL_SANDBOX and the data paths are added."""

    enabled: object = True
    launcher: object = "auto"
    env: object = ()
    hide: object = ()
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    uid: int = NOBODY
    gid: int = NOBODY


def limits_from_table(table: Mapping[str, object]) -> SandboxLimits:
    """The limits a POLICY_FILE [sandbox] table sets; ValueError names the first bad one."""
    values: dict[str, int] = {}
    for key in (f.name for f in fields(SandboxLimits)):
        value = table.get(key, getattr(SandboxLimits, key))
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"sandbox: {key} must be a whole number, 0 for no limit (got {value!r})")
        values[key] = value
    return SandboxLimits(**values)


def ids_from_table(table: Mapping[str, object]) -> tuple[int, int]:
    """The uid and gid a POLICY_FILE [sandbox] table names for a root worker's tools (never 0)."""
    ids = (table.get("uid", NOBODY), table.get("gid", NOBODY))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in ids):
        raise ValueError(f"sandbox: uid and gid must be whole numbers above 0, not root (got {ids[0]!r}, {ids[1]!r})")
    return ids[0], ids[1]  # type: ignore[return-value]


def sandbox_section(table: Mapping[str, object]) -> SandboxSection:
    """The [sandbox] table typed; ValueError names the first bad limit or id."""
    limits, (uid, gid) = limits_from_table(table), ids_from_table(table)
    return SandboxSection(
        enabled=table.get("enabled", True),
        launcher=table.get("launcher", "auto"),
        env=table.get("env", []),
        hide=table.get("hide", []),
        limits=limits,
        uid=uid,
        gid=gid,
    )
