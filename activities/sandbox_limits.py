"""What one sandboxed process may use: address space, processes, file size and CPU time.

A tool run is bounded so that a runaway or hostile command cannot take the machine down with it.
The limits are rlimits, set by util-linux `prlimit` as the last step inside the sandbox, so they
bind the command and everything it starts, and none of the launcher's own set-up. The process count
is per uid: inside a user namespace (a worker that is not root) that is the sandbox's own
processes; for a worker started as root it is every process of the sandbox uid on the host. The
sandbox's /tmp is a tmpfs of at most the memory limit, so it cannot be used to fill the host's RAM.
A limit of 0 means none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

MIB = 1024 * 1024
CPU_GRACE_SECONDS = 5


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


def limits_from_table(table: Mapping[str, object]) -> SandboxLimits:
    """The limits a POLICY_FILE [sandbox] table sets; ValueError names the first bad one."""
    values: dict[str, int] = {}
    for key in (f.name for f in fields(SandboxLimits)):
        value = table.get(key, getattr(SandboxLimits, key))
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"sandbox: {key} must be a whole number, 0 for no limit (got {value!r})")
        values[key] = value
    return SandboxLimits(**values)
