"""Structural-schema handling of custom resources: defaulting, pruning and type checks.

A CRD's `openAPIV3Schema` is applied the way kube-apiserver applies it: defaults fill missing
fields, fields the schema does not declare are pruned (unless
`x-kubernetes-preserve-unknown-fields`) and reported as unknown for `fieldValidation`, and
values of the wrong type, outside an enum or missing when required become 422 causes.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from devcluster.statuses import Cause
from devcluster.validation import invalid_value

JsonObject = dict[str, Any]
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


@dataclass
class SchemaReport:
    """What applying a schema found: invalid values and pruned unknown fields."""

    causes: list[Cause] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def json_type(value: Any) -> str:
    """Return the OpenAPI type name of a JSON value, as kube-apiserver reports it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def apply_schema(obj: JsonObject, schema: JsonObject) -> SchemaReport:
    """Default, prune and check a custom resource in place."""
    report = SchemaReport()
    properties = schema.get("properties") or {}
    for key in list(obj):
        if key in _ROOT_FIELDS:
            continue
        if key in properties:
            obj[key] = _walk(obj[key], properties[key], key, report)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            report.unknown.append(key)
            del obj[key]
    _default_missing(obj, schema, "", report)
    for name in schema.get("required") or ():
        if name not in obj and name not in _ROOT_FIELDS:
            report.causes.append(Cause("FieldValueRequired", "Required value", name))
    return report


def _walk(value: Any, schema: JsonObject, path: str, report: SchemaReport) -> Any:
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            # A null for a non-nullable field is dropped, as kube-apiserver's pruning does.
            return None
        return value
    if not _type_ok(value, schema):
        expected = schema.get("type")
        detail = f'{path} in body must be of type {expected}: "{json_type(value)}"'
        report.causes.append(invalid_value(path, json_type(value), detail))
        return value
    _check_constraints(value, schema, path, report)
    if isinstance(value, dict):
        return _walk_object(value, schema, path, report)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_walk(v, schema["items"], f"{path}[{i}]", report) for i, v in enumerate(value)]
    return value


def _walk_object(value: JsonObject, schema: JsonObject, path: str, report: SchemaReport) -> Any:
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    embedded = schema.get("x-kubernetes-embedded-resource")
    for key in list(value):
        child = f"{path}.{key}"
        if properties is not None and key in properties:
            value[key] = _walk(value[key], properties[key], child, report)
        elif isinstance(extra, dict):
            value[key] = _walk(value[key], extra, child, report)
        elif embedded and key in _ROOT_FIELDS:
            continue
        elif not schema.get("x-kubernetes-preserve-unknown-fields") and extra is not True:
            report.unknown.append(child)
            del value[key]
    for key in [k for k, v in value.items() if v is None]:
        del value[key]
    _default_missing(value, schema, path, report)
    for name in schema.get("required") or ():
        if name not in value:
            report.causes.append(Cause("FieldValueRequired", "Required value", f"{path}.{name}"))
    return value


def _default_missing(
    value: JsonObject, schema: JsonObject, path: str, report: SchemaReport
) -> None:
    for key, child in (schema.get("properties") or {}).items():
        if key not in value and "default" in child:
            value[key] = _walk(
                copy.deepcopy(child["default"]), child, f"{path}.{key}".lstrip("."), report
            )


def _type_ok(value: Any, schema: JsonObject) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    expected = schema.get("type")
    if not expected:
        return True
    actual = json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


def _check_constraints(value: Any, schema: JsonObject, path: str, report: SchemaReport) -> None:
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in schema["enum"])
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        report.causes.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {shown}: supported values: {allowed}",
                path,
            )
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            detail = f"{path} in body should be greater than or equal to {schema['minimum']}"
            report.causes.append(invalid_value(path, value, detail))
        if "maximum" in schema and value > schema["maximum"]:
            detail = f"{path} in body should be less than or equal to {schema['maximum']}"
            report.causes.append(invalid_value(path, value, detail))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            report.causes.append(
                Cause(
                    "FieldValueTooLong",
                    f"Too long: may not be more than {schema['maxLength']} bytes",
                    path,
                )
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            detail = f"{path} in body should be at least {schema['minLength']} chars long"
            report.causes.append(invalid_value(path, value, detail))
        pattern = schema.get("pattern")
        if pattern and not _pattern_matches(pattern, value):
            detail = f"{path} in body should match '{pattern}'"
            report.causes.append(invalid_value(path, value, detail))


def _pattern_matches(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        # ECMA-262 syntax Python cannot compile: do not reject what a real server may accept.
        return True
