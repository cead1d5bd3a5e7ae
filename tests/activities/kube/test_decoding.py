"""Decoding answers: one object nested too deep is cut short, everything else comes back whole."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from activities.kube.decoding import CUT_DEPTH, decode
from activities.kube.errors import KubeUndecodable
from crds.nesting import TOO_DEEP, nesting_violations
from crds.violations import Violation
from tests.deep_objects import nested


def cr(name: str, value: str = '"plain"') -> str:
    """A RayCluster as JSON text, holding `value` in its pod template."""
    return (
        '{"apiVersion":"ray.io/v1","kind":"RayCluster",'
        f'"metadata":{{"name":"{name}","namespace":"ns","uid":"uid-{name}","generation":3}},'
        f'"spec":{{"headGroupSpec":{{"template":{{"spec":{{"x":{value}}}}}}}}},'
        '"status":{"state":"ready"}}'
    )


def cr_list(*items: str) -> str:
    joined = ",".join(items)
    return f'{{"kind":"RayClusterList","metadata":{{"resourceVersion":"42"}},"items":[{joined}]}}'


DEEP = nested(2000)
VIOLATION = Violation("spec.headGroupSpec.template.spec.x.a.a.a…", "nested deeper than 100 levels")


def test_an_answer_json_can_decode_is_plain_json() -> None:
    text = cr_list(cr("a"), cr("b", nested(300)))
    assert decode(text.encode()) == json.loads(text)


def test_a_list_keeps_every_other_item_and_its_version() -> None:
    text = cr_list(cr("before"), cr("deep", DEEP), cr("after"))
    with pytest.raises(RecursionError):
        json.loads(text)
    answer = decode(text.encode())
    assert answer["metadata"] == {"resourceVersion": "42"}
    before, deep, after = answer["items"]
    assert before == json.loads(cr("before")) and after == json.loads(cr("after"))
    assert deep["metadata"] == json.loads(cr("deep"))["metadata"]
    assert deep["status"] == {"state": "ready"}
    assert nesting_violations(deep) == [VIOLATION]


def test_no_part_an_object_may_hold_is_cut() -> None:
    """An object exactly 100 levels deep, beside one too deep, comes back whole."""
    deepest_allowed = cr("ok", nested(100 - 5))  # its template's spec.x is 5 levels down
    assert len(nesting_violations(json.loads(deepest_allowed))) == 0
    answer = decode(cr_list(deepest_allowed, cr("deep", DEEP)))
    assert answer["items"][0] == json.loads(deepest_allowed)


LISTS = Violation("spec.headGroupSpec.template.spec.x[0][0][0]…", VIOLATION.message)


@pytest.mark.parametrize(
    ("text", "violation"),
    [
        pytest.param(cr("deep", DEEP), VIOLATION, id="an-object"),
        pytest.param(
            f'{{"type":"MODIFIED","object":{cr("deep", DEEP)}}}', VIOLATION, id="a-watch-event"
        ),
        pytest.param(cr("deep", "[" * 2000 + "]" * 2000), LISTS, id="lists-of-lists"),
    ],
)
def test_a_deep_object_keeps_its_metadata_and_shows_where_it_was_cut(
    text: str, violation: Violation
) -> None:
    answer = decode(text.encode())
    obj = answer.get("object", answer)
    assert obj["metadata"]["name"] == "deep" and obj["metadata"]["generation"] == 3
    assert nesting_violations(obj) == [violation]


def test_brackets_and_quotes_inside_strings_do_not_move_the_cut() -> None:
    tricky = r'"a \"quoted\" {[ string ]} \\"'
    deep_with_strings = '{"s":' + tricky + ',"a":' + DEEP + "}"
    text = cr_list(cr("deep", deep_with_strings), cr("after", tricky))
    answer = decode(text)
    assert answer["items"][0]["spec"]["headGroupSpec"]["template"]["spec"]["x"]["s"] == (
        json.loads(tricky)
    )
    assert answer["items"][1] == json.loads(cr("after", tricky))


def test_the_cut_parts_are_markers_that_serialise_nowhere() -> None:
    answer = decode(cr("deep", DEEP))
    level: Any = answer["spec"]["headGroupSpec"]["template"]["spec"]["x"]
    depth = 6  # the object is level 1
    while isinstance(level, dict):
        level, depth = level["a"], depth + 1
    assert level is TOO_DEEP and depth == CUT_DEPTH + 1
    with pytest.raises(TypeError):
        json.dumps(answer)


def test_each_cut_object_is_logged_by_kind_namespace_and_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="activities.kube.decoding")
    decode(cr_list(cr("fine"), cr("deep", DEEP)))
    assert caplog.messages == [
        "RayCluster ns/deep nests deeper than 100 levels "
        "(at spec.headGroupSpec.template.spec.x.a.a.a…); decoded without its deeper parts"
    ]


def test_an_empty_answer_is_none() -> None:
    assert decode(b"") is None and decode(b" \n") is None


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"<html>502 Bad Gateway</html>", id="an-error-page"),
        pytest.param(cr_list(cr("cut", DEEP))[:-5].encode(), id="deep-and-cut-off"),
        pytest.param(cr("deep", DEEP).encode().replace(b"ns", b"\xff"), id="deep-and-not-utf-8"),
    ],
)
def test_an_answer_that_is_not_json_is_undecodable(body: bytes) -> None:
    with pytest.raises(KubeUndecodable, match="not JSON"):
        decode(body)
