"""The Temporal server settings this project asks of a server it starts (and recommends for one it
does not): the history service's queue readers, which carry a request's decision to its caller.

A child workflow's result and a Nexus operation's completion reach the caller through the history
service's transfer and outbound queues. Temporal reads each queue at most 20 times a second per
shard by default, so a completion that lands just after a read waits for the next one: up to
50 ms on a dev server's single shard (measured: a bare parent's task picked up 50 ms after its
child closed, 3 ms with these values). A reader only reads when a task is written, so the higher
rate costs nothing while the server is idle.
"""

from __future__ import annotations

QUEUE_READER_POLLS_PER_SECOND = 1000

DYNAMIC_CONFIG: dict[str, int] = {
    "history.transferProcessorMaxPollRPS": QUEUE_READER_POLLS_PER_SECOND,
    "history.outboundProcessorMaxPollRPS": QUEUE_READER_POLLS_PER_SECOND,
}


def dev_server_args() -> list[str]:
    """`temporal server start-dev` flags that set them."""
    args: list[str] = []
    for key, value in DYNAMIC_CONFIG.items():
        args += ["--dynamic-config-value", f"{key}={value}"]
    return args
