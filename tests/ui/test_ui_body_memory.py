"""A 400 MB body leaves the real UI process's memory flat: it is refused with 413 while it streams.

`python starter.py ui` runs as a subprocess; a raw socket sends the body (with a Content-Length, and
chunked) the way a careless or hostile client would, and psutil samples the server's resident memory
throughout. The numbers go to build/body-limit-rss.json.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from config.settings import Settings
from tests.support.processes import REPO_ROOT, _kill, free_port, process_env, wait_for_port

BODY_BYTES = 400 * 1024 * 1024
CHUNK = 1024 * 1024
ALLOWED_GROWTH = 50 * 1024 * 1024
RESULTS = Path("build/body-limit-rss.json")
TOKEN = "memory-test-token"


@pytest.fixture
def ui_process(settings: Settings, tmp_path: Path) -> Iterator[tuple[int, psutil.Process]]:
    port = free_port()
    guarded = replace(settings, ui_token=TOKEN)
    env = process_env(guarded, f"127.0.0.1:{free_port()}", UI_PORT=str(port), UI_TOKEN=TOKEN)
    log = (tmp_path / "ui.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "starter.py", "ui"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for_port(port)
        yield port, psutil.Process(proc.pid)
    finally:
        _kill(proc, signal.SIGTERM)


class PeakRss:
    """Samples a process's resident memory in a thread until stopped; keeps the highest."""

    def __init__(self, process: psutil.Process) -> None:
        self.process = process
        self.peak = process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def send_big_body(port: int, path: str, chunked: bool, stubborn: bool) -> tuple[int, int]:
    """Sends up to BODY_BYTES until the server answers (unless stubborn) or closes; returns
    (status, bytes sent)."""
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {BODY_BYTES}"
    content_type = "application/x-www-form-urlencoded" if path == "/login" else "application/json"
    auth = "" if path == "/login" else f"Authorization: Bearer {TOKEN}\r\n"  # /login takes no token
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Content-Type: {content_type}\r\n{framing}\r\n\r\n"
    piece = b"a" * CHUNK
    frame = f"{CHUNK:x}\r\n".encode() + piece + b"\r\n" if chunked else piece
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(head.encode())
        try:
            while sent < BODY_BYTES:
                sock.settimeout(0)
                try:
                    if not stubborn and sock.recv(1, socket.MSG_PEEK):
                        break  # the answer is here: a polite client stops sending
                except BlockingIOError:
                    pass
                sock.settimeout(60)
                sock.sendall(frame)
                sent += CHUNK
            if chunked and sent >= BODY_BYTES:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(60)
        answer = sock.recv(4096).decode("latin-1")
    return int(answer.split(" ", 2)[1]), sent


@pytest.mark.parametrize(
    ("chunked", "stubborn"),
    [(False, False), (True, False), (True, True)],
    ids=["content-length", "chunked", "chunked-all-400-mb"],
)
def test_a_400_mb_body_is_refused_and_memory_stays_flat(
    ui_process: tuple[int, psutil.Process], chunked: bool, stubborn: bool
) -> None:
    port, process = ui_process
    routes = ["/login", "/api/conversations", "/api/conversations/c/messages", "/api/approvals/r/decision"]
    before = process.memory_info().rss
    answers = []
    with PeakRss(process) as peak:
        for route in routes:
            answers.append((route, *send_big_body(port, route, chunked, stubborn)))
    after = process.memory_info().rss
    record = {
        "framing": ("chunked" if chunked else "content-length") + (", sent whole" if stubborn else ""),
        "rss_before_mb": round(before / 2**20, 1),
        "rss_peak_mb": round(peak.peak / 2**20, 1),
        "rss_after_mb": round(after / 2**20, 1),
        "answers": [{"route": r, "status": s, "sent_mb": round(n / 2**20, 1)} for r, s, n in answers],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    found = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.write_text(json.dumps({**found, record["framing"]: record}, indent=2))
    assert [status for _, status, _ in answers] == [413] * len(routes), record
    assert peak.peak - before < ALLOWED_GROWTH, record
    assert after - before < ALLOWED_GROWTH, record
