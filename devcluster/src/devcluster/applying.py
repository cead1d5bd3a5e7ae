"""Server-side apply, enough for `kubectl apply --server-side`.

A real server tracks ownership per field and per manager and reports conflicts between
managers. devcluster keeps the part clients observe for a single manager: the applied
configuration is merged into the live object (lists by their merge keys), fields the same
manager applied last time and no longer applies are removed, and the manager's field set is
recorded in `managedFields`. Conflicts between managers are not detected.
"""

from __future__ import annotations

import copy
from typing import Any

from devcluster import lifecycle, patching, statuses
from devcluster.kinds import Kind

JsonObject = dict[str, Any]
_IGNORED_META = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields")


def as_created(kind: Kind, body: Any, name: str, manager: str) -> JsonObject:
    """Return the object an apply creates when nothing exists yet, owned by `manager`."""
    if not isinstance(body, dict):
        raise statuses.bad_request("the apply configuration must be an object")
    out = copy.deepcopy(body)
    meta = out.setdefault("metadata", {})
    meta.setdefault("name", name)
    if meta.get("name") != name:
        raise statuses.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    meta["managedFields"] = [_entry(kind, manager, field_set(out))]
    return out


def _entry(kind: Kind, manager: str, fields: JsonObject) -> JsonObject:
    return {
        "manager": manager or "unknown",
        "operation": "Apply",
        "apiVersion": kind.api_version,
        "time": lifecycle.now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def field_set(config: Any) -> JsonObject:
    """Return the FieldsV1-style set of the fields a configuration sets (lists are atomic)."""
    if not isinstance(config, dict):
        return {}
    return {f"f:{k}": field_set(v) for k, v in config.items() if k not in ("apiVersion", "kind")}


def _remove_dropped(obj: JsonObject, previous: JsonObject, current: JsonObject) -> None:
    for key, children in previous.items():
        name = key[2:]
        if key not in current:
            obj.pop(name, None)
        elif children and isinstance(obj.get(name), dict):
            _remove_dropped(obj[name], children, current[key])


def apply(kind: Kind, live: JsonObject, config: Any, manager: str) -> JsonObject:
    """Return the live object with an applied configuration merged in."""
    if not isinstance(config, dict):
        raise statuses.bad_request("the apply configuration must be an object")
    manager = manager or "unknown"
    config = copy.deepcopy(config)
    for key in _IGNORED_META:
        config.get("metadata", {}).pop(key, None)
    merged: JsonObject = patching.strategic_merge(live, config, kind.merge_keys)
    entries = list(live["metadata"].get("managedFields") or [])
    previous = next(
        (e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), None
    )
    current = field_set(config)
    if previous is not None:
        _remove_dropped(merged, previous.get("fieldsV1") or {}, current)
        entries.remove(previous)
    entries.append(_entry(kind, manager, current))
    merged.setdefault("metadata", {})["managedFields"] = entries
    return merged
