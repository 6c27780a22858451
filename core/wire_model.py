"""The base of the project's pydantic types: a type's validator is built when it is first used.

Every process imports all the wire types (a CLI run, a worker, the UI, a hook) and most use a few;
pydantic builds each type's schema and validator at class creation unless told to defer it, which
cost every short process a good share of its start. Deferred, a type is built on its first
validation or dump, once per process, with the same result.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """A pydantic model whose schema is built on first use (subclasses' own config merges in)."""

    model_config = ConfigDict(defer_build=True)
