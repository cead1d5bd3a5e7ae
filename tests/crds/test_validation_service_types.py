"""The Services made for a CR are of the types KubeRay builds, and alias nothing elsewhere."""

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

_VICTIM = "victim-head-svc.victim.svc.cluster.local"
_TYPE = "spec.headGroupSpec.serviceType"
_TEMPLATE = "spec.headGroupSpec.headService.spec"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({_TYPE: "ClusterIP"}, None, None, id="cluster-ip"),
        pytest.param({_TYPE: "NodePort"}, None, None, id="node-port"),
        pytest.param({_TYPE: "LoadBalancer"}, None, None, id="load-balancer"),
        pytest.param({_TYPE: "ExternalName"}, _TYPE, "DNS alias", id="external-name-type"),
        pytest.param({_TYPE: "Tunnel"}, _TYPE, "not a Service type", id="unknown-type"),
        pytest.param({f"{_TEMPLATE}.type": "NodePort"}, None, None, id="template-node-port"),
        pytest.param(
            {f"{_TEMPLATE}.type": "ExternalName"},
            f"{_TEMPLATE}.type",
            "another namespace",
            id="template-external-name",
        ),
        pytest.param(
            {f"{_TEMPLATE}.type": "ExternalName", f"{_TEMPLATE}.externalName": _VICTIM},
            (f"{_TEMPLATE}.type", f"{_TEMPLATE}.externalName"),
            "alias",
            id="template-external-name-to-victim",
        ),
        pytest.param(
            {f"{_TEMPLATE}.externalName": _VICTIM},
            f"{_TEMPLATE}.externalName",
            "DNS alias",
            id="external-name-without-the-type",
        ),
        pytest.param(
            {f"{_TEMPLATE}.externalIPs": ["10.96.0.10"]},
            f"{_TEMPLATE}.externalIPs",
            "CVE-2020-8554",
            id="external-ips",
        ),
        pytest.param({f"{_TEMPLATE}.externalIPs": []}, None, None, id="no-external-ips"),
    ],
)
def test_raycluster_head_service(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("build", "prefix"),
    [
        pytest.param(rayjob, "spec.rayClusterSpec", id="rayjob"),
        pytest.param(rayservice, "spec.rayClusterConfig", id="rayservice"),
    ],
)
def test_an_embedded_cluster_spec_gets_no_external_name_head(build: Builder, prefix: str) -> None:
    path = f"{prefix}.headGroupSpec.headService.spec.type"
    check(edited(build(), {path: "ExternalName"}), path, "DNS alias")


def test_a_rayservice_serve_service_is_no_alias_either() -> None:
    path = "spec.serveService.spec.type"
    check(edited(rayservice(), {path: "ExternalName"}), path, "DNS alias")


def test_a_template_without_a_spec_mapping_is_left_to_the_schema() -> None:
    check(edited(raycluster(), {"spec.headGroupSpec.headService": {"spec": None}}), None, None)
