"""The ClusterRoles grant exactly what the code uses (derived by `tests/deploy/usage.py`).

The worker's rules must equal what its activities call plus what the Roles it creates grant
(Kubernetes refuses to let an account create a Role granting more than it holds, unless it has
`escalate`, which is far broader) plus `update` on the finalizers of every kind it names as a
blocking owner (what the OwnerReferencesPermissionEnforcement admission plugin asks); the
bridge's must equal what it lists and watches. A new
`KubeClient` call without a rule fails here, and so does a rule nothing uses any more. Both the
kustomize base and the Helm chart are checked.

With dashboard access `proxy` every dashboard call is also a request to the API server's
`services/proxy` or `pods/proxy`, so the worker's rules depend on the mode its settings give
it: the manifests deploy `direct` and grant neither; the chart's `worker.dashboardAccess=proxy`
and the kustomize component `dashboard-proxy` switch to the proxy and grant exactly what it
carries.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from activities.dashboard import urls as dashboard_urls
from activities.builders import build_autoscaler_role
from crds.raycluster import RayCluster
from tests.deploy import usage
from tests.deploy.rendering import (
    Doc,
    by_kind,
    helm_docs,
    kustomize_docs,
    kustomize_overlay_docs,
    settings_env,
)
from tests.reference import REPO_ROOT
from runtime.settings import Settings

Renderer = Callable[[], list[Doc]]
RENDERERS = [pytest.param(kustomize_docs, id="kustomize"), pytest.param(helm_docs, id="helm")]
PROXY_RENDERERS = [
    pytest.param(lambda: kustomize_overlay_docs("dashboard-proxy"), id="kustomize-proxy"),
    pytest.param(lambda: helm_docs({"worker": {"dashboardAccess": "proxy"}}), id="helm-proxy"),
]
PROXIED = {
    ("get", "", "services/proxy"),  # job info, list and logs; Serve status
    ("create", "", "services/proxy"),  # job submission and stop (POST)
    ("update", "", "services/proxy"),  # the Serve config (PUT)
    ("get", "", "pods/proxy"),  # the Serve proxy's /-/healthz on the head pod
}


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
        ("activities/raycluster/observation.py", "cached_or_live"),
        ("activities/raycluster/kube_effects.py", "create_or_get"),
        ("activities/raycluster/kube_effects.py", "update"),
    }
    assert worker.tables == {
        "SECRETS",
        "SERVICES",
        "SERVICE_ACCOUNTS",
        "ROLES",
        "ROLE_BINDINGS",
        "PVCS",
        "NETWORK_POLICIES",
        "ISSUERS",
        "CERTIFICATES",
        "INGRESSES",
        "VOLCANO_POD_GROUPS",
        "PLUGINS_POD_GROUPS",
    }
    assert {(s.module, s.method) for s in bridge.dynamic} == {("bridge/watching.py", "ListWatch")}
    assert bridge.tables == {"RAYCLUSTERS", "RAYJOBS", "RAYSERVICES", "RAYCRONJOBS", "PODS", "JOBS"}


def test_the_scan_sees_every_owner_whose_deletion_the_worker_blocks() -> None:
    assert usage.owner_uses() == {
        ("update", "ray.io", f"{plural}/finalizers")
        for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")
    }
    # Only the scanned builder sets blockOwnerDeletion; another would escape the scan.
    setting = {
        str(path.relative_to(REPO_ROOT))
        for path in usage.package_modules("activities")
        if "blockOwnerDeletion" in path.read_text()
    }
    assert setting == {"activities/builders/names.py"}
    assert f"def {usage.OWNER_BUILDER}(" in (REPO_ROOT / "activities/builders/names.py").read_text()


def dashboard_access(docs: list[Doc]) -> str:
    """The mode the rendered settings give the worker (the setting's default if unset)."""
    return Settings.from_env(settings_env(docs, "worker")).dashboard_access


def test_the_scan_sees_every_dashboard_call_through_the_proxy() -> None:
    assert usage.proxy_uses() == PROXIED
    assert usage.client_methods()["serve_proxy_healthy"] == {"GET"}


def test_the_scan_knows_every_proxy_url_builder() -> None:
    built = {
        "proxied_base_url": dashboard_urls.proxied_base_url("https://api", "ns", "svc"),
        "pod_proxied_base_url": dashboard_urls.pod_proxied_base_url("https://api", "ns", "p", 1),
    }
    assert set(built) == set(usage.PROXY_BUILDERS)
    for name, url in built.items():
        resource = usage.PROXY_BUILDERS[name].removesuffix("/proxy")
        assert url.startswith(f"https://api/api/v1/namespaces/ns/{resource}/"), name
        assert url.endswith("/proxy"), name
    # A new builder of a proxy URL (a function returning an f-string that ends in `/proxy`)
    # must be added to the scan's table.
    tree = ast.parse(usage.URLS_MODULE.read_text())
    builders = {
        function.name
        for function in tree.body
        if isinstance(function, ast.FunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Return)
        and isinstance(node.value, ast.JoinedStr)
        and isinstance(node.value.values[-1], ast.Constant)
        and str(node.value.values[-1].value).endswith("/proxy")
    }
    assert builders == set(built)


@pytest.mark.parametrize("render", RENDERERS)
def test_the_manifests_reach_dashboards_directly_and_grant_no_proxy(render: Renderer) -> None:
    # The proxy rules would reach every Service and pod in the cluster, past NetworkPolicies.
    docs = render()
    assert dashboard_access(docs) == "direct"
    role = by_kind(docs, "ClusterRole")["kuberay-temporal-worker"]
    assert not {use for use in expand(role["rules"]) if use[2].endswith("/proxy")}


@pytest.mark.parametrize("render", RENDERERS + PROXY_RENDERERS)
def test_the_worker_role_is_what_its_activities_use(render: Renderer) -> None:
    docs = render()
    role = by_kind(docs, "ClusterRole")["kuberay-temporal-worker"]
    granted = expand(role["rules"])
    needed = usage.worker_scan().uses | granted_by_roles_the_worker_creates() | usage.owner_uses()
    if dashboard_access(docs) == "proxy":
        needed |= usage.proxy_uses()
    assert granted - needed == set(), "rules no activity needs"
    assert needed - granted == set(), "calls the worker may not make"


@pytest.mark.parametrize("render", PROXY_RENDERERS)
def test_the_proxy_variants_switch_the_mode_and_change_nothing_else(render: Renderer) -> None:
    docs, base = render(), kustomize_docs()
    assert dashboard_access(docs) == "proxy"
    mine = by_kind(docs, "ClusterRole")["kuberay-temporal-worker"]["rules"]
    theirs = by_kind(base, "ClusterRole")["kuberay-temporal-worker"]["rules"]
    assert expand(mine) - expand(theirs) == PROXIED
    assert settings_env(docs, "worker") == settings_env(base, "worker") | {
        "KUBERAY_TEMPORAL_DASHBOARD_ACCESS": "proxy"
    }


def test_the_chart_refuses_an_unknown_dashboard_access() -> None:
    with pytest.raises(Exception, match=r"worker\.dashboardAccess must be direct or proxy"):
        helm_docs({"worker": {"dashboardAccess": "Proxy"}})


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
