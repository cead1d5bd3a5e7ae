"""How deeply a ray.io object may nest, and where one nests deeper.

The API server accepts JSON nested up to 10,000 levels (the limit of Go's encoding/json), and
the parts of a CR that keep unknown fields (pod templates, Services) take anything. The worker
cannot carry that: a CR's spec travels to its workflow in a Temporal payload, and pydantic's
JSON parser stops at 200 levels of the whole payload, its serialiser a little deeper, Python's
`json` near 1,000 (and it raises `RecursionError`, which no parse-error handler expects). An
object that nests deeper than `MAX_NESTING` is therefore invalid here, like any other schema
violation, and is reported with the path where it goes too deep. Real objects come nowhere
near: the deepest pod-template field of a RayService is about 15 levels down.

Answers too deep to decode at all come from `activities.kube.decoding` with the parts below the
bound replaced by `TOO_DEEP`; those are reported the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from crds.violations import Violation, join_path

MAX_NESTING: Final = 100
"""The deepest an object may nest, in levels of mappings and lists; the object is level 1."""

_REPORTED: Final = 5
"""Violations reported per object: enough to show where, short enough for an Event."""

_SHOWN_SEGMENTS: Final = 8
"""Path segments shown before an ellipsis: a path 100 levels deep says nothing more."""


class TooDeep:
    """Stands for a part of an object left out because it nests deeper than `MAX_NESTING`.

    Deliberately not JSON: json, pydantic and Temporal's payload converter all refuse to
    serialise it, so nothing can pass a partly decoded object on as if it were whole.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<nested deeper than {MAX_NESTING} levels>"


TOO_DEEP: Final = TooDeep()


def nesting_violations(doc: Any, limit: int = MAX_NESTING) -> list[Violation]:
    """Where `doc` nests deeper than `limit` levels, or holds a part left out as too deep.

    The walk keeps its own stack, so it is safe on any depth a decoder could produce.
    """
    found: list[Violation] = []
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while pending and len(found) < _REPORTED:
        value, path = pending.pop()
        if value is TOO_DEEP or len(path) >= limit:
            found.append(Violation(shown_path(path), f"nested deeper than {limit} levels"))
            continue
        children: Sequence[tuple[str | int, Any]]
        if isinstance(value, dict):
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        else:
            continue
        pending += [
            (child, (*path, key))
            for key, child in reversed(children)
            if isinstance(child, dict | list) or child is TOO_DEEP
        ]
    return sorted(found)


def shown_path(path: Sequence[str | int]) -> str:
    """A field path as violations print it, cut short after a few segments."""
    shown = join_path(*path[:_SHOWN_SEGMENTS]) or "<root>"
    return shown + "…" if len(path) > _SHOWN_SEGMENTS else shown
