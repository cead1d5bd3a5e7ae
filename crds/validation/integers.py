"""Integer fields hold what KubeRay's Go types hold: an int32 is at most 2147483647.

KubeRay's CRDs give every integer field its Go width (`format: int32`), and the API server
refuses a value out of range; so do ours (`crds.common.GoInt`). An object can still arrive
without passing such a schema: a manifest checked with `kuberay-temporal validate`, a CR stored
under an older CRD. Out of range, these numbers are seconds that no clock can reach and counts
no cluster can hold, and the workflows would compute deadlines and sizes from them. So every
field the models declare as a Go integer is checked here, wherever it is nested, with its path.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import BaseModel

from crds.common import GoInt
from crds.messages import quoted
from crds.validation.scope import key_path
from crds.violations import Violation, join_path


def integer_violations(model: BaseModel, path: str = "") -> list[Violation]:
    """Every Go-integer field of `model` and of the models inside it that is out of range."""
    found: list[Violation] = []
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if value is None:
            continue
        here = join_path(path, field.alias or name) if path else (field.alias or name)
        width = _go_int(field.annotation, field.metadata)
        if width is not None and isinstance(value, int) and not width.low <= value <= width.high:
            found.append(Violation(here, _out_of_range(width, value)))
        found += _nested(value, here)
    return found


def _nested(value: Any, path: str) -> list[Violation]:
    """The violations inside a nested model, or inside the models of a list or map."""
    if isinstance(value, BaseModel):
        return integer_violations(value, path)
    found: list[Violation] = []
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, BaseModel):
                found += integer_violations(item, join_path(path, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, BaseModel):
                found += integer_violations(item, key_path(path, str(key)))
    return found


def _go_int(annotation: Any, metadata: list[Any]) -> GoInt | None:
    """The `GoInt` a field is declared with, directly or inside `X | None`."""
    for item in metadata:
        if isinstance(item, GoInt):
            return item
    if typing.get_origin(annotation) is Annotated:
        return _go_int(None, list(annotation.__metadata__))
    for argument in typing.get_args(annotation):
        found = _go_int(argument, [])
        if found is not None:
            return found
    return None


def _out_of_range(width: GoInt, value: int) -> str:
    return (
        f"must be between {width.low} and {width.high}: the field is an int{width.bits} in "
        f"KubeRay's API (got {quoted(value)})"
    )
