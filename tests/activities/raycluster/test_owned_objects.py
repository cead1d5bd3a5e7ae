"""NetworkPolicies and mTLS objects through the RayCluster activities, against devcluster.

These are the owned objects KubeRay keeps in line after creating them: a NetworkPolicy follows
the spec (and goes with its worker group), a leaf Certificate follows the pod IPs.
"""

from __future__ import annotations

import base64

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.raycluster import contract
from activities.raycluster.kube_effects import ClusterActivities
from tests.activities.raycluster.test_kube_effects import make_cluster, run


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
