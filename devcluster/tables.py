"""Server-side printing: the `meta.k8s.io/v1` Table `kubectl get` asks for.

kubectl renders whatever columns the server returns, so the printer columns of a kind's row
(CRD `additionalPrinterColumns` or the built-in table) are evaluated here with the small
JSONPath subset those columns use: fields, indexes, `[*]` and `[?(@.k=="v")]` filters.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from devcluster.kinds import Column, Kind

JsonObject = dict[str, Any]
_TOKEN = re.compile(
    r"\.([^.\[\]]+)|\[(\*|\d+)\]|\[\?\(@\.([^=!<>]+?)\s*==\s*[\"']?([^\"')]*)[\"']?\)\]"
)


def evaluate(path: str, obj: Any) -> list[Any]:
    """Return every value a JSONPath of the printer-column subset selects."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    nodes: list[Any] = [obj]
    for match in _TOKEN.finditer(path):
        field, index, filter_key, filter_value = match.groups()
        found: list[Any] = []
        for node in nodes:
            if field is not None and isinstance(node, dict) and field in node:
                found.append(node[field])
            elif index == "*" and isinstance(node, list):
                found.extend(node)
            elif index is not None and index != "*" and isinstance(node, list):
                if int(index) < len(node):
                    found.append(node[int(index)])
            elif filter_key is not None and isinstance(node, list):
                found.extend(
                    item
                    for item in node
                    if isinstance(item, dict) and str(item.get(filter_key)) == filter_value
                )
        nodes = found
    return nodes


def cell(column: Column, obj: JsonObject) -> Any:
    """Return one table cell, as kube-apiserver's column printer does."""
    if column.format == "name" and not column.json_path:
        return obj.get("metadata", {}).get("name", "")
    values = [v for v in evaluate(column.json_path, obj) if v is not None]
    if not values:
        return None
    if column.type == "date" and isinstance(values[0], str):
        return human_age(values[0])
    if len(values) == 1:
        value = values[0]
        return value if not isinstance(value, (dict, list)) else _flatten(value)
    return ",".join(_flatten(v) for v in values)


def human_age(timestamp: str, now: datetime | None = None) -> str:
    """Return how long ago a timestamp was, in kubectl's `5m`/`3h12m`/`2d` style."""
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return timestamp
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < -1:
        return "<invalid>"
    seconds = max(seconds, 0)
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    steps = (
        (seconds < 120, f"{seconds}s"),
        (minutes < 10, _pair(minutes, "m", seconds % 60, "s")),
        (minutes < 180, f"{minutes}m"),
        (hours < 8, _pair(hours, "h", minutes % 60, "m")),
        (hours < 48, f"{hours}h"),
        (hours < 192, _pair(days, "d", hours % 24, "h")),
        (hours < 24 * 730, f"{days}d"),
        (hours < 24 * 2920, _pair(days // 365, "y", days % 365, "d")),
    )
    return next((text for fits, text in steps if fits), f"{days // 365}y")


def _pair(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" + (f"{small}{small_unit}" if small else "")


def _flatten(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def row_object(obj: JsonObject, include: str) -> JsonObject | None:
    """Return what a row carries: nothing, the metadata only (default) or the object."""
    if include == "None":
        return None
    if include == "Object":
        return obj
    return partial_metadata(obj)


def partial_metadata(obj: JsonObject) -> JsonObject:
    """Return the PartialObjectMetadata form of an object."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(kind: Kind, objects: list[JsonObject], list_meta: JsonObject, include: str) -> JsonObject:
    """Return a Table of objects with the kind's printer columns."""
    columns = kind.printer_columns
    rows = []
    for obj in objects:
        row: JsonObject = {"cells": [cell(c, obj) for c in columns]}
        if (carried := row_object(obj, include)) is not None:
            row["object"] = carried
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [c.definition() for c in columns],
        "rows": rows,
    }
