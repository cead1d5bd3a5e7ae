"""Booleans as Kubernetes labels, annotations and environment variables carry them: as text."""

from __future__ import annotations

from typing import Final

TRUE: Final = "true"
FALSE: Final = "false"


def text(value: bool) -> str:
    """The text a boolean label, annotation or variable is written with."""
    return TRUE if value else FALSE


def is_on(value: str | None) -> bool:
    """Whether a boolean annotation is on, read as KubeRay reads one: case-insensitively."""
    return (value or "").lower() == TRUE
