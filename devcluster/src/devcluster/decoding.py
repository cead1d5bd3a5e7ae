"""Request bodies: parsing, apiVersion/kind checks and unknown-field detection.

The errors are kube-apiserver's, word for word where clients may match on them: a body that
is not JSON, a body for another kind or version, and unknown or duplicate fields under
`fieldValidation=Strict` (a 400) or `Warn` (a `Warning` header).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from devcluster import protobuf, statuses
from devcluster.kinds import Kind
from devcluster.statuses import Cause

JsonObject = dict[str, Any]
_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_YAML_TYPES = ("application/yaml", "application/apply-patch+yaml")


class _Duplicates(dict[str, Any]):
    """A JSON object that remembers keys given twice, for strict decoding."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = _Duplicates()
    out.duplicates = []
    for key, value in pairs:
        if key in out:
            out.duplicates.append(key)
        out[key] = value
    return out


_GO_JSON_CONTEXT = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key "
    "string",
    "Expecting ':' delimiter": "after object key",
    "Expecting ',' delimiter": "after object key:value pair",
    "Extra data": "after top-level value",
}


def _go_json_error(err: json.JSONDecodeError, text: str) -> str:
    """Word a Python JSON error as Go's encoding/json would, which clients may match on."""
    if err.pos >= len(text.rstrip()) or err.msg.startswith("Unterminated"):
        return "unexpected end of JSON input"
    context = _GO_JSON_CONTEXT.get(err.msg, err.msg.lower())
    return f"invalid character '{text[err.pos]}' {context}"


def parse_body(raw: bytes, content_type: str, expected: str) -> Any:
    """Parse a JSON (or YAML) body, raising the 400 kube-apiserver gives for garbage."""
    if content_type.startswith("application/vnd.kubernetes.protobuf"):
        return protobuf.decode(raw, content_type)
    if content_type.startswith("application/cbor"):
        raise statuses.unsupported_media_type(
            content_type, ["application/json", "application/yaml"]
        )
    text = raw.decode("utf-8", errors="replace")
    if content_type in _YAML_TYPES:
        try:
            return json.loads(text, object_pairs_hook=_pairs)
        except json.JSONDecodeError:
            pass
        try:
            return yaml.load(text, Loader=yaml.CSafeLoader)
        except yaml.YAMLError as err:
            raise statuses.bad_request(f"error converting YAML to JSON: {err}") from err
    try:
        return json.loads(text, object_pairs_hook=_pairs)
    except json.JSONDecodeError as err:
        summary = text if len(text) <= 30 else text[:30] + "..."
        raise statuses.bad_request(
            f"the object provided is unrecognized (must be of type {expected}): couldn't get "
            f"version/kind; json parse error: {_go_json_error(err, text)} ({summary})"
        ) from err


def check_type_meta(kind: Kind, body: Any) -> JsonObject:
    """Check that a create or update body is an object of the URL's kind and version."""
    if not isinstance(body, dict):
        raise statuses.bad_request(
            f"the object provided is unrecognized (must be of type {kind.kind}): couldn't get "
            f"version/kind; json parse error: json: cannot unmarshal {_go_type(body)} into Go "
            'value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind '
            'string "json:\\"kind,omitempty\\"" }'
        )
    given_version, given_kind = body.get("apiVersion") or "", body.get("kind") or ""
    if kind.custom and (not given_version or not given_kind):
        missing = "apiVersion" if not given_version else "Kind"
        raise statuses.bad_request(f"Object '{missing}' is missing in '{_summary(body)}'")
    if given_version and given_version != kind.api_version:
        raise statuses.bad_request(
            f"the API version in the data ({given_version}) does not match the expected API "
            f"version ({kind.api_version})"
        )
    if given_kind and given_kind != kind.kind:
        name = (body.get("metadata") or {}).get("name", "")
        if kind.custom:
            detail = f"must be {kind.kind}"
            cause = Cause("FieldValueInvalid", f'Invalid value: "{given_kind}": {detail}', "kind")
            raise statuses.invalid(kind.group, given_kind, name, [cause])
        raise statuses.bad_request(
            f'{given_kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
            f"converting ({kind.version}.{given_kind}) to (core.{kind.kind}): unknown conversion"
        )
    if not isinstance(body.get("metadata", {}), dict):
        raise statuses.bad_request(
            f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
            "json: cannot unmarshal into Go struct field .metadata of type v1.ObjectMeta"
        )
    _check_meta_types(kind, body.get("metadata") or {})
    return body


def _check_meta_types(kind: Kind, meta: JsonObject) -> None:
    """The metadata fields the server reads must decode as Go's ObjectMeta types (else a 400)."""
    for field in ("name", "generateName", "namespace", "labels", "annotations"):
        value = meta.get(field)
        is_map = field in ("labels", "annotations")
        go_type = "map[string]string" if is_map else "string"
        bad = None if value is None or isinstance(value, dict if is_map else str) else value
        if is_map and isinstance(value, dict):
            # A map's values are strings too; Go names the field's element type then.
            bad = next((v for v in value.values() if not isinstance(v, str)), None)
            go_type = "string"
        if bad is not None:
            raise statuses.bad_request(
                f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
                f"json: cannot unmarshal {_go_type(bad)} into Go struct field "
                f"ObjectMeta.metadata.{field} of type {go_type}"
            )


def _go_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else "object"


def _summary(body: JsonObject) -> str:
    return json.dumps(body, separators=(",", ":"))[:200]


def unknown_fields(kind: Kind, body: Any) -> list[str]:
    """Return duplicate and unknown metadata/top-level fields of a built-in kind's body."""
    problems: list[str] = []
    _collect_duplicates(body, "", problems)
    if not isinstance(body, dict):
        return problems
    if kind.top_fields is not None and not kind.custom:
        allowed = kind.top_fields | {"apiVersion", "kind", "metadata"}
        problems.extend(f'unknown field "{k}"' for k in body if k not in allowed)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        problems.extend(f'unknown field "metadata.{k}"' for k in meta if k not in _META_FIELDS)
    return problems


def _collect_duplicates(value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, _Duplicates):
        out.extend(f'duplicate field "{path}{k}"' for k in value.duplicates)
    if isinstance(value, dict):
        for key, child in value.items():
            _collect_duplicates(child, f"{path}{key}.", out)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _collect_duplicates(child, f"{path[:-1]}[{index}].", out)


def strict_error(kind: Kind, problems: list[str]) -> statuses.ApiError:
    """Return the 400 a strict field validation failure gets."""
    return statuses.bad_request(
        f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: strict '
        f"decoding error: {', '.join(problems)}"
    )


def warning_header(problems: list[str]) -> str:
    """Return the `Warning` header value for fieldValidation=Warn."""
    return ", ".join('299 - "' + p.replace('"', '\\"') + '"' for p in problems)
