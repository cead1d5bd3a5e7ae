"""NetworkPolicies, the Ingress and mTLS objects through the RayCluster activities, on devcluster.

These are the owned objects KubeRay keeps in line after creating them: a NetworkPolicy and the
head's Ingress follow the spec (a policy also goes with its worker group), a leaf Certificate
follows the pod IPs.
"""

from __future__ import annotations

import base64
import copy
import uuid
from typing import Any

import pytest

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.raycluster import contract
from activities.raycluster.kube_effects import ClusterActivities
from crds.refs import ObjectRef
from tests.activities.counting import Calls
from tests.activities.raycluster.test_kube_effects import SPEC, make_cluster, run


async def bump(client: KubeClient, name: str, patch: list[dict[str, object]]) -> None:
    await client.patch(kube.RAYCLUSTERS, "default", name, patch, content_type=kube.JSON_PATCH)


async def test_network_policies_are_created_updated_and_pruned(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, networkPolicy={"mode": "DenyAllIngress"})
    head, workers = f"{ref.name}-head", f"{ref.name}-workers-small"
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects[-2:] == [f"NetworkPolicy/{head}", f"NetworkPolicy/{workers}"]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    policy = await client.get(kube.NETWORK_POLICIES, "default", head)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []

    await bump(
        client,
        ref.name,
        [{"op": "replace", "path": "/spec/networkPolicy/mode", "value": "DenyAll"}],
    )
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects == [f"NetworkPolicy/{head}", f"NetworkPolicy/{workers}"]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=2, ensure_objects=True))
    policy = await client.get(kube.NETWORK_POLICIES, "default", head)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]

    await bump(client, ref.name, [{"op": "replace", "path": "/spec/workerGroupSpecs", "value": []}])
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects == [f"NetworkPolicy/{workers}"]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=3, ensure_objects=True))
    assert await client.get_or_none(kube.NETWORK_POLICIES, "default", workers) is None
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []
    reasons = [e["reason"] for e in await client.list_all(kube.EVENTS, "default")]
    assert reasons.count("CreatedNetworkPolicy") == 2
    assert reasons.count("UpdatedNetworkPolicy") == 2
    assert reasons.count("DeletedNetworkPolicy") == 1


async def test_a_foreign_network_policy_is_left_alone(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, networkPolicy={})
    foreign = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{ref.name}-head"},
        "spec": {"podSelector": {}},
    }
    await client.create(kube.NETWORK_POLICIES, "default", foreign)
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    policy = await client.get(kube.NETWORK_POLICIES, "default", f"{ref.name}-head")
    assert policy["spec"] == {"podSelector": {}}
    reasons = [e["reason"] for e in await client.list_all(kube.EVENTS, "default")]
    assert "NetworkPolicyNameCollision" in reasons
    # Nothing more to do about it: later passes do not keep trying.
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []


async def test_tls_objects_and_leaf_sans_follow_pod_ips(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, tlsOptions={"enabled": True})
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects[-5:] == [
        f"Issuer/ray-selfsigned-issuer-{ref.name}",
        f"Certificate/ray-ca-certificate-{ref.name}",
        f"Issuer/ray-ca-issuer-{ref.name}",
        f"Certificate/ray-head-cert-{ref.name}",
        f"Certificate/ray-worker-cert-{ref.name}",
    ]
    head_pod = contract.PodCreation(name=f"{ref.name}-head-abcde", group="headgroup", head=True)
    plan = contract.ApplyClusterInput(
        ref=ref, generation=1, ensure_objects=True, creations=[head_pod]
    )
    await run(acts.apply, plan)
    cert = await client.get(kube.CERTIFICATES, "default", f"ray-head-cert-{ref.name}")
    assert cert["spec"]["ipAddresses"] == ["127.0.0.1"]
    pod = await client.get(kube.PODS, "default", head_pod.name)
    assert pod["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"
    pod["status"] = {"phase": "Pending", "podIP": "10.244.9.9"}
    await client.request("PUT", kube.PODS.path("default", head_pod.name, "status"), body=pod)

    snap = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert snap.missing_objects == [f"Certificate/ray-head-cert-{ref.name}"]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    cert = await client.get(kube.CERTIFICATES, "default", f"ray-head-cert-{ref.name}")
    assert cert["spec"]["ipAddresses"] == ["10.244.9.9", "127.0.0.1"]
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []
    reasons = [e["reason"] for e in await client.list_all(kube.EVENTS, "default")]
    assert reasons.count("MTLSCertificatesUpdated") == 1


async def test_token_auth_gets_its_secret_once_and_keeps_it(client: KubeClient) -> None:
    # KubeRay's reconcileAuthSecret: without a secretName the operator makes the Secret the
    # pods read; before, nothing created it and the pods pointed at a missing Secret.
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, rayVersion="2.52.0", authOptions={"mode": "token"})
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert f"Secret/{ref.name}" in snap.missing_objects
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    secret = await client.get(kube.SECRETS, "default", ref.name)
    token = base64.b64decode(secret["data"]["auth_token"])
    assert len(base64.b64decode(token)) == 32
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("RayCluster", ref.name, True)
    assert secret["metadata"]["labels"] == {"ray.io/cluster": ref.name}
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    again = await client.get(kube.SECRETS, "default", ref.name)
    assert again["data"] == secret["data"]
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []
    reasons = [e["reason"] for e in await client.list_all(kube.EVENTS, "default")]
    assert not [r for r in reasons if "Secret" in r]  # KubeRay records none for it either


async def test_a_named_or_kubernetes_token_secret_is_never_created(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    named = await make_cluster(
        client, rayVersion="2.52.0", authOptions={"mode": "token", "secretName": "mine"}
    )
    snap = await run(acts.read, contract.ReadClusterInput(ref=named))
    assert not [key for key in snap.missing_objects if key.startswith("Secret/")]
    await run(acts.apply, contract.ApplyClusterInput(ref=named, generation=1, ensure_objects=True))
    assert await client.get_or_none(kube.SECRETS, "default", "mine") is None
    assert await client.get_or_none(kube.SECRETS, "default", named.name) is None


async def ingress_cluster(client: KubeClient, annotations: dict[str, str], **head: Any) -> str:
    name = f"c{uuid.uuid4().hex[:6]}"
    spec = copy.deepcopy(SPEC)
    spec["headGroupSpec"].update(enableIngress=True, **head)
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": spec,
    }
    await client.create(kube.RAYCLUSTERS, "default", body)
    return name


async def test_the_head_ingress_is_created_follows_the_spec_and_keeps_a_default_class(
    client: KubeClient,
) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    name = await ingress_cluster(client, {"team": "a"}, ingressOptions={"host": "ray.example"})
    obj = await client.get(kube.RAYCLUSTERS, "default", name)
    ref = ObjectRef(kind="RayCluster", namespace="default", name=name, uid=obj["metadata"]["uid"])
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert f"Ingress/{name}-head-ingress" in snap.missing_objects
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    ingress = await client.get(kube.INGRESSES, "default", f"{name}-head-ingress")
    assert ingress["metadata"]["annotations"] == {"team": "a"}
    assert ingress["metadata"]["ownerReferences"][0]["uid"] == ref.uid
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "ray.example"
    assert rule["http"]["paths"][0]["backend"]["service"]["name"] == f"{name}-head-svc"

    # An admission plugin's default class is kept, not fought over on every pass.
    ingress["spec"]["ingressClassName"] = "cluster-default"
    path = kube.INGRESSES.path("default", ingress["metadata"]["name"])
    await client.request("PUT", path, body=ingress)
    assert (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects == []

    await bump(
        client,
        name,
        [{"op": "add", "path": "/spec/headGroupSpec/ingressOptions/path", "value": "/ray"}],
    )
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects == [f"Ingress/{name}-head-ingress"]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=2, ensure_objects=True))
    ingress = await client.get(kube.INGRESSES, "default", f"{name}-head-ingress")
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/ray"
    assert ingress["spec"]["ingressClassName"] == "cluster-default"
    events = await client.list_all(kube.EVENTS, "default")
    messages = {e["reason"]: e["message"] for e in events}
    assert messages["CreatedIngress"] == f"Created ingress default/{name}-head-ingress"
    assert messages["UpdatedIngress"] == f"Updated ingress default/{name}-head-ingress"


async def test_a_foreign_ingress_is_left_alone_with_kuberays_warning(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    name = await ingress_cluster(client, {})
    obj = await client.get(kube.RAYCLUSTERS, "default", name)
    ref = ObjectRef(kind="RayCluster", namespace="default", name=name, uid=obj["metadata"]["uid"])
    foreign = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": f"{name}-head-ingress"},
        "spec": {"defaultBackend": {"service": {"name": "mine", "port": {"number": 80}}}},
    }
    await client.create(kube.INGRESSES, "default", foreign)
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    kept = await client.get(kube.INGRESSES, "default", f"{name}-head-ingress")
    assert kept["spec"] == foreign["spec"]
    events = await client.list_all(kube.EVENTS, "default")
    assert [e["message"] for e in events if e["reason"] == "FailedToCreateIngress"] == [
        f"Ingress default/{name}-head-ingress already exists and is not owned by this "
        "RayCluster; not modifying it"
    ]


async def test_network_policies_are_listed_only_where_some_may_exist(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the option builds policies: a new cluster without it has none, and its first
    pass lists none (KubeRay, its gate off, never does); a spec that dropped the option may
    have left some, which are listed once (by the read or the apply step) and deleted."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    plain = await make_cluster(client)
    lists = Calls(client, "list_all", monkeypatch)
    snap = await run(acts.read, contract.ReadClusterInput(ref=plain))
    assert snap.missing_objects  # the head Service, at least: the apply step runs
    await run(acts.apply, contract.ApplyClusterInput(ref=plain, generation=1, ensure_objects=True))
    assert (await run(acts.read, contract.ReadClusterInput(ref=plain))).missing_objects == []
    assert lists.count("networkpolicies") == 0

    ref = await make_cluster(client, networkPolicy={"mode": "DenyAll"})
    await run(acts.read, contract.ReadClusterInput(ref=ref))
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    assert lists.count("networkpolicies") == 2  # the read's and the apply step's
    await bump(client, ref.name, [{"op": "remove", "path": "/spec/networkPolicy"}])
    # A spec change with nothing missing: the read is what finds stale policies.
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    head, workers = f"{ref.name}-head", f"{ref.name}-workers-small"
    assert snap.missing_objects == [f"NetworkPolicy/{head}", f"NetworkPolicy/{workers}"]
    assert lists.count("networkpolicies") == 3
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=2, ensure_objects=True))
    assert await client.list_all(kube.NETWORK_POLICIES, "default") == []


def _platform_object(kind: str, name: str) -> dict[str, Any]:
    """An object someone else made in the namespace before the cluster existed."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}
    if kind == "Role":
        body["apiVersion"] = "rbac.authorization.k8s.io/v1"
        body["rules"] = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]
    return body


@pytest.mark.parametrize(
    ("kind", "resource"),
    [
        pytest.param("Role", kube.ROLES, id="role"),
        pytest.param("ServiceAccount", kube.SERVICE_ACCOUNTS, id="service-account"),
    ],
)
async def test_another_owners_role_or_account_of_the_name_is_never_bound(
    client: KubeClient, kind: str, resource: kube.Resource
) -> None:
    """A RayCluster named after a Role the platform made must not bind that Role to the
    ServiceAccount its pods run as (nor the autoscaler's Role to another's account)."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, enableInTreeAutoscaling=True)
    theirs = await client.create(resource, "default", _platform_object(kind, ref.name))
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    assert await client.get_or_none(kube.ROLE_BINDINGS, "default", ref.name) is None
    kept = await client.get(resource, "default", ref.name)
    assert kept["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]
    events = await client.list_all(kube.EVENTS, "default")
    assert [e["message"] for e in events if e["reason"] == f"{kind}NameCollision"] == [
        f"{kind} default/{ref.name} already exists and is not owned by this RayCluster; "
        "it is left as it is, and no RoleBinding is made for it"
    ]
    # Nothing more to do about it: later passes do not keep trying.
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects == []


async def test_the_binding_of_this_clusters_own_role_is_made_again(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, enableInTreeAutoscaling=True)
    ensure = contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True)
    await run(acts.apply, ensure)
    await client.delete(kube.ROLE_BINDINGS, "default", ref.name)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert snap.missing_objects == [f"RoleBinding/{ref.name}"]
    await run(acts.apply, ensure)
    binding = await client.get(kube.ROLE_BINDINGS, "default", ref.name)
    assert binding["roleRef"]["name"] == ref.name
    reasons = [e["reason"] for e in await client.list_all(kube.EVENTS, "default")]
    assert not [r for r in reasons if r.endswith("NameCollision")]
