"""The one error a bad setting raises, so every entry point reports it the same way."""

from __future__ import annotations


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the variable (or the file and its section)."""
