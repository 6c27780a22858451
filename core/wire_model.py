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


def wire_models() -> list[type[WireModel]]:
    """Every subclass of WireModel defined so far, at any depth."""
    found: list[type[WireModel]] = []
    pending = WireModel.__subclasses__()
    while pending:
        model = pending.pop()
        found.append(model)
        pending.extend(model.__subclasses__())
    return found


def build_deferred_models() -> None:
    """Build every deferred model now.

    A process that runs workflows calls this before it takes work: a type first used inside a
    workflow activation (a query's answer, a signal's input) would otherwise be built there, and
    the build counts against the SDK's two-second deadlock timer on a loaded machine."""
    for model in wire_models():
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
