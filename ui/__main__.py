"""`python -m ui`: serve the approvals inbox with settings from the environment."""

from __future__ import annotations

import logging

from config.settings import Settings
from ui.server import serve

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    serve(Settings())
