"""The kustomize base and the Helm chart (rendered by real Helm with its default values).

Both must render the same objects, so the two ways in cannot drift apart; each Deployment
must carry probes, resources, a non-root read-only container and a PodDisruptionBudget; and
the settings they give the processes must be variables `Settings` reads, with valid
values.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.rendering import (
    CHART,
    DEPLOY,
    NAMESPACE,
    Doc,
    by_kind,
    container,
    helm_docs,
    kustomize_docs,
    settings_env,
)
from runtime.settings import Settings

COMPONENTS = ("worker", "bridge")
VARIABLES = {str(f.validation_alias) for f in Settings.model_fields.values()}


def _kinds(docs: list[Doc]) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in docs}


def _without_volatile(spec: dict[str, Any]) -> dict[str, Any]:
    """A container spec less what legitimately differs: the generated ConfigMap's name."""
    spec = dict(spec)
    spec.pop("envFrom")
    return spec


def test_kustomize_renders_namespace_crds_rbac_settings_workloads_and_budgets() -> None:
    names = [f"kuberay-temporal-{c}" for c in COMPONENTS]
    kinds = _kinds(kustomize_docs())
    assert ("Namespace", NAMESPACE) in kinds
    crds = {n for k, n in kinds if k == "CustomResourceDefinition"}
    assert crds == {
        f"{plural}.ray.io" for plural in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")
    }
    for kind in (
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "PodDisruptionBudget",
    ):
        assert {n for k, n in kinds if k == kind} == set(names), kind
    for doc in kustomize_docs():
        namespaced = ("ServiceAccount", "Deployment", "PodDisruptionBudget", "NetworkPolicy")
        if doc["kind"] in (*namespaced, "ConfigMap"):
            assert doc["metadata"]["namespace"] == NAMESPACE


def test_helm_renders_the_same_objects_as_kustomize() -> None:
    helm, kustomize = helm_docs(), kustomize_docs()
    # The chart's CRDs live in its crds/ directory (installed by Helm before the templates),
    # and the release namespace is Helm's to create.
    skip = {"CustomResourceDefinition", "Namespace", "ConfigMap"}
    assert {k for k in _kinds(kustomize) if k[0] not in skip} == {
        k for k in _kinds(helm) if k[0] not in skip
    }
    for kind in ("ClusterRole", "PodDisruptionBudget"):
        for name, doc in by_kind(helm, kind).items():
            other = by_kind(kustomize, kind)[name]
            assert doc.get("rules") == other.get("rules"), name
            if kind == "PodDisruptionBudget":
                assert doc["spec"]["maxUnavailable"] == other["spec"]["maxUnavailable"]
    for component in COMPONENTS:
        name = f"kuberay-temporal-{component}"
        mine, theirs = by_kind(helm, "Deployment")[name], by_kind(kustomize, "Deployment")[name]
        assert _without_volatile(container(mine)) == _without_volatile(container(theirs))
        for key in ("replicas",):
            assert mine["spec"][key] == theirs["spec"][key]
        pod_keys = ("securityContext", "serviceAccountName", "terminationGracePeriodSeconds")
        for key in (*pod_keys, "volumes"):
            assert mine["spec"]["template"]["spec"][key] == theirs["spec"]["template"]["spec"][key]
        assert settings_env(helm, component) == settings_env(kustomize, component)


def test_the_chart_ships_the_generated_crds() -> None:
    crds = CHART / "crds"
    assert crds.is_symlink() and crds.resolve() == (DEPLOY / "crds").resolve()
    assert sorted(p.name for p in crds.glob("*.yaml")) == [
        "ray.io_rayclusters.yaml",
        "ray.io_raycronjobs.yaml",
        "ray.io_rayjobs.yaml",
        "ray.io_rayservices.yaml",
    ]


@pytest.mark.parametrize("render", [kustomize_docs, helm_docs], ids=["kustomize", "helm"])
@pytest.mark.parametrize("component", COMPONENTS)
def test_each_deployment_is_probed_bounded_and_unprivileged(render: Any, component: str) -> None:
    docs = render()
    deployment = by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"]
    pod = deployment["spec"]["template"]["spec"]
    spec = container(deployment)
    assert spec["args"] == [component]
    assert spec["image"] == "kuberay-temporal:0.1.0"
    env = settings_env(docs, component)
    assert spec["ports"] == [
        {"name": "health", "containerPort": int(env["KUBERAY_TEMPORAL_HEALTH_PORT"])},
        {"name": "metrics", "containerPort": int(env["KUBERAY_TEMPORAL_METRICS_PORT"])},
    ]
    assert spec["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert spec["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert set(spec["resources"]["requests"]) == {"cpu", "memory"}
    assert "memory" in spec["resources"]["limits"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    budget = by_kind(docs, "PodDisruptionBudget")[f"kuberay-temporal-{component}"]
    assert budget["spec"]["selector"]["matchLabels"] == selector


@pytest.mark.parametrize("render", [kustomize_docs, helm_docs], ids=["kustomize", "helm"])
def test_the_settings_are_variables_the_processes_read_with_valid_values(render: Any) -> None:
    docs = render()
    for component in COMPONENTS:
        env = settings_env(docs, component)
        assert set(env) <= VARIABLES, set(env) - VARIABLES
        settings = Settings.from_env(env)
        assert settings.temporal_address == "temporal-frontend.temporal.svc.cluster.local:7233"
        assert settings.kubeconfig is None  # in-cluster: the pod's service account
        assert settings.namespaces == [None]
        deployment = by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"]
        grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        if component == "worker":  # running activities get their time before the SIGKILL
            assert settings.graceful_shutdown_timeout.total_seconds() < grace
        refs = {e["name"]: e["valueFrom"] for e in container(deployment)["env"]}
        secret_refs = {
            name: ref["secretKeyRef"] for name, ref in refs.items() if "secretKeyRef" in ref
        }
        assert set(secret_refs) == {"TEMPORAL_API_KEY", "KUBERAY_TEMPORAL_PAYLOAD_KEY"}
        assert all(ref["optional"] is True for ref in secret_refs.values())
        # The pod's own IP, where the kubelet probes and Prometheus scrapes: not loopback,
        # where the setting would leave them, nor every address.
        pod_ip = {"fieldRef": {"fieldPath": "status.podIP"}}
        for variable in ("KUBERAY_TEMPORAL_HEALTH_ADDRESS", "KUBERAY_TEMPORAL_METRICS_ADDRESS"):
            assert refs[variable] == pod_ip, variable
        assert set(refs) == {
            *secret_refs,
            "KUBERAY_TEMPORAL_HEALTH_ADDRESS",
            "KUBERAY_TEMPORAL_METRICS_ADDRESS",
        }


def test_helm_values_for_cloud_mtls_and_namespaces_reach_the_settings() -> None:
    values = {
        "temporal": {
            "address": "ns.acct.tmprl.cloud:7233",
            "namespace": "ns.acct",
            "tls": {"clientCertificate": True, "serverCA": True, "serverName": "tmprl"},
        },
        "watchNamespaces": ["ml", "batch"],
        "createNamespace": True,
        "worker": {"replicas": 5, "podDisruptionBudget": {"enabled": False}},
    }
    docs = helm_docs(values)
    settings = Settings.from_env(settings_env(docs, "worker"))
    assert settings.temporal_tls_client_cert_path == "/etc/kuberay-temporal/temporal-tls/tls.crt"
    assert settings.temporal_tls_client_key_path == "/etc/kuberay-temporal/temporal-tls/tls.key"
    assert settings.temporal_tls_server_ca_cert_path == "/etc/kuberay-temporal/temporal-tls/ca.crt"
    assert settings.temporal_tls_server_name == "tmprl"
    assert settings.namespaces == ["ml", "batch"]
    assert by_kind(docs, "Deployment")["kuberay-temporal-worker"]["spec"]["replicas"] == 5
    assert set(by_kind(docs, "PodDisruptionBudget")) == {"kuberay-temporal-bridge"}
    assert set(by_kind(docs, "Namespace")) == {NAMESPACE}
    mounts = container(by_kind(docs, "Deployment")["kuberay-temporal-worker"])["volumeMounts"]
    assert {
        "name": "temporal-tls",
        "mountPath": "/etc/kuberay-temporal/temporal-tls",
        "readOnly": True,
    } in mounts


def test_helm_values_for_a_workers_capacity_reach_the_settings() -> None:
    values = {
        "worker": {
            "maxConcurrentWorkflowTasks": 40,
            "maxConcurrentActivities": 10,
            "maxConcurrentLocalActivities": 200,
            "maxConcurrentWorkflowTaskPolls": 4,
            "maxConcurrentActivityTaskPolls": 2,
        }
    }
    settings = Settings.from_env(settings_env(helm_docs(values), "worker"))
    assert (
        settings.max_concurrent_workflow_tasks,
        settings.max_concurrent_activities,
        settings.max_concurrent_local_activities,
        settings.max_concurrent_workflow_task_polls,
        settings.max_concurrent_activity_task_polls,
    ) == (40, 10, 200, 4, 2)
