"""Support for tests of brought tools: a configuration file, a git repository, an HTTP MCP server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from config.settings import Settings
from tests.conftest import binary
from tests.support.processes import REPO_ROOT, _kill, free_port, wait_for_port

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.test",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.test",
}


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def with_config(settings: Settings, path: Path, rules: dict[str, Any], servers: dict[str, dict[str, Any]]) -> Settings:
    """Settings whose POLICY_FILE holds these rules (and python_tools) and these MCP servers."""
    lines = [f"{key} = {_toml(value)}" for key, value in rules.items()]
    for name, server in servers.items():
        lines.append(f"[mcp_servers.{name}]")
        lines += [f"{key} = {_toml(value)}" for key, value in server.items()]
    path.write_text("\n".join(lines) + "\n")
    return replace(settings, policy_file=str(path))


def git(repo: Path, *args: str) -> str:
    # A root worker gives the workspace to the sandbox uid; the test reads it as root all the same.
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", **GIT_IDENTITY},
    )
    return done.stdout


def git_repo(path: Path) -> Path:
    """A repository with one commit and one staged file, ready for a commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial")
    (path / "notes.txt").write_text("staged\n")
    git(path, "add", "notes.txt")
    return path


def commit_count(repo: Path) -> int:
    return len(git(repo, "log", "--format=%H").split())


def git_processes() -> list[psutil.Process]:
    """The mcp-server-git processes this test process started (through a worker in it); the
    sandbox's launcher processes, whose command lines name it too, are not counted."""
    me = psutil.Process(os.getpid())
    children = [p for p in me.children(recursive=True) if p.name() not in ("bwrap", "unshare")]
    return [p for p in children if any("mcp-server-git" in part for part in p.cmdline())]


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": binary("mcp-server-git"), "args": ["--repository", str(repo)], "env": GIT_IDENTITY}


@dataclass
class HttpMcpServer:
    """tests/support/http_mcp_server.py in its own process: a streamable-HTTP MCP server to change or kill."""

    state_dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def set_description(self, text: str) -> None:
        (self.state_dir / "description.txt").write_text(text)

    def calls(self) -> list[str]:
        log = self.state_dir / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def start(self) -> HttpMcpServer:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        log = (self.state_dir / "server.log").open("ab")
        command = [sys.executable, "-m", "tests.support.http_mcp_server", str(self.port), str(self.state_dir)]
        self.proc = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for_port(self.port)
        return self

    def kill(self) -> None:
        _kill(self.proc, signal.SIGKILL)
