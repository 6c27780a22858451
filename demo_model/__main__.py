"""`python -m demo_model`: the scripted demo model on http://127.0.0.1:8100/v1 (OpenAI-compatible)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from demo_model.script import respond
from demo_model.server import ScriptedModelServer


def _logged(body: dict[str, Any]) -> dict[str, Any]:
    """Answer, and say so on stderr: a person watching `make run` sees each model call."""
    reply = respond(body)
    calls = [call["function"]["name"] for call in reply.get("tool_calls") or []]
    what = f"tool calls {', '.join(calls)}" if calls else "a text answer"
    print(f"answered with {what}", file=sys.stderr, flush=True)
    return reply


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m demo_model", description="The scripted demo model.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument(
        "--chunk-delay", type=float, default=0.02, help="seconds between two streamed chunks (a reply grows visibly)"
    )
    args = parser.parse_args(argv)
    server = ScriptedModelServer(_logged, host=args.host, port=args.port, chunk_delay=args.chunk_delay)
    print(f"scripted demo model listening on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
