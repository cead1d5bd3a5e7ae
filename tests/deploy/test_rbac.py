"""The ClusterRoles grant exactly what the code uses (derived by `tests/deploy/usage.py`).

The worker's rules must equal what its activities call plus what the Roles it creates grant
(Kubernetes refuses to let an account create a Role granting more than it holds, unless it has
`escalate`, which is far broader); the bridge's must equal what it lists and watches. A new
`KubeClient` call without a rule fails here, and so does a rule nothing uses any more. Both the
kustomize base and the Helm chart are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from activities.builders import build_autoscaler_role
from crds.raycluster import RayCluster
from tests.deploy import usage
from tests.deploy.rendering import Doc, by_kind, helm_docs, kustomize_docs
from tests.reference import REPO_ROOT

Renderer = Callable[[], list[Doc]]
RENDERERS = [pytest.param(kustomize_docs, id="kustomize"), pytest.param(helm_docs, id="helm")]


def expand(rules: list[dict[str, Any]]) -> set[usage.Use]:
    """Every (verb, group, resource) a list of PolicyRules grants; no wildcards allowed."""
    granted = set()
    for rule in rules:
        assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], rule
        assert not rule.get("resourceNames") and not rule.get("nonResourceURLs"), rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted |= {(verb, group, resource) for verb in rule["verbs"]}
    return granted


def granted_by_roles_the_worker_creates() -> set[usage.Use]:
    """The rules of the autoscaler Role, the one Role the activities create."""
    body = yaml.safe_load((REPO_ROOT / "samples" / "raycluster.yaml").read_text())
    body["metadata"].update(namespace="default", uid="u")
    body["spec"]["enableInTreeAutoscaling"] = True
    return expand(build_autoscaler_role(RayCluster.model_validate(body))["rules"])


def test_the_scan_resolves_the_call_sites_it_cannot_read_directly() -> None:
    # Each of these holds its resource in a variable; if one appears here that is not in a
    # table, the scan would be too generous or too narrow: look at it, then extend this list.
    worker, bridge = usage.worker_scan(), usage.bridge_scan()
    assert {(s.module, s.method) for s in worker.dynamic} == {
        ("activities/clusters.py", "get_or_none"),
        ("activities/clusters.py", "create_or_get"),
        ("activities/clusters.py", "update"),
    }
    assert worker.tables == {
        "SERVICES",
        "SERVICE_ACCOUNTS",
        "ROLES",
        "ROLE_BINDINGS",
        "PVCS",
        "NETWORK_POLICIES",
        "ISSUERS",
        "CERTIFICATES",
    }
    assert {(s.module, s.method) for s in bridge.dynamic} == {
        ("bridge/watching.py", "list_versioned"),
        ("bridge/watching.py", "watch"),
    }
    assert bridge.tables == {"RAYCLUSTERS", "RAYJOBS", "RAYSERVICES", "PODS", "JOBS"}


@pytest.mark.parametrize("render", RENDERERS)
def test_the_worker_role_is_what_its_activities_use(render: Renderer) -> None:
    role = by_kind(render(), "ClusterRole")["kuberay-temporal-worker"]
    granted = expand(role["rules"])
    needed = usage.worker_scan().uses | granted_by_roles_the_worker_creates()
    assert granted - needed == set(), "rules no activity needs"
    assert needed - granted == set(), "calls the worker may not make"


@pytest.mark.parametrize("render", RENDERERS)
def test_the_bridge_only_lists_and_watches_what_it_watches(render: Renderer) -> None:
    role = by_kind(render(), "ClusterRole")["kuberay-temporal-bridge"]
    granted = expand(role["rules"])
    assert granted == usage.bridge_scan().uses
    assert {verb for verb, _, _ in granted} == {"list", "watch"}


@pytest.mark.parametrize("render", RENDERERS)
def test_each_component_is_bound_to_its_own_role_only(render: Renderer) -> None:
    docs = render()
    bindings = by_kind(docs, "ClusterRoleBinding")
    accounts = by_kind(docs, "ServiceAccount")
    deployments = by_kind(docs, "Deployment")
    assert set(bindings) == set(accounts) == set(deployments)
    for name, binding in bindings.items():
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": name,
        }
        (subject,) = binding["subjects"]
        namespace = accounts[name]["metadata"]["namespace"]
        assert subject == {"kind": "ServiceAccount", "name": name, "namespace": namespace}
        pod = deployments[name]["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == name
    assert not by_kind(docs, "Role") and not by_kind(docs, "RoleBinding")
