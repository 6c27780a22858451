"""The build id a worker gives Temporal: which code completed a task (shown in the Web UI).

Temporal's default hashes the bytecode of every loaded module, about 0.2 CPU-seconds at each
worker start. This one hashes the source of the loaded modules that are this project's, with the
SDK's and Python's versions, in a few milliseconds: it changes whenever the project's code does.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from functools import cache
from pathlib import Path

import temporalio.service

PROJECT_ROOT = Path(__file__).parent.parent  # as every project module's own __file__ spells it


@cache
def project_build_id() -> str:
    digest = hashlib.sha256(f"temporalio {temporalio.service.__version__}; python {platform.python_version()}".encode())
    for name, path in sorted(_project_sources()):
        digest.update(f"\0{name}\0".encode())
        digest.update(path.read_bytes())
    return f"durable-approvals-{digest.hexdigest()[:20]}"


def _project_sources() -> list[tuple[str, Path]]:
    """Each loaded module whose file is this project's own (not in a hidden directory such as the
    virtual environment). Module paths are absolute already: a prefix test, no file system calls."""
    root = f"{PROJECT_ROOT}/"
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if (
            isinstance(file, str)
            and file.startswith(root)
            and file.endswith(".py")
            and "/." not in file[len(root) - 1 :]
        ):
            found.append((name, Path(file)))
    return found
