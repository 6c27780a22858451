"""What a sandboxed process can do to its host, observed from the host: its uid there, a kernel
setting it tries to write, and the memory, processes, file size and CPU time it tries to take.

Each probe returns plain facts the tests assert on. It needs only the standard library and
activities.sandbox, so the same probes run inside pytest as root and, as an unprivileged user that
cannot read the project's virtualenv, as `python3 -m tests.support.sandbox_probes LAUNCHER` with the
system's Python, which prints them as JSON.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from activities.sandbox import SandboxPolicy, sandboxed_launch
from config.sandbox_section import SandboxLimits

SETTING = Path("/proc/sys/kernel/printk_ratelimit")
WAIT_SECONDS = 60.0


def run(workspace: Path, command: str, policy: SandboxPolicy) -> tuple[int, str]:
    launch = sandboxed_launch(["/bin/sh", "-c", command], workspace, policy)
    done = subprocess.run(
        launch.argv, env=launch.env, cwd=launch.cwd, capture_output=True, text=True, timeout=300, check=False
    )
    return done.returncode, done.stdout + done.stderr


def _marker() -> str:
    """A `sleep` argument no other process on the host has, to find the sandbox's processes by."""
    return f"{3000 + random.random():.9f}"


def _pids_running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().split(b"\0")[-2:-1] == [marker.encode()]:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _until(check: Any) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def kernel_setting_write(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    """Try to change a host kernel setting from inside; the host's value is put back if it changed."""
    before = SETTING.read_text().strip()
    wanted = str(int(before) + 1)
    status, out = run(workspace, f"echo {wanted} > {SETTING}", policy)
    after = SETTING.read_text().strip()
    if after != before:
        SETTING.write_text(before)
    sysrq = run(workspace, "if [ -w /proc/sysrq-trigger ]; then echo writable; fi; ls /sys; echo x > /sys/x", policy)
    return {"before": before, "after": after, "status": status, "out": out, "sys": sysrq[1]}


def host_identity(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    """A sandboxed process's Uid, Gid and capability lines as the host sees them, and the owner of a
    file it wrote."""
    marker = _marker()
    launch = sandboxed_launch(["/bin/sh", "-c", f"echo > written; exec sleep {marker}"], workspace, policy)
    proc = subprocess.Popen(launch.argv, env=launch.env, cwd=launch.cwd, start_new_session=True)
    try:
        pids = _until(lambda: _pids_running(marker))
        lines = (Path("/proc") / str(pids[0]) / "status").read_text().splitlines() if pids else []
        fields = {line.split(":")[0]: line.split()[1:] for line in lines if ":" in line}
        written = workspace / "written"
        owner = os.stat(written).st_uid if _until(written.exists) else None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return {
        "uid": [int(v) for v in fields.get("Uid", [])],
        "gid": [int(v) for v in fields.get("Gid", [])],
        "cap_eff": int(fields.get("CapEff", ["0"])[0], 16),
        "cap_prm": int(fields.get("CapPrm", ["0"])[0], 16),
        "file_owner": owner,
        "left_running": bool(_pids_running(marker) and not _until(lambda: not _pids_running(marker))),
    }


def memory(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    take = "import sys; bytearray(int(sys.argv[1]) << 20); print('allocated')"
    return {str(mib): run(workspace, f'/usr/bin/python3 -c "{take}" {mib}', policy)[1] for mib in (64, 4096)}


def processes(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    """Start 2,000 processes; report whether all started, whether any outlived the run, and whether
    the sandbox and the host still start processes afterwards."""
    marker = _marker()
    command = f"i=0; while [ $i -lt 2000 ]; do sleep {marker} >/dev/null 2>&1 & i=$((i+1)); done; echo started $i"
    status, out = run(workspace, command, policy)
    gone = _until(lambda: not _pids_running(marker))
    return {
        "status": status,
        "out": out[-300:],
        "left_running": not gone,
        "then_sandbox": run(workspace, "echo still-starts", policy)[1],
        "then_host": subprocess.run(["/bin/true"], check=False).returncode,
    }


def file_size(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    """Write past a 1 MiB limit, and make sparse files past and within the default 1 GiB one."""
    small = replace(policy, limits=replace(policy.limits, file_size_mb=1))
    status, out = run(workspace, "head -c 3145728 /dev/zero > big.bin", small)
    sparse_out = run(workspace, "truncate -s 2G sparse-2g; truncate -s 512M sparse-512m", policy)[1]
    sizes = {name: (workspace / name).stat().st_size for name in ("big.bin", "sparse-2g", "sparse-512m")}
    return {"status": status, "out": out, "sizes": sizes, "sparse_out": sparse_out}


def cpu(workspace: Path, policy: SandboxPolicy) -> dict[str, Any]:
    limited = replace(policy, limits=replace(policy.limits, cpu_seconds=1))
    status, out = run(workspace, "while :; do :; done", limited)
    return {"status": status, "out": out}


PROBES = {f.__name__: f for f in (kernel_setting_write, host_identity, memory, processes, file_size, cpu)}


def main() -> None:
    launcher = sys.argv[1]
    results = {}
    for name, probe in PROBES.items():
        with tempfile.TemporaryDirectory(prefix="sandbox-probe-ws-") as workspace:
            results[name] = probe(Path(workspace), SandboxPolicy(launcher=launcher, limits=SandboxLimits()))
    print(json.dumps({"euid": os.geteuid(), "results": results}))


if __name__ == "__main__":
    main()
