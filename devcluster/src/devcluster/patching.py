"""The three patch formats kube-apiserver accepts: JSON merge, JSON patch and strategic merge.

Strategic merge needs to know which lists merge by key. Those keys come from the kind's row
(`Kind.merge_keys`), keyed by the trailing path of the list, so a pod template merges the same
way in a Pod, a Deployment or a Job. Custom resources have no strategic merge (415), as on a
real server. The `$patch`, `$retainKeys`, `$setElementOrder/` and `$deleteFromPrimitiveList/`
directives kubectl emits for client-side apply are honoured.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from devcluster import statuses

JsonObject = dict[str, Any]
MergeKeys = Mapping[tuple[str, ...], str]

_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch and return the result."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def json_patch(target: JsonObject, operations: Any) -> JsonObject:
    """Apply an RFC 6902 JSON patch, raising the errors kube-apiserver gives."""
    if not isinstance(operations, list):
        raise statuses.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    doc: Any = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op:
            raise statuses.ApiError(500, "InternalError", "Unexpected kind: <nil>")
        doc = _apply_operation(doc, op)
    if not isinstance(doc, dict):
        raise statuses.bad_request("the patched object is not a JSON object")
    return doc


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise statuses.ApiError(500, "InternalError", f"JSON pointer must start with '/': {path}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _resolve(doc: Any, parts: list[str], op: str, path: str) -> Any:
    node = doc
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            message = f'{op} operation does not apply: doc is missing path: "{path}"'
            raise statuses.ApiError(500, "InternalError", message)
    return node


def _apply_operation(doc: Any, op: JsonObject) -> Any:
    kind, path = op["op"], op.get("path", "")
    if kind in ("move", "copy"):
        value = copy.deepcopy(_resolve(doc, _pointer(op.get("from", "")), kind, op.get("from", "")))
        if kind == "move":
            doc = _apply_operation(doc, {"op": "remove", "path": op.get("from", "")})
        return _apply_operation(doc, {"op": "add", "path": path, "value": value})
    parts = _pointer(path)
    if kind == "test":
        if _resolve(doc, parts, kind, path) != op.get("value"):
            raise statuses.ApiError(
                500, "InternalError", f"testing value {path} failed: test failed"
            )
        return doc
    if not parts:
        return copy.deepcopy(op.get("value")) if kind in ("add", "replace") else doc
    parent = _resolve(doc, parts[:-1], kind, path)
    last = parts[-1]
    if kind not in ("add", "remove", "replace"):
        raise statuses.ApiError(500, "InternalError", f"Unexpected kind: {kind}")
    if isinstance(parent, list):
        _list_operation(parent, last, kind, op, path)
    elif isinstance(parent, dict):
        # kube-apiserver's json-patch (evanphx v4) lets `replace` set a missing object key, and
        # clients rely on it: the Ray autoscaler replaces `scaleStrategy` whether or not the
        # RayCluster has one. Only `remove` needs the key.
        if kind == "remove" and last not in parent:
            message = f"Unable to remove nonexistent key: {last}: missing value"
            raise statuses.ApiError(500, "InternalError", message)
        if kind == "remove":
            del parent[last]
        else:
            parent[last] = copy.deepcopy(op.get("value"))
    else:
        raise statuses.ApiError(500, "InternalError", f"{kind} operation does not apply: {path}")
    return doc


def _list_operation(items: list[Any], last: str, kind: str, op: JsonObject, path: str) -> None:
    index = len(items) if last == "-" else int(last) if last.isdigit() else -1
    limit = len(items) if kind == "add" else len(items) - 1
    if index < 0 or index > limit:
        message = f"{kind} operation does not apply: index out of range: {path}"
        raise statuses.ApiError(500, "InternalError", message)
    if kind == "add":
        items.insert(index, copy.deepcopy(op.get("value")))
    elif kind == "remove":
        del items[index]
    else:
        items[index] = copy.deepcopy(op.get("value"))


def strategic_merge(target: Any, patch: Any, keys: MergeKeys, path: tuple[str, ...] = ()) -> Any:
    """Apply a strategic merge patch whose list merge keys are given by trailing path."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return _strip_directives(copy.deepcopy(patch))
    if patch.get("$patch") == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != "$patch"})
    if patch.get("$patch") == "delete":
        return None
    out = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, keys, (*path, key))
        else:
            merged = strategic_merge(out.get(key), value, keys, (*path, key))
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVE) and isinstance(
            out.get(key[len(_DELETE_PRIMITIVE) :]), list
        ):
            field = key[len(_DELETE_PRIMITIVE) :]
            out[field] = [v for v in out[field] if v not in value]
        elif key.startswith(_ORDER) and isinstance(value, list):
            field = key[len(_ORDER) :]
            if isinstance(out.get(field), list):
                out[field] = _reorder(out[field], value, _merge_key(keys, (*path, field)))
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_key(keys: MergeKeys, path: tuple[str, ...]) -> str | None:
    # The longest trailing path wins: ("containers", "ports") over ("ports",).
    for size in range(len(path), 0, -1):
        key = keys.get(path[-size:])
        if key is not None:
            return key
    return None


def _merge_list(target: Any, patch: list[Any], keys: MergeKeys, path: tuple[str, ...]) -> Any:
    key = _merge_key(keys, path)
    current = target if isinstance(target, list) else []
    if key is None:
        return _strip_directives(copy.deepcopy(patch))
    if key == "":
        return current + [v for v in patch if v not in current]
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return _strip_directives([p for p in patch if not (isinstance(p, dict) and "$patch" in p)])
    out = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(_strip_directives(copy.deepcopy(item)))
            continue
        index = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]), None
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
        elif index is None:
            out.append(_strip_directives(copy.deepcopy(item)))
        else:
            out[index] = strategic_merge(out[index], item, keys, path)
    return out


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def identity(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [identity(o) for o in order]
    ranked = [i for w in wanted for i in items if identity(i) == w]
    return ranked + [i for i in items if identity(i) not in wanted]


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not k.startswith("$") and v is not None
        }
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value
