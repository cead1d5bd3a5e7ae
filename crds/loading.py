"""Turn JSON objects (from YAML files or the API server) into ray.io models.

Loading never raises a pydantic error at a caller: schema problems come back as
`Violation`s with the object's JSON field paths, the same shape the semantic validation rules
produce, so the CLI, the status writer and the Events can all print them the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from crds.common import JSONObject, RayObject
from crds.constants import API_VERSION, GROUP
from crds.messages import quoted
from crds.nesting import nesting_violations, size_violations
from crds.raycluster import RayCluster
from crds.raycronjob import RayCronJob
from crds.rayjob import RayJob
from crds.rayservice import RayService
from crds.redaction import is_secret_path
from crds.violations import InvalidObjectError, Violation, join_path

KIND_MODELS: dict[str, type[RayObject]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}

# Union members show up in pydantic's error locations; they are not part of the field path.
_UNION_TAGS = {"int", "str", "float", "bool", "function-after[...]"}


def is_ray_object(doc: JSONObject) -> bool:
    """Whether a document claims to be in the ray.io group (any version, any kind)."""
    api_version = doc.get("apiVersion")
    return isinstance(api_version, str) and api_version.split("/")[0] == GROUP


def parse_ray_object(doc: Any) -> RayObject:
    """Load one ray.io/v1 object, raising `InvalidObjectError` with every problem found.

    An object too large or nested too deep (`crds.nesting`) is refused before pydantic sees it.
    """
    if not isinstance(doc, dict):
        raise InvalidObjectError([Violation("<root>", "expected a mapping (a Kubernetes object)")])
    too_large = size_violations(doc)
    if too_large:
        raise InvalidObjectError(too_large)
    too_deep = nesting_violations(doc)
    if too_deep:
        raise InvalidObjectError(too_deep)
    header = _header_violations(doc)
    if header:
        raise InvalidObjectError(header)
    model = KIND_MODELS[doc["kind"]]
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        raise InvalidObjectError(violations_from_pydantic(err)) from None


def _header_violations(doc: JSONObject) -> list[Violation]:
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    found: list[Violation] = []
    if api_version != API_VERSION:
        found.append(Violation("apiVersion", f"must be {API_VERSION}, got {quoted(api_version)}"))
    if kind not in KIND_MODELS:
        expected = ", ".join(KIND_MODELS)
        found.append(Violation("kind", f"must be one of {expected}, got {quoted(kind)}"))
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict) or not (metadata.get("name") or metadata.get("generateName")):
        found.append(Violation("metadata.name", "required field is missing"))
    if "spec" not in doc:
        found.append(Violation("spec", "required field is missing"))
    return found


def violations_from_pydantic(err: ValidationError) -> list[Violation]:
    """Translate pydantic's errors into field paths and plain messages, one per field."""
    seen: dict[str, Violation] = {}
    for detail in err.errors():
        loc = [p for p in detail["loc"] if not (isinstance(p, str) and p in _UNION_TAGS)]
        path = join_path(*loc) or "<root>"
        if path not in seen:
            message = _SECRET_MESSAGE if is_secret_path(path) else _message(detail)
            seen[path] = Violation(path, message)
    return sorted(seen.values())


# The message of a malformed secret field would otherwise quote the value into the Events and
# the workflow history (a Redis password written as a bare number, on a store looser than the
# CRD's schema).
_SECRET_MESSAGE = "must be a string (the value is not repeated: the field holds a secret)"


def _message(detail: ErrorDetails) -> str:
    kind, given = detail["type"], detail.get("input")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind == "enum" or kind == "literal_error":
        expected = detail.get("ctx", {}).get("expected", "")
        return f"unsupported value {quoted(given)}: expected {expected}"
    if kind in _TYPE_NAMES:
        wanted = _TYPE_NAMES[kind]
        return f"must be {wanted}, got {type(given).__name__} {quoted(given)}"
    if kind == "timezone_aware":
        return f"must be an RFC 3339 time with a zone, got {quoted(given)}"
    return f"{detail['msg']} (got {quoted(given)})"


_TYPE_NAMES = {
    "bool_type": "a boolean",
    "int_type": "an integer",
    "string_type": "a string",
    "float_type": "a number",
    "dict_type": "a mapping",
    "list_type": "a list",
}
