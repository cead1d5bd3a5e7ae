r"""Decoding of Kubernetes protobuf request bodies, for the kinds kubectl's generators send.

kubectl's typed commands (`kubectl create namespace|configmap|secret|serviceaccount`) send
`application/vnd.kubernetes.protobuf`: the `k8s\0` magic, then a `runtime.Unknown` wrapping
the object's own message. Protobuf carries field numbers, not names, so each kind needs its
field table; devcluster has tables for those kinds only and answers 415 for any other, as a
server does for a kind without protobuf support. Responses are always JSON, which
client-go accepts whatever it asked for.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from devcluster import statuses

JsonObject = dict[str, Any]
MAGIC = b"k8s\x00"
# field number -> (JSON name, wire kind, repeated); wire kinds name how to decode the value.
Fields = dict[int, tuple[str, str, bool]]
_OWNER_REF: Fields = {
    1: ("kind", "string", False),
    3: ("name", "string", False),
    4: ("uid", "string", False),
    5: ("apiVersion", "string", False),
    6: ("controller", "bool", False),
    7: ("blockOwnerDeletion", "bool", False),
}
_META: Fields = {
    1: ("name", "string", False),
    2: ("generateName", "string", False),
    3: ("namespace", "string", False),
    5: ("uid", "string", False),
    6: ("resourceVersion", "string", False),
    7: ("generation", "int", False),
    8: ("creationTimestamp", "time", False),
    11: ("labels", "map", False),
    12: ("annotations", "map", False),
    13: ("ownerReferences", "ownerref", True),
    14: ("finalizers", "string", True),
}
_KINDS: dict[str, Fields] = {
    "ConfigMap": {
        1: ("metadata", "meta", False),
        2: ("data", "map", False),
        3: ("binaryData", "bytesmap", False),
        4: ("immutable", "bool", False),
    },
    "Secret": {
        1: ("metadata", "meta", False),
        2: ("data", "bytesmap", False),
        3: ("type", "string", False),
        4: ("stringData", "map", False),
        5: ("immutable", "bool", False),
    },
    "Namespace": {1: ("metadata", "meta", False), 2: ("spec", "nsspec", False)},
    "ServiceAccount": {
        1: ("metadata", "meta", False),
        3: ("imagePullSecrets", "localref", True),
        4: ("automountServiceAccountToken", "bool", False),
    },
}
_SUBMESSAGES: dict[str, Fields] = {
    "meta": _META,
    "ownerref": _OWNER_REF,
    "nsspec": {1: ("finalizers", "string", True)},
    "localref": {1: ("name", "string", False)},
    "typemeta": {1: ("apiVersion", "string", False), 2: ("kind", "string", False)},
    "unknown": {1: ("typeMeta", "typemeta", False), 2: ("raw", "raw", False)},
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            out.append((number, data[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _value(kind: str, raw: int | bytes) -> Any:
    if kind == "int":
        return raw
    if kind == "bool":
        return bool(raw)
    assert isinstance(raw, bytes)
    if kind == "string":
        return raw.decode()
    if kind == "raw":
        return raw
    if kind == "time":
        seconds = dict(_fields(raw)).get(1, 0)
        assert isinstance(seconds, int)
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind in ("map", "bytesmap"):
        entry = dict(_fields(raw))
        key, value = entry.get(1, b""), entry.get(2, b"")
        assert isinstance(key, bytes) and isinstance(value, bytes)
        shown = base64.b64encode(value).decode() if kind == "bytesmap" else value.decode()
        return key.decode(), shown
    return _message(raw, _SUBMESSAGES[kind])


def _message(data: bytes, table: Fields) -> JsonObject:
    out: JsonObject = {}
    for number, raw in _fields(data):
        if number not in table:
            continue
        name, kind, repeated = table[number]
        value = _value(kind, raw)
        if kind in ("string", "int") and not repeated and not value:
            continue  # Go writes zero values; JSON's omitempty leaves them out
        if kind in ("map", "bytesmap"):
            out.setdefault(name, {})[value[0]] = value[1]
        elif repeated:
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


def decode(body: bytes, content_type: str) -> JsonObject:
    """Return the JSON form of a protobuf-encoded object, or raise 415 if it cannot."""
    unsupported = statuses.unsupported_media_type(
        content_type, ["application/json", "application/yaml"]
    )
    if not body.startswith(MAGIC):
        raise unsupported
    try:
        unknown = _message(body[len(MAGIC) :], _SUBMESSAGES["unknown"])
        type_meta = unknown.get("typeMeta", {})
        table = _KINDS.get(type_meta.get("kind", ""))
        if table is None:
            raise unsupported
        obj = _message(unknown.get("raw", b""), table)
    except (ValueError, IndexError, UnicodeDecodeError) as err:
        raise statuses.bad_request(f"unable to decode protobuf body: {err}") from err
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": type_meta["kind"], **obj}
