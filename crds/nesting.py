"""How deeply a ray.io object may nest and how much it may hold, and where one goes beyond.

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

Size is bounded the same way, by `MAX_NODES`: the API server takes objects up to 1.5 MiB, which
can hold 800,000 keys and values, and what the worker does with one costs per node: loading the
models, redacting and encoding the spec for the workflow, decoding it there and validating it,
in the workflow task, on every pass. Counting stops at the bound, so an object too large costs
no more to refuse than one at the bound costs to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from crds.violations import Violation, join_path

MAX_NESTING: Final = 100
"""The deepest an object may nest, in levels of mappings and lists; the object is level 1."""

MAX_NODES: Final = 50_000
"""The most keys and values an object may hold (`metadata.managedFields` aside: no model reads
it, and a server-side apply makes it as large as the spec).

The largest of KubeRay's samples (`ray-cluster.tls.yaml`) holds 337, its worker group 154; a
RayCluster of 100 worker groups each twice that size holds about 31,000. At 50,000, reading a
RayJob (decoding, loading the models, redacting and encoding its spec) takes about 0.1 s of
the activity's event loop, and the workflow task's share is under 0.05 s
(`benchmarks/payload_bounds.py`). Without it, a 1.5 MiB RayJob of 786,000 keys and values
(small lists in a pod template, which keeps unknown fields) took 1.8 s of the event loop and
0.2 s of a workflow task, and one of 8,000 worker groups made a spec of 2.5 MiB, more than a
Temporal payload may be."""

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


def size_violations(doc: Any, limit: int = MAX_NODES) -> list[Violation]:
    """A violation if `doc` holds more than `limit` keys and values, counted up to the bound.

    Every key counts, and every value (scalars, lists and mappings alike), the whole object
    as one; `metadata.managedFields` does not.
    """
    nodes = 1
    pending: list[Any] = [doc]
    metadata: object = doc.get("metadata") if isinstance(doc, dict) else None
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            nodes += 2 * len(value)
            if value is metadata and "managedFields" in value:
                nodes -= 2  # its key and its value, and nothing below
                pending += [child for key, child in value.items() if key != "managedFields"]
            else:
                pending += value.values()
        elif isinstance(value, list):
            nodes += len(value)
            pending += value
        if nodes > limit:
            message = (
                f"the object holds more than {limit:,} keys and values (metadata.managedFields "
                "aside), more than the controller takes"
            )
            return [Violation("<root>", message)]
    return []


def shown_path(path: Sequence[str | int]) -> str:
    """A field path as violations print it, cut short after a few segments."""
    shown = join_path(*path[:_SHOWN_SEGMENTS]) or "<root>"
    return shown + "…" if len(path) > _SHOWN_SEGMENTS else shown
