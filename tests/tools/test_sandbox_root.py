"""A sandbox with none of root's powers: never uid 0 of the host, no kernel setting writable, and
every run bounded in memory, processes, file size and CPU time, with each launcher. Here the
worker is root, as `make run` is on a server or in a container; the same probes also run as an
unprivileged user (test_an_unprivileged_worker_gets_the_same_sandbox)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities import sandbox
from activities.sandbox import SandboxPolicy, SandboxUnavailable, describe, sandboxed_launch
from activities.sandbox_identity import not_root_problem, worker_is_root
from config.sandbox_section import NOBODY, SandboxLimits
from config.settings import ConfigError, Settings
from tests.support import sandbox_probes
from tests.support.processes import REPO_ROOT
from tests.tools.test_sandbox import LAUNCHERS, shell

SYSTEM_PYTHON = "/usr/bin/python3"
# The probes' own uid for the limit checks: RLIMIT_NPROC counts every process of a uid on the host,
# so 2,000 processes started as nobody would leave no fork to other tests' tools running as nobody.
PROBE_UID = 43219


def expected_uid(policy: SandboxPolicy) -> int:
    return policy.uid if worker_is_root() else os.geteuid()


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A fresh workspace root made, as the worker makes it (0700 parents of the host's root included)."""
    with tempfile.TemporaryDirectory(prefix="sandbox-root-test-") as top:
        path = Path(top) / "private" / "workspace"
        path.mkdir(parents=True)
        Path(top, "private").chmod(0o700)
        yield path


def check_kernel_setting(seen: dict[str, Any]) -> None:
    assert seen["after"] == seen["before"], "the host's kernel setting changed"
    assert seen["status"] != 0 and "Read-only file system" in seen["out"], seen
    assert "writable" not in seen["sys"] and "No such file or directory" in seen["sys"], seen


def check_identity(seen: dict[str, Any], uid: int) -> None:
    assert seen["uid"] == [uid] * 4 and 0 not in seen["gid"], seen
    assert seen["cap_eff"] == 0 and seen["cap_prm"] == 0, seen
    assert seen["file_owner"] == uid and not seen["left_running"], seen


def check_limits(memory: dict[str, Any], procs: dict[str, Any], files: dict[str, Any], cpu: dict[str, Any]) -> None:
    assert memory["64"] == "allocated\n" and "MemoryError" in memory["4096"], memory
    assert "started 2000" not in procs["out"] and "fork" in procs["out"].lower(), procs
    assert not procs["left_running"] and procs["then_sandbox"] == "still-starts\n" and procs["then_host"] == 0
    assert files["status"] != 0 and "File size limit exceeded" in files["out"], files
    assert files["sizes"] == {"big.bin": 1 << 20, "sparse-2g": 0, "sparse-512m": 512 << 20}, files
    # Stopped at the soft limit by SIGXCPU, not the hard limit's SIGKILL five seconds later.
    assert cpu["status"] == 128 + signal.SIGXCPU, cpu


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_kernel_setting_write_is_refused_and_the_host_keeps_its_value(workspace: Path, launcher: str) -> None:
    check_kernel_setting(sandbox_probes.kernel_setting_write(workspace, SandboxPolicy(launcher=launcher)))


@pytest.mark.parametrize("launcher", LAUNCHERS)
@pytest.mark.parametrize("uid", [NOBODY, 43210])
def test_the_host_sees_an_unprivileged_uid_with_no_capabilities(workspace: Path, launcher: str, uid: int) -> None:
    policy = SandboxPolicy(launcher=launcher, uid=uid, gid=uid)
    check_identity(sandbox_probes.host_identity(workspace, policy), expected_uid(policy))


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_memory_processes_file_size_and_cpu_are_bounded(workspace: Path, launcher: str) -> None:
    policy = SandboxPolicy(launcher=launcher, uid=PROBE_UID, gid=PROBE_UID)
    check_limits(
        sandbox_probes.memory(workspace, policy),
        sandbox_probes.processes(workspace, policy),
        sandbox_probes.file_size(workspace, policy),
        sandbox_probes.cpu(workspace, policy),
    )


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_root_worker_that_cannot_build_the_view_as_root_drops_first(
    monkeypatch: pytest.MonkeyPatch, launcher: str
) -> None:
    """As in a container without CAP_SYS_ADMIN: setpriv goes in front of the launcher, which then
    builds the view in a user namespace of the sandbox uid, as for any user."""
    monkeypatch.setattr(sandbox, "ROOT_MODES", ("dropped",))
    policy = SandboxPolicy(launcher=launcher, uid=PROBE_UID, gid=PROBE_UID)
    with tempfile.TemporaryDirectory(prefix="sandbox-dropped-") as top:
        Path(top).chmod(0o755)  # dropping first, the sandbox uid must reach the workspace itself
        workspace = Path(top) / "workspace"
        workspace.mkdir()
        check_kernel_setting(sandbox_probes.kernel_setting_write(workspace, policy))
        check_identity(sandbox_probes.host_identity(workspace, policy), expected_uid(policy))
        check_limits(
            sandbox_probes.memory(workspace, policy),
            sandbox_probes.processes(workspace, policy),
            sandbox_probes.file_size(workspace, policy),
            sandbox_probes.cpu(workspace, policy),
        )
    if worker_is_root():
        assert f"running as root: tools run as uid {PROBE_UID} gid {PROBE_UID} in a user namespace" in describe(policy)


def test_a_root_sandbox_uid_or_a_process_still_root_is_refused(workspace: Path) -> None:
    if worker_is_root():
        with pytest.raises(SandboxUnavailable, match="tools do not run as root"):
            sandboxed_launch(["true"], workspace, SandboxPolicy(uid=0, gid=0))
    status = "Name:\tsh\nUid:\t0\t0\t0\t0\nGid:\t65534\t65534\t65534\t65534\nCapEff:\t0000000000000000\n"
    assert "still runs as root" in (not_root_problem(status) or "")
    assert "capabilities" in (
        not_root_problem(
            status.replace("Uid:\t0\t0\t0\t0", "Uid:\t1\t1\t1\t1").replace(
                "CapEff:\t0000000000000000", "CapEff:\t0000000000000001"
            )
        )
        or ""
    )
    assert not_root_problem(status.replace("Uid:\t0\t0\t0\t0", "Uid:\t65534\t65534\t65534\t65534")) is None


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_the_workspace_is_the_sandbox_uids_and_nothing_a_link_points_to(
    workspace: Path, tmp_path: Path, launcher: str
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("the host's\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "made-by-the-worker.txt").write_text("before\n")
    (workspace / "link").symlink_to(outside)
    policy = SandboxPolicy(launcher=launcher)

    out = shell(workspace, "echo edited >> sub/made-by-the-worker.txt && mkdir new && echo done", policy)

    assert out == "exit code 0\ndone\n", out
    assert (workspace / "sub" / "made-by-the-worker.txt").read_text() == "before\nedited\n"
    assert os.stat(outside).st_uid == os.geteuid(), "a link in the workspace led the hand-over outside"
    assert {os.stat(p, follow_symlinks=False).st_uid for p in workspace.rglob("*")} == {expected_uid(policy)}


def test_the_worker_log_line_says_what_root_changes() -> None:
    line = describe(SandboxPolicy(limits=SandboxLimits(memory_mb=512, max_processes=64)))
    who = "running as root: tools run as uid 65534 gid 65534" if worker_is_root() else "in a user namespace"
    assert who in line and "/proc/sys read-only" in line, line
    assert "memory 512 MiB, processes 64, file size 1024 MiB, CPU 600 s" in line, line


def test_the_sandbox_table_sets_limits_and_the_uid(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text("[sandbox]\nmemory_mb = 512\nmax_processes = 0\ncpu_seconds = 30\nuid = 4321\ngid = 4322\n")
    policy = Settings(policy_file=str(policy_file), tool_sandbox=None).sandbox_policy()
    assert policy.limits == SandboxLimits(memory_mb=512, max_processes=0, file_size_mb=1024, cpu_seconds=30)
    assert (policy.uid, policy.gid) == (4321, 4322)
    assert Settings(policy_file=None, tool_sandbox=None).sandbox_policy().limits == SandboxLimits()


@pytest.mark.parametrize(
    ("setting", "value"), [("memory_mb", "-1"), ("max_processes", '"many"'), ("cpu_seconds", "true"), ("uid", "0")]
)
def test_a_bad_limit_or_a_root_uid_is_refused_at_start(tmp_path: Path, setting: str, value: str) -> None:
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(f"[sandbox]\n{setting} = {value}\n")
    with pytest.raises(ConfigError, match=setting):
        Settings(policy_file=str(policy_file), tool_sandbox=None).sandbox_policy()


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_an_unprivileged_worker_gets_the_same_sandbox(launcher: str) -> None:
    """The probes again, in a worker that is not root: the system's Python as an unprivileged uid."""
    if not worker_is_root():
        pytest.fail("run as root: this test starts the unprivileged worker itself")
    assert shutil.which("setpriv") and Path(SYSTEM_PYTHON).exists(), "util-linux setpriv and python3 are needed"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    argv = ["setpriv", f"--reuid={PROBE_UID}", f"--regid={PROBE_UID}", "--clear-groups", "--"]
    argv += [SYSTEM_PYTHON, "-m", "tests.support.sandbox_probes", launcher]
    done = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    seen = report["results"]

    assert report["euid"] == PROBE_UID
    check_kernel_setting(seen["kernel_setting_write"])
    check_identity(seen["host_identity"], PROBE_UID)
    check_limits(seen["memory"], seen["processes"], seen["file_size"], seen["cpu"])


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_a_workspace_the_sandbox_uid_could_swap_for_a_link_is_refused(workspace: Path, launcher: str) -> None:
    """A parent the sandbox uid owns (an earlier tool's workspace, say) would let one run replace the
    workspace with a link to /root, around which root would build the next sandbox."""
    policy = SandboxPolicy(launcher=launcher)
    inner = workspace / "conversation"
    inner.mkdir()
    shell(workspace, "true", policy)  # the outer directory is now the sandbox uid's
    if not worker_is_root():
        assert shell(inner, "echo ran", policy) == "exit code 0\nran\n"
        return
    with pytest.raises(SandboxUnavailable, match=f"{workspace}, a parent of the workspace .* writable by"):
        sandboxed_launch(["true"], inner, policy)
