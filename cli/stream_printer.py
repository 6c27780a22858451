"""`watch` prints the reply the model is writing as one labelled block, piece by piece, as it streams.

Other lines (new transcript messages, events) wait while a reply streams and follow once it ends,
so nothing lands mid-reply. If the stream goes quiet for HOLD_SECONDS (a model that stalls, a call
that died), the waiting lines are printed on their own and the reply's label is repeated when it
resumes. A reply joined after its start (its first piece seen has an offset) says so. A retried
model call (a higher attempt) starts a new labelled line, so two attempts never run together. Each
piece goes through shown(), like every other model text.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from cli.output import shown

HOLD_SECONDS = 5.0
JOINED_MARK = "… (joined mid-reply) "


class StreamPrinter:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._call: str | None = None
        self._attempt = 0
        self._open = False  # the current line holds streamed text
        self._streaming = False  # a reply started and has not ended
        self._resumed_label: str | None = None  # printed before the next piece after a break
        self._held: list[str] = []
        self._last_piece = 0.0

    def show(self, delta: dict[str, Any]) -> None:
        call = f"{delta.get('turn_id')}/{delta.get('call_id')}"
        attempt = int(delta.get("attempt") or 1)
        if call != self._call or attempt != self._attempt:
            if call == self._call and attempt < self._attempt:
                return  # a late piece of an attempt already replaced
            self._begin(call, attempt, delta)
        elif self._resumed_label is not None:
            self.end_line()
            self._write(self._resumed_label)
            self._resumed_label, self._streaming = None, True
        self._write(shown(delta.get("text") or "", keep_newlines=True))
        self._last_piece = self._clock()
        if delta.get("done"):
            self._streaming = False
            self._release()
        sys.stdout.flush()

    def say(self, line: str) -> None:
        """A line that is not part of the reply: printed now, or after the reply that streams."""
        if self._streaming:
            self._held.append(line)
            return
        self.end_line()
        print(line, flush=True)

    def release_if_quiet(self) -> None:
        """Waiting lines go out if the reply has been quiet for HOLD_SECONDS; its label comes back
        with its next piece."""
        if self._held and self._clock() - self._last_piece >= HOLD_SECONDS:
            if self._streaming:
                self._resumed_label = "assistant (streaming, continued): "
            self._streaming = False
            self._release()

    def finish(self) -> None:
        self._streaming = False
        self._release()

    def end_line(self) -> None:
        if self._open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._open = False

    def _begin(self, call: str, attempt: int, delta: dict[str, Any]) -> None:
        restarted = call == self._call or delta.get("restarted")
        self.end_line()
        label = f"assistant (restarted, attempt {attempt})" if restarted else "assistant (streaming)"
        joined = JOINED_MARK if int(delta.get("offset") or 0) > 0 else ""
        self._call, self._attempt, self._streaming, self._resumed_label = call, attempt, True, None
        self._write(f"{label}: {joined}")

    def _write(self, text: str) -> None:
        sys.stdout.write(text)
        self._open = True

    def _release(self) -> None:
        self.end_line()
        held, self._held = self._held, []
        for line in held:
            print(line, flush=True)
