"""A ray.io object may nest 100 levels and hold 50,000 keys and values; beyond is a violation."""

from __future__ import annotations

import copy
import json
from typing import Any
from unittest.mock import ANY

import pytest

from crds.loading import parse_ray_object
from crds.nesting import (
    MAX_NESTING,
    MAX_NODES,
    TOO_DEEP,
    nesting_violations,
    shown_path,
    size_violations,
)
from crds.violations import InvalidObjectError, Violation
from tests.deep_objects import nested

CLUSTER: dict[str, Any] = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}},
        }
    },
}
TOO_DEEP_MESSAGE = f"nested deeper than {MAX_NESTING} levels"


def with_value(value: Any) -> dict[str, Any]:
    """CLUSTER with `value` in its head pod template; the value starts 5 levels down."""
    doc = copy.deepcopy(CLUSTER)
    doc["spec"]["headGroupSpec"]["template"]["spec"]["x"] = value
    return doc


@pytest.mark.parametrize(
    ("levels", "refused"),
    [
        pytest.param(MAX_NESTING - 5, False, id="100-levels"),
        pytest.param(MAX_NESTING - 4, True, id="101-levels"),
        pytest.param(300, True, id="300-levels"),
    ],
)
def test_parsing_refuses_an_object_deeper_than_the_bound(levels: int, refused: bool) -> None:
    doc = with_value(json.loads(nested(levels)))
    if not refused:
        parse_ray_object(doc)
        return
    with pytest.raises(InvalidObjectError) as caught:
        parse_ray_object(doc)
    path = "spec.headGroupSpec.template.spec.x.a.a.a…"
    assert caught.value.violations == [Violation(path, TOO_DEEP_MESSAGE)]


def test_a_part_a_decoder_left_out_is_too_deep_where_it_sits() -> None:
    doc = with_value({"kept": 1, "cut": TOO_DEEP})
    assert nesting_violations(doc) == [
        Violation("spec.headGroupSpec.template.spec.x.cut", TOO_DEEP_MESSAGE)
    ]


def test_a_few_violations_are_reported_in_path_order() -> None:
    deep = json.loads(nested(150))
    doc = with_value([deep] * 20)
    found = nesting_violations(doc)
    assert [v.path for v in found] == [
        f"spec.headGroupSpec.template.spec.x[{i}].a.a…" for i in range(5)
    ]


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        pytest.param((), "<root>", id="root"),
        pytest.param(("spec", "groups", 0, "name"), "spec.groups[0].name", id="short"),
        pytest.param(("a",) * 9, "a.a.a.a.a.a.a.a…", id="long"),
    ],
)
def test_shown_paths(path: tuple[str | int, ...], shown: str) -> None:
    assert shown_path(path) == shown


def test_scalars_and_shallow_objects_have_no_violations() -> None:
    assert nesting_violations("text") == []
    assert nesting_violations(CLUSTER) == []


# --- size ----------------------------------------------------------------------------------------

TOO_LARGE = (
    f"the object holds more than {MAX_NODES:,} keys and values (metadata.managedFields aside), "
    "more than the controller takes"
)


def with_env(count: int) -> dict[str, Any]:
    """CLUSTER with `count` env vars in its head container: 4 keys and values each."""
    doc = copy.deepcopy(CLUSTER)
    container = doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": f"V{i}", "value": "x"} for i in range(count)]
    return doc


def test_keys_and_values_are_counted_as_the_payloads_count_them() -> None:
    assert size_violations("text", limit=1) == []
    doc = {"a": [1, {"b": None}]}  # {}, a, [], 1, {}, b, None
    assert size_of(doc) == 7
    assert size_violations(doc, limit=7) == []
    assert size_violations(doc, limit=6) == [Violation("<root>", ANY)]


def test_an_object_past_the_bound_is_refused_before_its_models_load() -> None:
    base = size_of(with_env(0))
    fits = (MAX_NODES - base) // 5  # an env var: its item, a mapping of 2 keys and 2 values
    parse_ray_object(with_env(fits))
    with pytest.raises(InvalidObjectError) as caught:
        parse_ray_object(with_env(fits + 1))
    assert caught.value.violations == [Violation("<root>", TOO_LARGE)]


def test_managed_fields_are_not_counted() -> None:
    doc = with_env(0)
    doc["metadata"]["managedFields"] = [{"fieldsV1": {f"f:{i}": {} for i in range(MAX_NODES)}}]
    assert size_violations(doc) == []
    parse_ray_object(doc)


def size_of(doc: Any) -> int:
    """Keys and values, counted the long way."""
    if isinstance(doc, dict):
        return 1 + sum(1 + size_of(value) for value in doc.values())
    if isinstance(doc, list):
        return 1 + sum(size_of(item) for item in doc)
    return 1
