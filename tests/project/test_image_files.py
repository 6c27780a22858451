"""The compose image's file set, built from the Dockerfile's own COPY lines, imports every entry
point: a module the Dockerfile leaves out fails here, not in a container at start."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What each compose service and the CLI run, imported as the image would start them.
ENTRY_POINTS = {
    "worker": "import worker",
    "approvals UI": "import starter, ui.server, ui.__main__",
    "CLI": "import starter, cli.main; cli.main.build_parser() if hasattr(cli.main, 'build_parser') else None",
    "demo model": "import demo_model.__main__",
}


def copied_paths(dockerfile: str) -> list[str]:
    """The sources of every COPY line (the last word is the destination inside /app)."""
    sources: list[str] = []
    for line in dockerfile.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(word.startswith("--from") for word in words):
            sources += [word for word in words[1:-1] if not word.startswith("--")]
    return sources


def build_file_set(target: Path) -> Path:
    target.mkdir(parents=True)
    for source in copied_paths((ROOT / "Dockerfile").read_text()):
        path = ROOT / source
        assert path.exists(), f"the Dockerfile copies {source}, which does not exist"
        if path.is_dir():
            shutil.copytree(path, target / source.rstrip("/"), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, target / path.name)
    return target


def import_from(app: Path, statement: str) -> subprocess.CompletedProcess[str]:
    """Python without site's .pth files (so this checkout's editable install cannot fill a gap),
    with the installed libraries and the image's files only."""
    purelib, platlib = sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]
    code = f"import sys; sys.path[:0] = [{str(app)!r}, {purelib!r}, {platlib!r}]; {statement}"
    return subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_copied_paths_reads_copy_lines() -> None:
    assert copied_paths("COPY a.py b/ ./\nCOPY --chown=x c/ c/\nRUN pip install .\nCOPY --from=build /x /y\n") == [
        "a.py",
        "b/",
        "c/",
    ]


def test_the_image_file_set_imports_every_entry_point(tmp_path: Path) -> None:
    app = build_file_set(tmp_path / "app")
    assert import_from(app, "import json").returncode == 0, "the bare interpreter with the libraries starts"
    failures = {}
    for name, statement in ENTRY_POINTS.items():
        done = import_from(app, statement)
        if done.returncode != 0:
            failures[name] = (done.stderr.strip().splitlines() or ["?"])[-1]
    assert failures == {}, f"entry points that cannot start from the image's files: {failures}"


def test_the_dockerfile_copies_whole_packages() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    loose = [source for source in copied_paths(dockerfile) if source.endswith(".py")]
    assert set(loose) <= {"worker.py", "starter.py", "run_local.py"}, f"loose modules copied one by one: {loose}"
    assert re.search(r"^USER \w+", dockerfile, re.M), "the app runs unprivileged"
