"""What an MCP server that is a Python program needs to see in the sandbox: its virtual environment,
the base interpreter the environment was made from, and that interpreter's standard library.

A venv's `bin/python` is a link to (or, made with `--copies`, a copy of) an interpreter that lives
elsewhere: pyenv's `~/.pyenv/versions/X.Y.Z`, one of uv's managed Pythons, a system Python. Its
`pyvenv.cfg` names that interpreter's directory (`home = PREFIX/bin`); the interpreter finds its
standard library in `PREFIX/lib/pythonX.Y` and, built shared, its libpython in `PREFIX/lib`. Shown
only the venv's `bin`, a server starts on whatever libpython the system has, or not at all. So the
venv, every directory its python's links pass through, and each base's `bin` and `lib` are shown
read-only. The same holds for a venv's console script (`.venv/bin/mcp-server-git`) and for a
script whose `#!` line names an interpreter by its path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

PYTHON_NAME = re.compile(r"python\d*(\.\d+)?$")
MAX_LINKS = 40  # as the kernel's own limit on a chain of links
SHEBANG_BYTES = 256


def _link_dirs(path: Path) -> list[Path]:
    """The directory of `path` and of every link on the way to the file it names (each must be
    there in the sandbox for the chain to resolve), the last one's resolved too."""
    dirs: list[Path] = []
    current = Path(os.path.abspath(path))
    for _ in range(MAX_LINKS):
        dirs.append(current.parent)
        try:
            target = os.readlink(current)
        except OSError:  # not a link (or not reachable: the sandbox's reach check names it)
            break
        current = Path(os.path.normpath(current.parent / target))
    dirs.append(Path(os.path.realpath(current)).parent)
    return list(dict.fromkeys(dirs))


def _venv_of(program: Path) -> Path | None:
    """The virtual environment `program` belongs to: the directory above its own holding a pyvenv.cfg."""
    for found in (Path(os.path.abspath(program)), Path(os.path.realpath(program))):
        if os.path.isfile(found.parent.parent / "pyvenv.cfg"):  # False too when out of reach
            return found.parent.parent
    return None


def _venv_home(venv: Path) -> Path | None:
    """pyvenv.cfg's `home`: the directory of the interpreter the environment was made from."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return Path(value.strip())
    return None


def _shebang_interpreter(program: Path) -> Path | None:
    """The interpreter a script's `#!/path/to/pythonX.Y` line names (None for `#!/usr/bin/env ...`)."""
    try:
        with open(program, "rb") as script:
            head = script.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!/"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    named = Path(os.fsdecode(words[0])) if words else None
    return named if named is not None and PYTHON_NAME.match(named.name) else None


def _prefix_trees(bin_dir: Path) -> list[Path]:
    """A base interpreter's directory and, when it is PREFIX/bin, the PREFIX/lib that holds its
    standard library and libpython (not a lib without either: a home's ~/lib is none of ours)."""
    trees = [bin_dir]
    if bin_dir.name == "bin":
        lib = bin_dir.parent / "lib"
        try:
            holds_python = any(entry.name.startswith(("python", "libpython")) for entry in os.scandir(lib))
        except OSError:  # missing, or out of reach (the sandbox's reach check names its bin)
            holds_python = False
        if holds_python:
            trees.append(lib)
    return trees


def python_installation(program: Path) -> list[Path]:
    """The trees `program` needs read-only when it is a venv's python or script, an interpreter
    named pythonX.Y, or a script whose `#!` names one; [] for anything else."""
    venv = _venv_of(program)
    interpreters: list[Path] = []
    if venv is not None:
        interpreters.append(venv / "bin" / "python")
    if PYTHON_NAME.match(program.name) or PYTHON_NAME.match(Path(os.path.realpath(program)).name):
        interpreters.append(program)
    shebang = _shebang_interpreter(program)
    if shebang is not None:
        interpreters.append(shebang)
    if venv is None and not interpreters:
        return []
    bin_dirs = [d for interpreter in interpreters for d in _link_dirs(interpreter)]
    home = _venv_home(venv) if venv is not None else None
    if home is not None:
        bin_dirs += [home, Path(os.path.realpath(home))]
    trees: list[Path] = [venv] if venv is not None else []
    for bin_dir in dict.fromkeys(bin_dirs):
        trees += _prefix_trees(bin_dir)
    return list(dict.fromkeys(trees))
