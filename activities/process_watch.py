"""How a worker learns that a tool's process (or a stdio MCP server) ended.

Python 3.11's asyncio waits for each child on a thread of its own, blocked in `waitpid`: starting
a process costs a new thread (about 1 ms on this project's bench machine, more on busy cores), and
every running tool holds one. Python 3.12 watches children through a pidfd on the event loop where
the kernel has them; a 3.11 worker is given the same at start.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings


def watch_children_by_pidfd() -> bool:
    """Make the running event loop watch child processes through pidfds (call it from the worker's
    main coroutine); False (threads, as before) on Python 3.12 and later (already so), or where the
    kernel or a seccomp profile refuses pidfds."""
    if sys.version_info >= (3, 12):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    watcher = asyncio.PidfdChildWatcher()
    watcher.attach_loop(asyncio.get_running_loop())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_child_watcher(watcher)
    return True
