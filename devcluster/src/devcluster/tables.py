"""Server-side printing: the `meta.k8s.io/v1` Table `kubectl get` asks for.

kubectl renders whatever columns the server returns, so the printer columns of a kind's row
(CRD `additionalPrinterColumns` or the built-in table) are evaluated here with the small
JSONPath subset those columns use: fields, indexes, `[*]` and `[?(@.k=="v")]` filters. Pods
are the exception: their columns are computed as kube-apiserver's pod printer does
(`pod_table`).
"""

from __future__ import annotations

import re
from typing import Any

from devcluster.ages import human_age
from devcluster.kinds import Column, Kind
from devcluster.pod_table import pod_cells

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
        pod = not kind.group and kind.plural == "pods"
        row: JsonObject = {"cells": pod_cells(obj) if pod else [cell(c, obj) for c in columns]}
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
