"""Autoscaler RBAC, after KubeRay's rbac.go and rbac_test.go."""

from __future__ import annotations

from activities.builders import (
    build_autoscaler_role,
    build_autoscaler_role_binding,
    build_autoscaler_service_account,
)
from tests.activities.builders.fixtures import cluster, instance_dict

LABELS = {
    "ray.io/cluster": "raycluster-sample",
    "app.kubernetes.io/name": "kuberay",
    "app.kubernetes.io/created-by": "kuberay-operator",
}


def test_objects() -> None:
    model = cluster()
    account = build_autoscaler_service_account(model)
    role = build_autoscaler_role(model)
    binding = build_autoscaler_role_binding(model)
    for obj in (account, role, binding):
        assert obj["metadata"]["name"] == "raycluster-sample"
        assert obj["metadata"]["namespace"] == "default"
        assert obj["metadata"]["labels"] == LABELS
        assert obj["metadata"]["ownerReferences"][0]["controller"] is True
    assert account["kind"] == "ServiceAccount"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
        {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
    ]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "raycluster-sample", "namespace": "default"}
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "raycluster-sample",
    }


def test_head_service_account_name_is_used() -> None:
    data = instance_dict()
    data["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "head-sa"
    model = cluster(data)
    assert build_autoscaler_service_account(model)["metadata"]["name"] == "head-sa"
    assert build_autoscaler_role_binding(model)["subjects"][0]["name"] == "head-sa"
    assert build_autoscaler_role(model)["metadata"]["name"] == "raycluster-sample"


def test_long_names_are_clipped() -> None:
    data = instance_dict()
    data["metadata"]["name"] = "1" + "a" * 60
    model = cluster(data)
    assert build_autoscaler_role(model)["metadata"]["name"] == "a" * 50
    assert build_autoscaler_role_binding(model)["roleRef"]["name"] == "a" * 50
