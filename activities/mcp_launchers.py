"""What the common ways MCP servers ship need to see in the sandbox, worked out from the command.

- `node SCRIPT ...`: the package SCRIPT belongs to, read-only: the outermost `node_modules` above
  it (where its dependencies were installed), else the nearest directory with a package.json.
- `npx -y PACKAGE`: node's installation and the npm cache (`npm_config_cache`, else ~/.npm),
  read-only, with `npm_config_cache` pointing at it. The cache is read-only, so a package npx has
  not fetched before cannot be installed from inside: install it first (`npm install -g PACKAGE`,
  or run `npx -y PACKAGE` once as the worker's user). Without network npm is told to stay offline.
- `uvx PACKAGE` (or `uv tool run`): uv's cache and its managed Pythons, read-only, and offline
  without network; as with npx, fetch the package once on the host first (`uvx PACKAGE --help`).

Anything else a server needs goes in its table's `readonly = [...]`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

NODE_PROGRAMS = ("node", "nodejs")
NPX_PROGRAMS = ("npx",)
UVX_PROGRAMS = ("uvx", "uv")
TOOL_QUERY_SECONDS = 10.0


@dataclass
class LauncherNeeds:
    readonly: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def script_package(script: Path) -> list[Path]:
    """The trees a node script needs: its package and the node_modules it resolves from."""
    found: list[Path] = []
    for path in dict.fromkeys([Path(os.path.abspath(script)), Path(os.path.realpath(script))]):
        parts = path.parts
        if "node_modules" in parts:
            found.append(Path(*parts[: parts.index("node_modules") + 1]))
            continue
        root = next((p for p in path.parents if (p / "package.json").is_file()), None)
        found.append(root if root is not None else path.parent)
    return found


def _first_script(args: list[str], cwd: Path) -> Path | None:
    for arg in args:
        if arg.startswith("-"):
            continue
        candidate = Path(arg) if os.path.isabs(arg) else cwd / arg
        return candidate if candidate.is_file() else None
    return None


def node_installation(program: str) -> list[Path]:
    """Node's own prefix (bin/node, lib/node_modules/npm) for the program found on PATH."""
    found = shutil.which(program)
    if found is None:
        return []
    real = Path(os.path.realpath(found))
    trees = [Path(os.path.abspath(found)).parent.parent]
    if "node_modules" in real.parts:  # npx -> lib/node_modules/npm/bin/npx-cli.js
        trees.append(Path(*real.parts[: real.parts.index("node_modules")]).parent)
    node = shutil.which("node")
    if node is not None:
        trees.append(Path(os.path.realpath(node)).parent.parent)
    return list(dict.fromkeys(trees))


def npm_cache(environ: dict[str, str]) -> Path:
    configured = environ.get("npm_config_cache") or environ.get("NPM_CONFIG_CACHE")
    return Path(configured) if configured else Path(os.path.expanduser("~")) / ".npm"


def _uv_dir(uv: str, *query: str) -> Path | None:
    try:
        done = subprocess.run([uv, *query], capture_output=True, text=True, timeout=TOOL_QUERY_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return Path(text) if done.returncode == 0 and text else None


def launcher_needs(program: str, args: list[str], cwd: Path, network: bool, environ: dict[str, str]) -> LauncherNeeds:
    """The read-only trees and variables the server's launcher needs (nothing for other programs)."""
    name = os.path.basename(program)
    needs = LauncherNeeds()
    if name in NODE_PROGRAMS:
        needs.readonly += node_installation(program)
        script = _first_script(args, cwd)
        if script is not None:
            needs.readonly += script_package(script)
    elif name in NPX_PROGRAMS:
        cache = npm_cache(environ)
        needs.readonly += [*node_installation(program), cache]
        needs.env["npm_config_cache"] = str(cache)
        needs.env["npm_config_update_notifier"] = "false"
        if not network:
            needs.env["npm_config_offline"] = "true"
    elif name in UVX_PROGRAMS:
        uv = shutil.which("uv") or shutil.which(program)
        if uv is not None:
            needs.readonly.append(Path(os.path.realpath(uv)).parent)
            for query, variable in ((("cache", "dir"), "UV_CACHE_DIR"), (("python", "dir"), "UV_PYTHON_INSTALL_DIR")):
                found = _uv_dir(uv, *query)
                if found is not None:
                    needs.readonly.append(found)
                    needs.env[variable] = str(found)
        if not network:
            needs.env["UV_OFFLINE"] = "1"
    return needs
