"""`watch` prints the reply the model is writing, piece by piece on one line, as it streams.

A retried model call (a higher attempt) starts a new line that says so, so the pieces of two
attempts never run together. Each piece goes through shown(), like every other model text.
"""

from __future__ import annotations

import sys
from typing import Any

from cli.output import shown


class StreamPrinter:
    def __init__(self) -> None:
        self._call: str | None = None
        self._attempt = 0
        self._open = False

    def show(self, delta: dict[str, Any]) -> None:
        call = f"{delta.get('turn_id')}/{delta.get('call_id')}"
        attempt = int(delta.get("attempt") or 1)
        if call != self._call or attempt != self._attempt:
            if call == self._call and attempt < self._attempt:
                return  # a late piece of an attempt already replaced
            restarted = call == self._call or delta.get("restarted")
            self.end_line()
            label = f"assistant (restarted, attempt {attempt})" if restarted else "assistant (streaming)"
            sys.stdout.write(f"{label}: ")
            self._call, self._attempt, self._open = call, attempt, True
        sys.stdout.write(shown(delta.get("text") or "", keep_newlines=True))
        if delta.get("done"):
            self.end_line()
        sys.stdout.flush()

    def end_line(self) -> None:
        if self._open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._open = False
