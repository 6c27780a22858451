"""Exit statuses of the CLI and the one error type that carries them."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILED = 1  # could not do it: Temporal unreachable, the UI missing, ...
EXIT_USAGE = 2  # bad usage: a missing argument, an unknown command, a bad setting
EXIT_REFUSED = 3  # refused: unknown request or conversation, already decided, other conversation


class CliError(Exception):
    """Ends a command with one line on stderr and an exit status."""

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def refused(message: str) -> CliError:
    return CliError(message, EXIT_REFUSED)


async def paged(read: Awaitable[T]) -> T:
    """A page read; a cursor that no page handed out is bad usage (exit 2)."""
    from storage.reader import BadCursor

    try:
        return await read
    except BadCursor as err:
        raise CliError(str(err), EXIT_USAGE) from None
