"""The command line: start conversations, send messages, list and decide approvals.

`python starter.py --help` lists the commands; they live in the cli package.
"""

from __future__ import annotations

from cli.main import main, run

__all__ = ["main"]

if __name__ == "__main__":
    run()
