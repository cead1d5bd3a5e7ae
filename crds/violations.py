"""What a validation finding looks like: a field path and a plain message."""

from __future__ import annotations

from dataclasses import dataclass


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
