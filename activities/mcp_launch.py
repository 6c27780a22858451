"""How the worker starts a stdio MCP server: the one place a configuration becomes a process.

The server runs in the same sandbox as run_shell: no network unless its configuration says
`network = true`, the workspace (or its configured cwd) read-write, the system directories, its
own installation (activities/mcp_launchers.py works it out for node, npx and uvx,
activities/mcp_python.py for a virtual environment and its base interpreter) and its configured
`readonly` paths read-only, and none of the project's data, configuration or checkout.
Its environment is the sandbox's allow-list plus the variables its configuration grants, with git's
repository-controlled programs off over both (activities/git_guard.py). When no sandbox starts,
SandboxUnavailable is raised and the server is not started at all.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from mcp import StdioServerParameters

from activities.git_guard import git_environment, guard_dir
from activities.mcp_launchers import launcher_needs
from activities.mcp_python import python_installation
from activities.sandbox import SYSTEM_PATHS, SandboxPolicy
from activities.worker_metrics import counted_launch
from config.tools_section import McpServerConfig


def stdio_parameters(config: McpServerConfig, workspace: Path, sandbox: SandboxPolicy) -> StdioServerParameters:
    assert config.command is not None, "stdio_parameters is for servers with a command"
    cwd = Path(config.cwd).resolve() if config.cwd is not None else workspace.resolve()
    cwd.mkdir(parents=True, exist_ok=True)
    program, args = _program(config.command), list(config.args)
    needs = launcher_needs(program, args, cwd, config.network, {**os.environ, **config.env})
    if needs.argv is not None:  # an installed npx package, started by node directly
        program, args = needs.argv[0], needs.argv[1:]
    env = server_environment(config, needs.env)
    if not sandbox.enabled:  # turned off on purpose: the SDK's short safe list plus the configured env
        return StdioServerParameters(command=program, args=args, env=env, cwd=str(cwd))
    guard = guard_dir()
    visible = [*installation(program), *needs.readonly, *([guard] if guard else [])]
    policy = replace(
        sandbox,
        network=config.network,
        env=(*sandbox.env, *env),
        readonly=(*sandbox.readonly, *_narrow(visible), *(Path(p).expanduser() for p in config.readonly)),
    )
    launch = counted_launch([program, *args], cwd, policy, {**os.environ, **env})
    return StdioServerParameters(command=launch.argv[0], args=launch.argv[1:], env=launch.env, cwd=str(launch.cwd))


def _narrow(trees: list[Path]) -> list[Path]:
    """Found trees, minus the system's (visible anyway) and any too broad to show (/, a home)."""
    broad = {Path("/"), Path(os.path.expanduser("~")), Path("/home"), Path("/root")}
    return [tree for tree in dict.fromkeys(trees) if tree not in broad and not _system(tree)]


def server_environment(config: McpServerConfig, launcher_env: dict[str, str]) -> dict[str, str]:
    """What its launcher needs, then what the configuration grants, then the git hardening over
    both (a configuration cannot undo it)."""
    path = config.env.get("PATH", os.environ.get("PATH", os.defpath))
    return {**launcher_env, **config.env, **git_environment(path)}


def _program(command: str) -> str:
    """A relative path (`.venv/bin/x`) is the worker's, not the server's cwd; a bare name installed
    beside the worker's interpreter (a server from PyPI) is found without an activated venv."""
    if "/" in command:  # not resolved: a venv's bin/python is a link whose target knows no venv
        return os.path.abspath(command)
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else command


def _system(path: Path) -> bool:
    return any(path.is_relative_to(root) for root in SYSTEM_PATHS)


def installation(program: str) -> list[Path]:
    """What the server needs to see to start: the worker's Python environment (the venv and the
    interpreter it links to) for a program installed in it, else the program's own directory and,
    for a Python program, its venv, base interpreter and standard library."""
    found = shutil.which(program) if "/" not in program else program
    if found is None:
        return []
    path = Path(os.path.abspath(found))
    if path.is_relative_to(sys.prefix):
        base = Path(os.path.realpath(sys.executable)).parent.parent
        trees = [Path(sys.prefix), Path(sys.base_prefix), base]
    else:
        trees = [path.parent, path.resolve().parent, *python_installation(path)]
    return _narrow(trees)
