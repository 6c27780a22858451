"""`make run` (run_local.py): the commands it plans, and a real start, restart and Ctrl-C."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.run_plan import LocalOptions, Service, child_env, cli_hint, services
from cli.supervisor import Supervisor
from tests.support.helpers import workspace_of
from tests.support.processes import REPO_ROOT, free_port
from tests.support.stack import until

CLEAN = {k: v for k, v in os.environ.items() if k not in {"TEMPORAL_ADDRESS", "APPROVALS_DB", "WORKSPACE_DIR"}}
CLEAN = {k: v for k, v in CLEAN.items() if not k.startswith(("OPENAI_", "LLM_", "TASK_QUEUE", "UI_"))}


def test_default_plan_is_the_contract() -> None:
    options = LocalOptions()
    planned = {service.name: service.command for service in services(options, CLEAN)}
    assert list(planned) == ["temporal", "model", "worker", "ui"]
    assert planned["temporal"][:5] == ["temporal", "server", "start-dev", "--db-filename", "data/temporal.db"]
    assert " --search-attribute TurnStatus=Keyword --search-attribute PendingApprovals=Int" in " ".join(
        planned["temporal"]
    )
    assert planned["temporal"][planned["temporal"].index("--ui-port") + 1] == "8233"
    # The history service's queue readers, raised so a request's decision reaches its caller at once.
    assert " --dynamic-config-value history.transferProcessorMaxPollRPS=1000" in " ".join(planned["temporal"])
    assert " --dynamic-config-value history.outboundProcessorMaxPollRPS=1000" in " ".join(planned["temporal"])
    assert planned["model"][1:] == ["-m", "demo_model", "--host", "127.0.0.1", "--port", "8100"]
    assert planned["worker"][1:] == ["worker.py"] and (REPO_ROOT / "worker.py").exists()
    assert planned["ui"][1:] == ["starter.py", "ui"]
    env = child_env(options, CLEAN)
    assert env["TEMPORAL_ADDRESS"] == "localhost:7233"
    assert (env["OPENAI_BASE_URL"], env["APPROVALS_DB"], env["WORKSPACE_DIR"]) == (
        "http://127.0.0.1:8100/v1",
        "data/approvals.db",
        "data/workspace",
    )
    assert (env["UI_HOST"], env["UI_PORT"]) == ("127.0.0.1", "8000")
    assert cli_hint(options, CLEAN).endswith(" starter.py") and "=" not in cli_hint(options, CLEAN)


@pytest.mark.parametrize(
    ("real", "base_url", "model"),
    [
        ({"OPENAI_API_KEY": "sk-test"}, "https://api.openai.com/v1", "gpt-4o-mini"),
        (
            {"OPENAI_BASE_URL": "http://localhost:11434/v1", "LLM_MODEL": "qwen2.5"},
            "http://localhost:11434/v1",
            "qwen2.5",
        ),
    ],
)
def test_a_real_model_is_one_variable_away(real: dict[str, str], base_url: str, model: str) -> None:
    environ = {**CLEAN, **real}
    assert "model" not in [service.name for service in services(LocalOptions(), environ)]
    env = child_env(LocalOptions(), environ)
    assert (env["OPENAI_BASE_URL"], env["LLM_MODEL"]) == (base_url, model)


def test_moved_ports_and_data_dir_reach_every_child(tmp_path: Path) -> None:
    options = LocalOptions(data_dir=tmp_path, temporal_port=1234, temporal_ui_port=1235, model_port=1236, ui_port=1237)
    env = child_env(options, CLEAN)
    assert env["TEMPORAL_ADDRESS"] == "localhost:1234" and env["UI_PORT"] == "1237"
    assert env["OPENAI_BASE_URL"] == "http://127.0.0.1:1236/v1"
    assert env["APPROVALS_DB"] == str(tmp_path / "approvals.db")
    assert cli_hint(options, CLEAN).startswith(f"TEMPORAL_ADDRESS=localhost:1234 APPROVALS_DB={tmp_path}/approvals.db ")


def test_each_child_gets_only_the_variables_it_needs() -> None:
    secrets = {"UI_TOKEN": "ui-secret", "OPENAI_API_KEY": "sk-secret", "UNRELATED_TOKEN": "other-secret"}
    environ = {**CLEAN, **secrets, "MY_TOOL_SETTING": "x", "RUN_PASS_ENV": "MY_TOOL_SETTING", "LC_ALL": "C.UTF-8"}
    env = {service.name: service.env for service in services(LocalOptions(), environ)}

    assert set(env) == {"temporal", "worker", "ui"}  # a real model is configured: no demo model
    assert "OPENAI_API_KEY" in env["worker"] and "UI_TOKEN" not in env["worker"]
    assert "UI_TOKEN" in env["ui"] and "OPENAI_API_KEY" not in env["ui"]
    # Starting a conversation from the inbox sets its context budget from the model's name.
    assert env["ui"]["OPENAI_BASE_URL"] == env["worker"]["OPENAI_BASE_URL"] == "https://api.openai.com/v1"
    assert env["ui"]["LLM_MODEL"] == env["worker"]["LLM_MODEL"] == "gpt-4o-mini"
    for name, values in env.items():
        assert "UNRELATED_TOKEN" not in values, name
        assert values["PATH"] == environ["PATH"] and values["LC_ALL"] == "C.UTF-8"
    assert not set(secrets) & set(env["temporal"]) and "TEMPORAL_ADDRESS" not in env["temporal"]
    for name in ("worker", "ui"):
        assert env[name]["MY_TOOL_SETTING"] == "x"
        assert env[name]["TEMPORAL_ADDRESS"] == "localhost:7233" and env[name]["APPROVALS_DB"] == "data/approvals.db"
    assert env["worker"]["WORKSPACE_DIR"] == "data/workspace" and env["ui"]["UI_PORT"] == "8000"
    demo = {s.name: s.env for s in services(LocalOptions(), {**CLEAN, "UI_TOKEN": "ui-secret"})}["model"]
    assert "UI_TOKEN" not in demo and "TEMPORAL_ADDRESS" not in demo


def all_gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)


class LocalRun:
    """run_local.py as `make run` starts it, its output collected line by line."""

    def __init__(self, args: list[str]) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "run_local.py", *args],
            cwd=REPO_ROOT,
            env=CLEAN,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 120.0) -> None:
        def seen() -> bool:
            if self.proc.poll() is not None and not any(text in line for line in self.lines):
                raise AssertionError(f"run_local.py exited {self.proc.returncode}:\n" + "\n".join(self.lines))
            return any(text in line for line in self.lines)

        until(seen, timeout=timeout)

    def started(self) -> list[tuple[str, int]]:
        """(name, pid) of every child it started, in order."""
        return [(m[1], int(m[2])) for line in self.lines if (m := re.match(r"- (\w+) started \(pid (\d+)\)", line))]

    def child_pids(self) -> list[int]:
        return [pid for _, pid in self.started()]

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=90)


@pytest.fixture
def runs() -> Iterator[list[LocalRun]]:
    started: list[LocalRun] = []
    yield started
    for run in started:  # a failed test must not leave a system running
        if run.proc.poll() is None:
            run.proc.kill()
        for pid in run.child_pids():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.mark.long
@pytest.mark.timeout(600)  # a hang guard: 208 s in a loaded CI run of `make test-scale`
def test_run_local_starts_everything_keeps_it_across_a_restart_and_stops_it_all(
    tmp_path: Path, runs: list[LocalRun]
) -> None:
    ports = {name: free_port() for name in ("--temporal-port", "--temporal-ui-port", "--model-port", "--ui-port")}
    args = ["--data-dir", str(tmp_path), *[str(item) for pair in ports.items() for item in pair]]
    cli_env = {**CLEAN, "TEMPORAL_ADDRESS": f"localhost:{ports['--temporal-port']}"}
    cli_env["APPROVALS_DB"] = str(tmp_path / "approvals.db")

    def cli(*command: str) -> str:
        done = subprocess.run(
            [sys.executable, "starter.py", *command], cwd=REPO_ROOT, env=cli_env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def pending() -> list[dict[str, object]]:
        rows: list[dict[str, object]] = json.loads(cli("pending", "--json"))
        return rows

    first = LocalRun(args)
    runs.append(first)
    first.wait_for("Everything is up")
    assert any("started a first conversation" in line for line in first.lines)
    [demo] = until(pending)
    assert (demo["tool_name"], demo["arguments"]) == ("write_file", {"content": "hello", "path": "notes.txt"})

    [worker] = [pid for name, pid in first.started() if name == "worker"]
    os.kill(worker, signal.SIGKILL)  # the worker, mid-wait: a new one replaces it
    first.wait_for("worker exited with status -9; starting a new one")
    until(lambda: len(first.child_pids()) == 5)  # the replacement's line follows the notice
    cli("start", "run echo kept")
    shell = until(lambda: [row for row in pending() if row["tool_name"] == "run_shell"])[0]
    cli("approve", str(demo["request_id"]))
    notes = workspace_of(tmp_path / "workspace", str(demo["conversation_id"])) / "notes.txt"  # its own workspace
    until(lambda: notes.exists() and notes.stat().st_size > 0)  # the tool creates it, then writes
    assert notes.read_text() == "hello"

    pids = first.child_pids()
    assert first.interrupt() == 0
    until(lambda: all_gone(pids), timeout=30)

    second = LocalRun(args)
    runs.append(second)
    second.wait_for("Everything is up")
    assert not any("started a first conversation" in line for line in second.lines)
    assert [row["request_id"] for row in pending()] == [shell["request_id"]]
    pids = second.child_pids()
    assert second.interrupt() == 0
    until(lambda: all_gone(pids), timeout=30)
    assert second.lines[-1] == "Stopped."


def test_a_busy_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        args = ["--data-dir", str(tmp_path), "--temporal-port", str(port), "--temporal-ui-port", str(free_port())]
        args += ["--model-port", str(free_port()), "--ui-port", str(free_port())]
        done = subprocess.run(
            [sys.executable, "run_local.py", *args],
            cwd=REPO_ROOT,
            env=CLEAN,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"{port} (--temporal-port)" in done.stdout and "started" not in done.stdout
    assert not (tmp_path / "temporal.db").exists()


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def session_of(pid: str) -> int | None:
    """A process's session id (the pid of the child `start_new_session` made its leader)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[3])


def left_in_sessions(leaders: list[int]) -> list[int]:
    """Every process still alive in the sessions of these children: their own children included."""
    return [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and session_of(pid) in leaders]


def of_run(pid: int, children: list[int], data_dir: Path) -> bool:
    """A process that run_local.py started, or one started on its data directory."""
    with contextlib.suppress(OSError):
        if str(data_dir).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
            return True
    return session_of(str(pid)) in children


def listeners(port: int) -> list[int]:
    """The pids holding a listening TCP socket on this port (by /proc, so a probe can never connect
    to itself, and a server another test started later on a freed port is told apart by its pid)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    owners = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        owners.add(int(pid))
    return sorted(owners)


@pytest.mark.long
@pytest.mark.parametrize("moment", ["temporal started", "ui started", "ui port open", "worker ready"])
def test_ctrl_c_while_starting_leaves_no_child_running(tmp_path: Path, runs: list[LocalRun], moment: str) -> None:
    """Ctrl-C at any moment of the start-up: every child it started is gone and every port is free."""
    ports = {name: free_port() for name in ("--temporal-port", "--temporal-ui-port", "--model-port", "--ui-port")}
    run = LocalRun(["--data-dir", str(tmp_path), *[str(item) for pair in ports.items() for item in pair]])
    runs.append(run)
    if moment == "ui port open":
        until(lambda: listening(ports["--ui-port"]), timeout=120, interval=0.01)
    else:
        run.wait_for({"temporal started": "- temporal started", "ui started": "- ui started"}.get(moment, moment))
    code = run.interrupt()
    pids = run.child_pids()
    until(lambda: all_gone(pids), timeout=30)
    assert code in (0, 1), "\n".join(run.lines)
    assert run.lines[-1].startswith("Stopped"), "\n".join(run.lines)
    assert not left_in_sessions(pids), "a child's own child outlived run_local.py"
    # Nothing of this run listens on any of its ports any more. (A connect probe or a bind would be
    # a flaky check: once freed, a port may be taken by another test's server, or as the local end of
    # any connection, the probe's own included.)
    busy = [f"{name} {port}" for name, port in ports.items() if any(of_run(p, pids, tmp_path) for p in listeners(port))]
    assert not busy, f"still listening after Ctrl-C: {busy}"


async def test_stop_all_stops_a_child_with_unreadable_output_and_one_started_while_stopping(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path)
    flood = "import sys, time; sys.stdout.write('x' * 3_000_000 + '\\n'); sys.stdout.flush(); time.sleep(120)"
    noisy = await supervisor.start(Service("model", [sys.executable, "-c", flood], env=CLEAN))
    temporal = await supervisor.start(Service("temporal", ["sleep", "120"], env=CLEAN))
    await supervisor.stop_all()
    late = await supervisor.start(Service("worker", ["sleep", "120"], env=CLEAN))  # Ctrl-C came while it was starting
    assert all(child.proc.returncode is not None for child in (noisy, temporal, late))
    assert all_gone([noisy.proc.pid, temporal.proc.pid, late.proc.pid])
