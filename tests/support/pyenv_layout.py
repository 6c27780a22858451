"""A Python laid out as pyenv lays one out, in a home directory of the test's own, and virtual
environments built on it: one with a stdio MCP server installed (the servers of issue 49's report),
one that sees this test's own packages, for a worker run by the home's owner.

The interpreter is the one this test runs on, copied to `HOME/.pyenv/versions/X.Y.Z` (its standard
library and shared library hard-linked where the file system allows, its site-packages and test
suite left out). A shared build finds its libpython by an absolute RUNPATH into the original
prefix, which the home's owner may not reach (this machine's own pyenv lives under a 0700 /root):
the copy's RUNPATH is rewritten to `$ORIGIN/../lib`, as a relocatable build has it. The home is
0700 and its owner's, so only that user (and root) can reach anything below it.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import REPO_ROOT

SERVER_MODULE = "stdlib_mcp_server"
SERVER_SOURCE = REPO_ROOT / "tests" / "support" / f"{SERVER_MODULE}.py"
LEFT_OUT = {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo"}
RELATIVE_RUNPATH = b"$ORIGIN/../lib"
VERSION = "{}.{}".format(*sys.version_info[:2])


@dataclass(frozen=True)
class VenvServer:
    """A virtual environment whose python is a link to a base interpreter outside it."""

    venv: Path
    base_prefix: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def config(self, **options: object) -> dict[str, object]:
        """Its [mcp_servers.NAME] table: the environment's python runs the installed server module."""
        return {"command": str(self.python), "args": ["-m", SERVER_MODULE], **options}


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system, or hard links refused: a copy reads the same
        shutil.copy2(source, target)


def _copy_stdlib(source: Path, target: Path) -> None:
    for root, dirs, files in os.walk(source):
        here = Path(root)
        if here == source:
            dirs[:] = [d for d in dirs if d not in LEFT_OUT]
        made = target / here.relative_to(source)
        made.mkdir(parents=True, exist_ok=True)
        for name in files:
            if not (here / name).is_symlink():
                _link_or_copy(here / name, made / name)


def _relocatable_copy(executable: Path, target: Path, original_lib: Path) -> None:
    """The interpreter binary, its RUNPATH into the original prefix pointed at its own lib dir."""
    data = executable.read_bytes()
    old = str(original_lib).encode() + b"\0"
    if old in data and len(old) > len(RELATIVE_RUNPATH):
        data = data.replace(old, RELATIVE_RUNPATH.ljust(len(old), b"\0"))
    target.write_bytes(data)
    target.chmod(0o755)


def pyenv_python(home: Path, owner: int) -> Path:
    """`home` (0700, `owner`'s) with this test's interpreter at .pyenv/versions/X.Y.Z; its prefix."""
    home.mkdir(parents=True)
    os.chown(home, owner, owner)
    home.chmod(0o700)
    base = Path(sys.base_prefix)
    executable = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    prefix = home / ".pyenv" / "versions" / "{}.{}.{}".format(*sys.version_info[:3])
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib").mkdir()
    _relocatable_copy(executable, prefix / "bin" / f"python{VERSION}", base / "lib")
    for name in ("python3", "python"):
        (prefix / "bin" / name).symlink_to(f"python{VERSION}")
    for shared in (base / "lib").glob("libpython*.so*"):
        _link_or_copy(shared, prefix / "lib" / shared.name)
    _copy_stdlib(Path(os.__file__).parent, prefix / "lib" / f"python{VERSION}")
    return prefix


def _make_venv(venv: Path, base_python: Path, owner: int) -> None:
    as_owner = [] if owner == os.geteuid() else ["setpriv", f"--reuid={owner}", f"--regid={owner}", "--clear-groups"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(venv.parent)}
    subprocess.run([*as_owner, str(base_python), "-m", "venv", "--without-pip", str(venv)], env=env, check=True)


def venv_server(venv: Path, base_python: Path, owner: int) -> VenvServer:
    """A venv made by `base_python -m venv` as `owner` (no pip: the server needs the standard
    library only), with the stdlib MCP server installed in its site-packages."""
    _make_venv(venv, base_python, owner)
    site_dir = venv / "lib" / f"python{VERSION}" / "site-packages"
    shutil.copy(SERVER_SOURCE, site_dir / SERVER_SOURCE.name)
    os.chown(site_dir / SERVER_SOURCE.name, owner, owner)
    return VenvServer(venv, Path(os.path.realpath(base_python)).parent.parent)


def worker_venv(venv: Path, base_python: Path, owner: int) -> Path:
    """A venv on `base_python` that sees the packages this test runs with (a .pth adds their
    site-packages as a site directory, as if installed there): the home owner's worker. Its python."""
    _make_venv(venv, base_python, owner)
    site_dir = venv / "lib" / f"python{VERSION}" / "site-packages"
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (site_dir / "test-packages.pth").write_text("\n".join(lines) + "\n")
    return venv / "bin" / "python"
