"""The command line: start conversations, send messages, list and decide approvals."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("usage: python starter.py COMMAND ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
