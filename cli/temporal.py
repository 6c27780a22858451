"""Reaching Temporal from the CLI: bounded, and every failure said in one line."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from cli.errors import EXIT_USAGE, CliError, refused
from config.settings import ConfigError, Settings

if TYPE_CHECKING:
    from temporalio.client import Client

    from storage.store import ProjectionStore

CONNECT_TIMEOUT_SECONDS = 15.0
T = TypeVar("T")


class Session:
    """The settings of one CLI run, and a Temporal client made only if a command needs one."""

    def __init__(self, settings: Settings, client: Client | None = None) -> None:
        self.settings = settings
        self._client = client
        self._store: ProjectionStore | None = None

    def store(self) -> ProjectionStore:
        """The projection (APPROVALS_DB), opened on first use and closed by `close`."""
        if self._store is None:
            from storage.store import ProjectionStore

            self._store = ProjectionStore(self.settings.approvals_db)
        return self._store

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()
            self._store = None

    async def client(self) -> Client:
        if self._client is None:
            import asyncio

            from payload_store.connection import connect

            where = f"{self.settings.temporal_address} (namespace {self.settings.namespace})"
            try:
                self._client = await asyncio.wait_for(connect(self.settings), CONNECT_TIMEOUT_SECONDS)
            except ConfigError as err:  # PAYLOAD_STORE is read when the client is built
                raise CliError(f"bad setting: {err}", EXIT_USAGE) from None
            except TimeoutError:
                raise CliError(
                    f"Temporal is not reachable at {where}: no answer in {CONNECT_TIMEOUT_SECONDS:g}s"
                ) from None
            except Exception as err:
                raise CliError(f"Temporal is not reachable at {where}: {_first_line(err)}") from None
        return self._client


async def rpc(call: Awaitable[T], what: str) -> T:
    """Run one Temporal call; an unknown or finished conversation is refused (exit 3), else failure (1)."""
    from temporalio.service import RPCError, RPCStatusCode

    try:
        return await call
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise refused(f"{what}: {_first_line(err)}") from None
        if err.status == RPCStatusCode.UNAVAILABLE:
            raise CliError(f"{what}: Temporal is not reachable: {_first_line(err)}") from None
        raise CliError(f"{what}: {_first_line(err)}") from None


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]
