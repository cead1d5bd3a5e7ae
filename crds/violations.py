"""What a validation finding looks like: a field path and a plain message."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from crds.messages import clipped

MAX_REPORTED = 20
"""Violations a status, an Event or a workflow's history carries; the rest are counted."""
REPORTED_LENGTH = 1024
"""Bytes of one reported violation."""


@dataclass(frozen=True, order=True)
class Violation:
    """One reason an object is invalid.

    `path` uses the object's JSON names, as kubectl and KubeRay's webhook print them, e.g.
    `spec.workerGroupSpecs[0].minReplicas`.
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class InvalidObjectError(ValueError):
    """An object failed validation; carries every violation found, not only the first."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("; ".join(str(v) for v in violations))


def join_path(*parts: str | int) -> str:
    """Build `a.b[0].c` from ("a", "b", 0, "c")."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = part
    return out


def reported(violations: Iterable[Violation | str]) -> list[str]:
    """The violations as they are reported: the first 20, each clipped to 1 KiB.

    A CR can break a rule thousands of times (once per worker group, say); the first ones say
    what to fix, and the list goes into the workflow's history, where a payload has a size
    limit, and into a status and an Event. The last one kept says how many were left out.
    """
    texts = [str(violation) for violation in violations]
    shown = [clipped(text, REPORTED_LENGTH) for text in texts[:MAX_REPORTED]]
    if len(texts) > MAX_REPORTED:
        shown[-1] += f" (and {len(texts) - MAX_REPORTED} more violations)"
    return shown
