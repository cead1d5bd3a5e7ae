"""The namespaced install: Roles where the worker and the bridge work, no ClusterRole.

Rendered here, both ways (the kustomize component and the Helm value); run with RBAC enforced
in `test_rbac_enforced.py` (`test_a_namespaced_install_runs_a_raycluster_to_ready`).
"""

from __future__ import annotations

from typing import Any

from tests.deploy.rendering import (
    NAMESPACE,
    Doc,
    by_kind,
    helm_docs,
    kustomize_docs,
    kustomize_overlay_docs,
    settings_env,
)

COMPONENTS = ("worker", "bridge")
CLUSTER_WIDE = ("ClusterRole", "ClusterRoleBinding")


def roles(docs: list[Doc], kind: str) -> dict[tuple[str | None, str], Doc]:
    """`(namespace, name) -> object` of one RBAC kind."""
    return {
        (d["metadata"].get("namespace"), d["metadata"]["name"]): d
        for d in docs
        if d["kind"] == kind
    }


def cluster_rules() -> dict[str, Any]:
    """The rules of the default (cluster-wide) install, by component."""
    return {
        c: by_kind(kustomize_docs(), "ClusterRole")[f"kuberay-temporal-{c}"]["rules"]
        for c in COMPONENTS
    }


def check_namespaced(docs: list[Doc], namespaces: list[str]) -> None:
    assert [d["kind"] for d in docs if d["kind"] in CLUSTER_WIDE] == []
    found, bound = roles(docs, "Role"), roles(docs, "RoleBinding")
    expected = {(ns, f"kuberay-temporal-{c}") for ns in namespaces for c in COMPONENTS}
    assert set(found) == expected == set(bound)
    for (ns, name), role in found.items():
        component = name.removeprefix("kuberay-temporal-")
        assert role["rules"] == cluster_rules()[component], name
        binding = bound[(ns, name)]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": name,
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}
        ]
    for component in COMPONENTS:
        watched = settings_env(docs, component)["KUBERAY_TEMPORAL_WATCH_NAMESPACES"]
        assert watched.split(",") == namespaces


def test_the_component_makes_roles_in_the_install_namespace() -> None:
    check_namespaced(kustomize_overlay_docs("single-namespace"), [NAMESPACE])


def test_the_component_keeps_the_dashboard_proxy_rules_listed_before_it() -> None:
    docs = kustomize_overlay_docs("dashboard-proxy", "single-namespace")
    role = roles(docs, "Role")[(NAMESPACE, "kuberay-temporal-worker")]
    proxied = {r for rule in role["rules"] for r in rule["resources"] if r.endswith("/proxy")}
    assert proxied == {"services/proxy", "pods/proxy"}
    assert [d["kind"] for d in docs if d["kind"] in CLUSTER_WIDE] == []


def test_the_helm_value_makes_roles_in_each_watched_namespace() -> None:
    docs = helm_docs({"singleNamespaceInstall": True, "watchNamespaces": ["team-a", "team-b"]})
    check_namespaced(docs, ["team-a", "team-b"])


def test_the_helm_value_alone_means_the_release_namespace() -> None:
    check_namespaced(helm_docs({"singleNamespaceInstall": True}), [NAMESPACE])


def test_by_default_the_rules_are_cluster_wide() -> None:
    docs = helm_docs()
    assert {d["kind"] for d in docs if d["kind"] in CLUSTER_WIDE} == set(CLUSTER_WIDE)
    assert roles(docs, "Role") == {}
    assert settings_env(docs, "worker")["KUBERAY_TEMPORAL_WATCH_NAMESPACES"] == ""
