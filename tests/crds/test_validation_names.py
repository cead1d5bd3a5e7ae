"""Name rules: object-name limits and syntax, managedBy values, label syntax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.crds.test_validation_support import (
    DELETE,
    Edits,
    Expected,
    check,
    edited,
    raycluster,
    raycronjob,
    rayjob,
    rayservice,
)

Builder = Callable[[], dict[str, Any]]


@pytest.mark.parametrize(
    ("build", "name", "expected", "phrase"),
    [
        pytest.param(raycluster, "c" * 53, None, None, id="raycluster-53-ok"),
        pytest.param(raycluster, "c" * 54, "metadata.name", "at most 53", id="raycluster-54"),
        pytest.param(rayjob, "j" * 47, None, None, id="rayjob-47-ok"),
        pytest.param(
            rayjob,
            "j" * 48,
            "metadata.name",
            "a RayJob name must be at most 47 characters (got 48): "
            "KubeRay appends a 6-character suffix for its RayCluster",
            id="rayjob-48",
        ),
        pytest.param(rayservice, "s" * 47, None, None, id="rayservice-47-ok"),
        pytest.param(rayservice, "s" * 48, "metadata.name", "at most 47", id="rayservice-48"),
        pytest.param(raycronjob, "r" * 36, None, None, id="raycronjob-36-ok"),
        pytest.param(
            raycronjob,
            "r" * 37,
            "metadata.name",
            "a RayCronJob name must be at most 36 characters (got 37): KubeRay names each "
            "RayJob it creates <name>-<minutes since the epoch>",
            id="raycronjob-37",
        ),
    ],
)
def test_name_length(build: Builder, name: str, expected: Expected, phrase: str | None) -> None:
    check(edited(build(), {"metadata.name": name}), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({"metadata.name": "job-1"}, None, None, id="dns1035-ok"),
        pytest.param({"metadata.name": "1job"}, "metadata.name", "DNS-1035", id="leading-digit"),
        pytest.param({"metadata.name": "My-Job"}, "metadata.name", "DNS-1035", id="upper-case"),
        pytest.param({"metadata.name": "job-"}, "metadata.name", "DNS-1035", id="trailing-dash"),
        pytest.param(
            {"metadata.name": DELETE, "metadata.generateName": "job-"},
            None,
            None,
            id="generate-name-ok",
        ),
    ],
)
def test_name_syntax(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(rayjob(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("build", "path", "value", "ok"),
    [
        pytest.param(raycluster, "spec.managedBy", "ray.io/kuberay-operator", True, id="kuberay"),
        pytest.param(rayjob, "spec.managedBy", "kueue.x-k8s.io/multikueue", True, id="kueue"),
        pytest.param(raycluster, "spec.managedBy", "someone-else", False, id="raycluster-bad"),
        pytest.param(rayjob, "spec.managedBy", "someone-else", False, id="rayjob-bad"),
        pytest.param(rayservice, "spec.managedBy", "", False, id="rayservice-empty"),
    ],
)
def test_managed_by_values(build: Builder, path: str, value: str, ok: bool) -> None:
    expected = None if ok else path
    check(edited(build(), {path: value}), expected, None if ok else "managedBy must be")


_HEAD_LABELS = "spec.headGroupSpec.labels"


@pytest.mark.parametrize(
    ("key", "value", "phrase"),
    [
        pytest.param("team", "ml", None, id="plain-ok"),
        pytest.param("example.com/tier", "", None, id="prefixed-empty-value-ok"),
        pytest.param("bad key", "x", "invalid label key", id="space-in-key"),
        pytest.param("a/b/c", "x", "at most one '/'", id="two-slashes"),
        pytest.param("Example.com/x", "x", "DNS subdomain", id="upper-case-prefix"),
        pytest.param("k" * 64, "x", "at most 63", id="key-too-long"),
        pytest.param("team", "-ml", "invalid label value", id="value-leading-dash"),
        pytest.param("team", "v" * 64, "at most 63", id="value-too-long"),
    ],
)
def test_group_label_syntax(key: str, value: str, phrase: str | None) -> None:
    doc = edited(raycluster(), {_HEAD_LABELS: {key: value}})
    check(doc, None if phrase is None else f"{_HEAD_LABELS}[{key}]", phrase)
