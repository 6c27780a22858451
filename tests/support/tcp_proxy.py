"""A TCP proxy of the tests' own, in front of PostgreSQL, a model server or an S3 store, to cut or
stall the network to it and restore it while the rest of the system runs on.

It runs its own event loop in a thread, so sync and async tests drive it alike. `cut()` resets
every open connection and refuses new ones (what a dropped link or a failover looks like from the
client); `stall()` keeps connections open and forwards nothing (a black hole: the client only
learns by its own timeouts); `restore()` forwards again, for new connections and, after a stall,
for the held ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from types import TracebackType
from typing import Literal

Mode = Literal["pass", "cut", "stall"]


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.mode: Mode = "pass"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-proxy", daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._serving: set[asyncio.Task[None]] = set()
        self._flowing = asyncio.Event()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the proxy first"
        return int(self._server.sockets[0].getsockname()[1])

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def cut(self) -> None:
        """Reset every open connection; refuse new ones until restore()."""
        self._call(self._set("cut"))

    def stall(self) -> None:
        """Hold every connection open and forward nothing until restore()."""
        self._call(self._set("stall"))

    def restore(self) -> None:
        self._call(self._set("pass"))

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._close())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)  # type: ignore[arg-type]

    async def _start(self) -> None:
        self._flowing.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def _set(self, mode: Mode) -> None:
        self.mode = mode
        if mode == "pass":
            self._flowing.set()
            return
        self._flowing.clear()
        if mode == "cut":
            for writer in list(self._open):
                _reset(writer)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.mode = "cut"
        self._flowing.set()  # what a stall holds wakes, sees the cut and ends
        for writer in list(self._open):
            _reset(writer)
        if self._serving:
            await asyncio.wait(self._serving, timeout=5)

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        task.add_done_callback(self._serving.discard)
        if self.mode == "cut":
            _reset(client_writer)
            return
        self._open.add(client_writer)
        try:
            await self._flowing.wait()
            if self.mode == "cut":
                return
            try:
                server_reader, server_writer = await asyncio.open_connection(*self.target)
            except OSError:
                return
            self._open.add(server_writer)
            try:
                await asyncio.gather(self._pipe(client_reader, server_writer), self._pipe(server_reader, client_writer))
            finally:
                self._open.discard(server_writer)
                _reset(server_writer)
        finally:
            self._open.discard(client_writer)
            _reset(client_writer)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()  # a stall holds what arrived
                if self.mode == "cut":
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a reset (SO_LINGER 0), as a dropped link or a dead peer's kernel answers."""
    sock = writer.get_extra_info("socket")
    if sock is not None and not writer.is_closing():
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    writer.close()
