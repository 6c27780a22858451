"""What the common ways MCP servers ship need to see in the sandbox, worked out from the command.

- `node SCRIPT ...`: the package SCRIPT belongs to, read-only: the outermost `node_modules` above
  it (where its dependencies were installed), else the nearest directory with a package.json.
- `npx -y PACKAGE`: npx writes to its cache even for a package it has, so it cannot run over a
  read-only one. A PACKAGE npx already installed (in the npm cache's `_npx`, from one `npx -y
  PACKAGE` on the host as the worker's user) or `npm install -g`'d is started directly, as `node
  BIN`, with its installation read-only; a package found in neither is left to npx (with node's
  installation and the cache read-only, `npm_config_cache` pointing at it, offline without
  network), which fails and says so on stderr.
- `uvx PACKAGE` (or `uv tool run`): uv's cache and its managed Pythons, read-only, and offline
  without network; as with npx, fetch the package once on the host first (`uvx PACKAGE --help`).

Anything else a server needs goes in its table's `readonly = [...]`.
"""

from __future__ import annotations

import json
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
    argv: list[str] | None = None  # what to start instead of the configured command


def _package_name(spec: str) -> str:
    """`@scope/name@1.2` -> `@scope/name`."""
    at = spec.find("@", 1)
    return spec if at == -1 else spec[:at]


def _npx_split(args: list[str]) -> tuple[str, list[str]] | None:
    """The package npx is asked to run and the arguments after it (None if it names no package)."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("-p", "--package", "-c", "--call"):
            return None  # forms that name several packages or a command: left to npx
    return (_package_name(rest[0]), rest[1:]) if rest else None


def _bin_script(package_dir: Path, name: str) -> Path | None:
    try:
        manifest = json.loads((package_dir / "package.json").read_text())
    except (OSError, ValueError):
        return None
    bins = manifest.get("bin")
    if isinstance(bins, str):
        return package_dir / bins
    if isinstance(bins, dict) and bins:
        short = name.rsplit("/", 1)[-1]
        chosen = bins.get(short) or (next(iter(bins.values())) if len(bins) == 1 else None)
        return package_dir / chosen if isinstance(chosen, str) else None
    return None


def installed_npx_package(name: str, cache: Path) -> Path | None:
    """The bin script of an already installed `name`: npx's own installs first, then the global one."""
    candidates = sorted((cache / "_npx").glob(f"*/node_modules/{name}"), key=lambda p: p.stat().st_mtime, reverse=True)
    node = shutil.which("node")
    if node is not None:
        candidates.append(Path(os.path.realpath(node)).parent.parent / "lib" / "node_modules" / name)
    for package_dir in candidates:
        script = _bin_script(package_dir, name)
        if script is not None and script.is_file():
            return script
    return None


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
        split = _npx_split(args)
        script = installed_npx_package(split[0], cache) if split is not None else None
        node = shutil.which("node")
        if split is not None and script is not None and node is not None:
            needs.argv = [node, str(script), *split[1]]
            needs.readonly += [*node_installation(node), *script_package(script)]
            return needs
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
