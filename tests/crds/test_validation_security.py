"""Token-auth, mTLS and NetworkPolicy rules, and the add-on we refuse (the history server)."""

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

TOKEN: Edits = {"spec.authOptions.mode": "token"}
K8S: Edits = {**TOKEN, "spec.authOptions.enableK8sTokenAuth": True, "spec.rayVersion": "2.55"}
HEAD_CONTAINER = "spec.headGroupSpec.template.spec.containers[0]"
W0_CONTAINER = "spec.workerGroupSpecs[0].template.spec.containers[0]"


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(TOKEN, None, None, id="2.52-ok"),
        pytest.param({**TOKEN, "spec.rayVersion": "v2.53rc1"}, None, None, id="suffix-ignored"),
        pytest.param(
            {**TOKEN, "spec.rayVersion": "2.50.0"},
            "spec.rayVersion",
            "needs Ray 2.52.0 or later, got rayVersion 2.50.0",
            id="old",
        ),
        pytest.param(
            {**TOKEN, "spec.rayVersion": ""}, "spec.rayVersion", "must be set", id="unset"
        ),
        pytest.param(
            {**TOKEN, "spec.rayVersion": "invalid-version"},
            "spec.rayVersion",
            "not a version number",
            id="invalid",
        ),
        pytest.param({"spec.authOptions.mode": "disabled"}, None, None, id="disabled-ok"),
        pytest.param(K8S, None, None, id="k8s-2.55-ok"),
        pytest.param(
            {**K8S, "spec.rayVersion": "2.52.0"}, "spec.rayVersion", "2.55.0", id="k8s-old"
        ),
        pytest.param(
            {**K8S, "spec.authOptions.secretName": "s"},
            "spec.authOptions.secretName",
            "cannot be combined",
            id="k8s-secret",
        ),
        pytest.param(
            {"spec.authOptions.enableK8sTokenAuth": True},
            "spec.authOptions.enableK8sTokenAuth",
            "needs authOptions.mode: token",
            id="k8s-without-token",
        ),
    ],
)
def test_token_auth(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


_Build = Callable[[], dict[str, Any]]


@pytest.mark.parametrize(
    ("build", "prefix", "ok"),
    [
        pytest.param(raycluster, "spec", True, id="raycluster-ok"),
        pytest.param(rayjob, "spec.rayClusterSpec", False, id="rayjob"),
        pytest.param(rayservice, "spec.rayClusterConfig", False, id="rayservice"),
    ],
)
def test_k8s_token_auth_owner(build: _Build, prefix: str, ok: bool) -> None:
    edits = {f"{prefix}.{path.removeprefix('spec.')}": value for path, value in K8S.items()}
    expected = None if ok else f"{prefix}.authOptions.enableK8sTokenAuth"
    check(edited(build(), edits), expected, None if ok else "not supported for a Ray")


TLS: Edits = {"spec.tlsOptions.enabled": True}
_TLS_MOUNT = [{"name": "certs", "mountPath": "/etc/ray/tls"}]


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param(TLS, None, None, id="enabled-ok"),
        pytest.param(
            {"spec.tlsOptions.enabled": False, f"{HEAD_CONTAINER}.env": [{"name": "RAY_USE_TLS"}]},
            None,
            None,
            id="disabled-ignores",
        ),
        pytest.param(
            {**TLS, f"{HEAD_CONTAINER}.env": [{"name": "RAY_USE_TLS", "value": "1"}]},
            f"{HEAD_CONTAINER}.env[0]",
            "set by KubeRay",
            id="head-env",
        ),
        pytest.param(
            {**TLS, f"{W0_CONTAINER}.volumeMounts": _TLS_MOUNT},
            f"{W0_CONTAINER}.volumeMounts[0]",
            "managed by KubeRay",
            id="worker-mount",
        ),
        pytest.param(
            {**TLS, "spec.autoscalerOptions.env": [{"name": "RAY_TLS_CA_CERT"}]},
            "spec.autoscalerOptions.env[0]",
            "set by KubeRay",
            id="autoscaler-env",
        ),
    ],
)
def test_tls_managed_settings(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


NP = "spec.networkPolicy"
_RULE = [{"from": [{"podSelector": {}}]}]


@pytest.mark.parametrize(
    ("edits", "expected", "phrase"),
    [
        pytest.param({f"{NP}.head.ingressRules": _RULE}, None, None, id="deny-all-ok"),
        pytest.param(
            {f"{NP}.mode": "DenyAllEgress", f"{NP}.worker.ingressRules": _RULE},
            f"{NP}.worker.ingressRules",
            "ingress is not restricted",
            id="ingress-with-egress-mode",
        ),
        pytest.param(
            {f"{NP}.mode": "DenyAllIngress", f"{NP}.head.egressRules": _RULE},
            f"{NP}.head.egressRules",
            "egress is not restricted",
            id="egress-with-ingress-mode",
        ),
        pytest.param(
            {f"{NP}.workerGroups": [{"groupName": "workers", "ingressRules": _RULE}]},
            None,
            None,
            id="known-group-ok",
        ),
        pytest.param(
            {f"{NP}.workerGroups": [{"groupName": "gpus"}]},
            f"{NP}.workerGroups[0].groupName",
            "no worker group is named 'gpus'",
            id="unknown-group",
        ),
        pytest.param(
            {f"{NP}.mode": "DenyAll", "spec.workerGroupSpecs[0].groupName": "Workers"},
            "spec.workerGroupSpecs[0].groupName",
            "NetworkPolicy names",
            id="group-not-dns1123",
        ),
    ],
)
def test_network_policy(edits: Edits, expected: Expected, phrase: str | None) -> None:
    check(edited(raycluster(), edits), expected, phrase)


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        pytest.param(
            {"spec.historyServerOptions": {"collectorOptions": {"image": "collector:1"}}},
            "spec.historyServerOptions",
            id="history-server",
        ),
        pytest.param({"spec.headGroupSpec.enableIngress": True}, None, id="ingress-ok"),
        pytest.param(
            {"spec.headGroupSpec.ingressOptions": {"host": "ray.example.com"}},
            None,
            id="ingress-options-ok",
        ),
    ],
)
def test_fields_not_carried_out_are_refused_by_name(edits: Edits, expected: Expected) -> None:
    """Accepted and then ignored, they would fail later and silently; refused, they say why."""
    check(edited(raycluster(), edits), expected, "not")
