"""Names a CR uses to address other objects: refused unless the target kind allows them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.crds.test_validation_support import (
    Edits,
    Expected,
    check,
    edited,
    raycluster,
    rayjob,
    rayservice,
)

Builder = Callable[[], dict[str, Any]]

_TRAVERSAL = "../../b/services/victim-head-svc"
_HEAD_SVC = "spec.headGroupSpec.headService.metadata.name"
_AUTH = "spec.authOptions.secretName"
_REDIS = "spec.gcsFaultToleranceOptions.redisPassword.valueFrom.secretKeyRef.name"
_GROUP = "spec.workerGroupSpecs[0].groupName"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({_HEAD_SVC: "my-head"}, None, None, id="head-service-ok"),
        pytest.param(
            {_HEAD_SVC: _TRAVERSAL}, _HEAD_SVC, "is not a valid Service name", id="head-traversal"
        ),
        pytest.param({_HEAD_SVC: "1head"}, _HEAD_SVC, "starting with a letter", id="head-digit"),
        pytest.param(
            {_HEAD_SVC: "evil.example:80/#"}, _HEAD_SVC, "not a valid Service", id="head-host"
        ),
        pytest.param({_AUTH: "ray-token.v1"}, None, None, id="auth-secret-ok"),
        pytest.param(
            {_AUTH: "../../b/secrets/victim"}, _AUTH, "not a valid Secret name", id="auth-traversal"
        ),
        pytest.param({_AUTH: "Token"}, _AUTH, "lower-case", id="auth-upper-case"),
        pytest.param({_GROUP: "gpu.small-1"}, None, None, id="group-ok"),
        pytest.param({_GROUP: "Small"}, None, None, id="group-upper-case-ok"),
        pytest.param({_GROUP: "a/../../b"}, _GROUP, "label value", id="group-traversal"),
        pytest.param({_GROUP: "small_group"}, _GROUP, "pod name", id="group-underscore"),
    ],
)
def test_raycluster_references(edits: Edits, expected: Expected, phrase: str | None) -> None:
    if _AUTH in edits:
        edits = {"spec.authOptions.mode": "token", "spec.rayVersion": "2.52.0", **edits}
    check(edited(raycluster(), edits), expected, phrase)


def test_a_redis_password_secret_is_a_secret_name() -> None:
    doc = edited(
        raycluster(),
        {
            "spec.gcsFaultToleranceOptions.redisAddress": "redis:6379",
            _REDIS: "../other/secrets/redis",
            "spec.gcsFaultToleranceOptions.redisPassword.valueFrom.secretKeyRef.key": "password",
        },
    )
    check(doc, _REDIS, "not a valid Secret name")


@pytest.mark.parametrize(
    ("build", "prefix"),
    [
        pytest.param(rayjob, "spec.rayClusterSpec", id="rayjob"),
        pytest.param(rayservice, "spec.rayClusterConfig", id="rayservice"),
    ],
)
def test_an_embedded_cluster_spec_is_checked_too(build: Builder, prefix: str) -> None:
    path = f"{prefix}.workerGroupSpecs[0].groupName"
    check(edited(build(), {path: "../x"}), path, "label value")


@pytest.mark.parametrize(
    ("selector", "expected", "phrase"),
    [
        pytest.param({"ray.io/cluster": "shared"}, None, None, id="ok"),
        pytest.param(
            {"ray.io/cluster": "../../b/rayclusters/victim"},
            "spec.clusterSelector[ray.io/cluster]",
            "not a valid RayCluster name",
            id="cluster-traversal",
        ),
        pytest.param(
            {"ray.io/cluster": "shared", "team": "a,ray.io/cluster!=x"},
            "spec.clusterSelector[team]",
            "label value",
            id="selector-injection",
        ),
        pytest.param(
            {"ray.io/cluster": "shared", "bad key/x/y": "v"},
            "spec.clusterSelector[bad key/x/y]",
            "label key",
            id="bad-key",
        ),
    ],
)
def test_cluster_selector(selector: dict[str, str], expected: Expected, phrase: str | None) -> None:
    doc = edited(rayjob(), {"spec.clusterSelector": selector})
    del doc["spec"]["rayClusterSpec"]
    check(doc, expected, phrase)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("my-serve", None, id="ok"),
        pytest.param("../../b/services/x", "spec.serveService.metadata.name", id="traversal"),
    ],
)
def test_serve_service_name(name: str, expected: Expected) -> None:
    doc = edited(rayservice(), {"spec.serveService.metadata.name": name})
    check(doc, expected, None if expected is None else "not a valid Service name")
