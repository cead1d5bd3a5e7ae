"""A ray.io object may nest 100 levels; deeper is a violation at the path where it goes too deep."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from crds.loading import parse_ray_object
from crds.nesting import MAX_NESTING, TOO_DEEP, nesting_violations, shown_path
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
