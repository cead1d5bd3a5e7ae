"""The RayService Kubernetes activities against devcluster (real HTTP, real API semantics)."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.builders import BuildOptions
from activities.builders import rayservice as rs
from activities.dashboard.access import DashboardConnector
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.rayservice import contract
from activities.rayservice.kube_effects import ServiceActivities
from activities.rayservice.ray_effects import HeadLabeler, ServeActivities
from activities.rayservice.routes import RouteActivities
from crds.rayservice import RayServiceStatus, RayServiceStatuses
from crds.refs import ObjectRef
from kuberay_temporal.stand_in_crds import gateway_api_crds

CONTAINER = {
    "name": "ray-head",
    "image": "rayproject/ray",
    "ports": [
        {"name": "dashboard", "containerPort": 8265},
        {"name": "serve", "containerPort": 8000},
    ],
}
GROUP = {
    "groupName": "small",
    "replicas": 1,
    "rayStartParams": {},
    "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray"}]}},
}
SERVE_CONFIG = "applications:\n  - name: app\n    import_path: m:app\n"
SPEC: dict[str, Any] = {
    "serveConfigV2": SERVE_CONFIG,
    "rayClusterConfig": {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [CONTAINER]}}},
        "workerGroupSpecs": [GROUP],
    },
}


async def make_service(client: KubeClient, **spec: Any) -> ObjectRef:
    name = f"s{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": "default", "labels": {"team": "a"}},
        "spec": {**copy.deepcopy(SPEC), **spec},
    }
    created = await client.create(kube.RAYSERVICES, "default", body)
    return ObjectRef(
        kind="RayService", namespace="default", name=name, uid=created["metadata"]["uid"]
    )


def run(activity: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(activity, arg)


async def service_with_cluster(
    client: KubeClient, acts: ServiceActivities
) -> tuple[ObjectRef, str, str]:
    """A RayService and its first cluster: (ref, goal hash, cluster name)."""
    ref = await make_service(client)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    name = f"{ref.name}-abcde"
    create = contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal)
    await run(acts.create_cluster, create)
    return ref, goal, name


async def reasons(client: KubeClient) -> list[str]:
    return sorted(e["reason"] for e in await client.list_all(kube.EVENTS, "default"))


async def test_read_a_missing_service(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = ObjectRef(kind="RayService", namespace="default", name="nope", uid="x")
    assert not (await run(acts.read, contract.ReadServiceInput(ref=ref))).exists


async def test_read_reports_enable_zero_downtime(client: KubeClient) -> None:
    ref = await make_service(client)
    on = await run(ServiceActivities(client).read, contract.ReadServiceInput(ref=ref))
    acts = ServiceActivities(client, BuildOptions(zero_downtime=False))
    off = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert on.zero_downtime and not off.zero_downtime


async def test_read_leaves_the_serve_config_out_and_hashes_it(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client)
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.exists and snap.generation == 1 and snap.spec is not None
    assert snap.spec.serve_config_v2 is None
    assert snap.serve_config_hash == rs.serve_config_hash(SERVE_CONFIG)
    assert snap.goal_hash and snap.clusters == [] and snap.labels == {"team": "a"}
    assert snap.head_service_cluster is None and snap.serve_endpoints == {
        f"{ref.name}-serve-svc": 0
    }
    light = await run(acts.read, contract.ReadServiceInput(ref=ref, known_generation=1))
    assert light.spec is None and light.status is None


def with_head_password(password: str) -> dict[str, Any]:
    config = copy.deepcopy(SPEC["rayClusterConfig"])
    head = config["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": "REDIS_PASSWORD", "value": password}]
    return config


async def test_passwords_stay_out_of_the_snapshot_but_change_the_goal(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    refs = [
        await make_service(client, rayClusterConfig=with_head_password(password))
        for password in ("s3cret-one", "s3cret-two")
    ]
    snaps = [await run(acts.read, contract.ReadServiceInput(ref=ref)) for ref in refs]
    assert all("s3cret" not in snap.model_dump_json() for snap in snaps)
    # KubeRay upgrades a RayService whose password changed; so does the workflow.
    assert snaps[0].spec == snaps[1].spec
    assert snaps[0].goal_hash != snaps[1].goal_hash


async def test_a_serve_config_that_is_not_a_mapping_is_a_violation(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client, serveConfigV2="- just\n- a list\n")
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.schema_violations == [
        "spec.serveConfigV2: serveConfigV2 must be a YAML mapping, not list"
    ]


async def test_a_serve_config_past_the_node_bound_is_a_violation(client: KubeClient) -> None:
    # Read on the event loop on every pass: refused at the bound, before anything is built.
    acts = ServiceActivities(client)
    ref = await make_service(client, serveConfigV2="a: [" + ",".join(["1"] * 125_000) + "]")
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.schema_violations == [
        "spec.serveConfigV2: serveConfigV2 holds more than 25,000 keys and values (line 1)"
    ]


async def test_create_cluster_once_with_kuberay_labels(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    name = f"{ref.name}-abcde"
    create = contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal)
    assert not (await run(acts.create_cluster, create)).stale
    assert not (await run(acts.create_cluster, create)).stale  # a retried activity
    cluster = await client.get(kube.RAYCLUSTERS, "default", name)
    meta = cluster["metadata"]
    assert meta["labels"] == {
        "team": "a",
        "ray.io/originated-from-cr-name": ref.name,
        "ray.io/originated-from-crd": "RayService",
    }
    assert meta["annotations"]["ray.io/hash-without-replicas-and-workers-to-delete"] == goal
    assert meta["annotations"]["ray.io/num-worker-groups"] == "1"
    assert meta["annotations"]["ray.io/kuberay-version"] == "v1.7.0"
    assert [o["uid"] for o in meta["ownerReferences"]] == [ref.uid]
    assert cluster["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    assert (await reasons(client)).count("CreatedRayCluster") == 1
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert [(c.name, c.spec_hash == goal, c.num_worker_groups) for c in snap.clusters] == [
        (name, True, 1)
    ]
    stale = contract.CreateServiceClusterInput(ref=ref, name=f"{ref.name}-fghij", goal_hash="old")
    assert (await run(acts.create_cluster, stale)).stale


async def test_appended_worker_group_is_an_in_place_update(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref, goal, name = await service_with_cluster(client, acts)
    await client.patch(kube.RAYCLUSTERS, "default", name, {"spec": {"suspend": True}})
    extra = {**GROUP, "groupName": "big"}
    groups = {"workerGroupSpecs": [GROUP, extra]}
    await client.patch(
        kube.RAYSERVICES, "default", ref.name, {"spec": {"rayClusterConfig": groups}}
    )
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    view = snap.clusters[0]
    assert view.spec_hash == goal != snap.goal_hash and view.goal_prefix_hash == goal
    await run(
        acts.update_cluster, contract.ClusterNameInput(ref=ref, cluster=name, reason="appended")
    )
    updated = await client.get(kube.RAYCLUSTERS, "default", name)
    assert [g["groupName"] for g in updated["spec"]["workerGroupSpecs"]] == ["small", "big"]
    assert updated["spec"]["suspend"] is True
    after = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert after.clusters[0].spec_hash == after.goal_hash
    assert after.clusters[0].num_worker_groups == 2


@pytest.mark.parametrize("count", ["two", "²", "9" * 5000, "-1"])
async def test_an_unreadable_worker_group_count_matches_no_prefix(
    client: KubeClient, count: str
) -> None:
    # Anyone who can edit the RayCluster can write the annotation: the read must not fail.
    acts = ServiceActivities(client)
    ref, _, name = await service_with_cluster(client, acts)
    annotations = {"ray.io/num-worker-groups": count}
    await client.patch(
        kube.RAYCLUSTERS, "default", name, {"metadata": {"annotations": annotations}}
    )
    [view] = (await run(acts.read, contract.ReadServiceInput(ref=ref))).clusters
    assert (view.num_worker_groups, view.goal_prefix_hash) == (0, "")


async def test_autoscaling_clusters_start_without_replicas(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    name = f"{ref.name}-abcde"
    create = contract.CreateServiceClusterInput(
        ref=ref, name=name, goal_hash=goal, autoscale_from_min=True
    )
    await run(acts.create_cluster, create)
    cluster = await client.get(kube.RAYCLUSTERS, "default", name)
    # Cleared; the CRD's default (0) then lets the cluster grow from minReplicas.
    assert cluster["spec"]["workerGroupSpecs"][0].get("replicas", 0) == 0


async def test_delete_cluster_tolerates_a_second_run(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref, _, name = await service_with_cluster(client, acts)
    delete = contract.ClusterNameInput(ref=ref, cluster=name, reason="retired")
    await run(acts.delete_cluster, delete)
    await run(acts.delete_cluster, delete)
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", name) is None
    assert (await reasons(client)).count("DeletedRayCluster") == 1


async def test_status_finalizer_suspend_and_rollback_writes(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client)
    status = RayServiceStatuses(
        service_status="Running",
        num_serve_endpoints=1,
        active_service_status=RayServiceStatus(ray_cluster_name="x"),
    )
    await run(acts.write_status, contract.WriteServiceStatusInput(ref=ref, status=status))
    await run(
        acts.write_status,
        contract.WriteServiceStatusInput(ref=ref, status=RayServiceStatuses(num_serve_endpoints=0)),
    )
    stored = await client.get(kube.RAYSERVICES, "default", ref.name)
    # As KubeRay (omitempty): no zero numServeEndpoints, no empty serviceStatus.
    assert stored.get("status") in ({}, None), stored.get("status")
    await run(
        acts.write_status,
        contract.WriteServiceStatusInput(ref=ref, status=RayServiceStatuses(service_status="")),
    )
    stored = await client.get(kube.RAYSERVICES, "default", ref.name)
    assert "serviceStatus" not in (stored.get("status") or {})
    cleared = RayServiceStatuses(active_service_status=RayServiceStatus())
    await run(acts.write_status, contract.WriteServiceStatusInput(ref=ref, status=status))
    await run(acts.write_status, contract.WriteServiceStatusInput(ref=ref, status=cleared))
    stored = await client.get(kube.RAYSERVICES, "default", ref.name)
    assert stored["status"] in ({"activeServiceStatus": {}}, {})
    for present in (True, True, False):
        await run(acts.set_finalizer, contract.SetFinalizerInput(ref=ref, present=present))
        meta = (await client.get(kube.RAYSERVICES, "default", ref.name))["metadata"]
        assert meta.get("finalizers", []) == (["ray.io/rayservice-finalizer"] if present else [])
    await run(acts.set_suspend, contract.SetServiceSuspendInput(ref=ref, suspend=True))
    rollback = contract.RollbackAnnotationInput(ref=ref, goal_hash="H", at=datetime.now(UTC))
    await run(acts.record_rollback, rollback)
    stored = await client.get(kube.RAYSERVICES, "default", ref.name)
    assert stored["spec"]["suspend"] is True
    assert stored["metadata"]["annotations"]["ray.io/rollback-requested"] == "H"


async def test_switch_services_keeps_the_cluster_ip(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    serve = ServeActivities(client, DashboardConnector(client))
    routes = RouteActivities(client, HeadLabeler(client, serve))
    ref = await make_service(
        client, serveService={"spec": {"ports": [{"name": "serve", "port": 9000}]}}
    )
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    blue, green = f"{ref.name}-bbbbb", f"{ref.name}-ggggg"
    for name in (blue, green):
        create = contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal)
        await run(acts.create_cluster, create)
    await run(routes.switch_services, contract.SwitchServicesInput(ref=ref, cluster=blue))
    serve_svc = await client.get(kube.SERVICES, "default", f"{ref.name}-serve-svc")
    assert serve_svc["spec"]["selector"] == {"ray.io/cluster": blue, "ray.io/serve": "true"}
    # As KubeRay: the head names its serve port (8000), so the user's port is not used.
    assert [(p["name"], p["port"]) for p in serve_svc["spec"]["ports"]] == [("serve", 8000)]
    assert serve_svc["metadata"]["labels"]["ray.io/serve"] == f"{ref.name}-serve"
    cluster_ip = serve_svc["spec"].get("clusterIP")
    await run(routes.switch_services, contract.SwitchServicesInput(ref=ref, cluster=green))
    await run(routes.switch_services, contract.SwitchServicesInput(ref=ref, cluster=green))
    switched = await client.get(kube.SERVICES, "default", f"{ref.name}-serve-svc")
    assert switched["spec"]["selector"]["ray.io/cluster"] == green
    assert switched["spec"].get("clusterIP") == cluster_ip
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.head_service_cluster == snap.serve_service_cluster == green
    assert sorted(snap.owned_objects) == [
        f"Service/{ref.name}-head-svc",
        f"Service/{ref.name}-serve-svc",
    ]
    assert (await reasons(client)).count("UpdatedService") == 2
    await run(routes.delete_service_objects, contract.ServiceObjectsInput(ref=ref))
    await run(routes.delete_service_objects, contract.ServiceObjectsInput(ref=ref))
    assert (await run(acts.read, contract.ReadServiceInput(ref=ref))).owned_objects == []


async def test_serve_endpoints_count_unique_ready_pods(client: KubeClient) -> None:
    acts = ServiceActivities(client)
    ref = await make_service(client)
    svc = f"{ref.name}-serve-svc"

    def endpoint(uid: str, ready: bool, ip: str) -> dict[str, Any]:
        return {
            "addresses": [ip],
            "conditions": {"ready": ready},
            "targetRef": {"kind": "Pod", "uid": uid},
        }

    for family, ip in (("IPv4", "10.0.0.1"), ("IPv6", "fd00::1")):
        await client.create(
            kube.ENDPOINT_SLICES,
            "default",
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": f"{svc}-{family.lower()}",
                    "labels": {"kubernetes.io/service-name": svc},
                },
                "addressType": family,
                "endpoints": [endpoint("a", True, ip), endpoint("b", False, ip)],
            },
        )
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.serve_endpoints == {svc: 1}


async def report_route_status(client: KubeClient, ref: ObjectRef) -> None:
    """Write what a Gateway controller would: the route's entry for another Gateway is ignored."""
    gateway = await client.get(kube.GATEWAYS, "default", f"{ref.name}-gateway")
    generation = gateway["metadata"].get("generation", 1)
    conditions = [
        {"type": "Accepted", "status": "True", "reason": "Accepted"},
        {"type": "Programmed", "status": "False", "reason": "AddressNotAssigned"},
    ]
    for cond in conditions:
        cond |= {"observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"}
    await client.patch(
        kube.GATEWAYS,
        "default",
        gateway["metadata"]["name"],
        {"status": {"conditions": conditions}},
        sub="status",
    )
    route = await client.get(kube.HTTPROUTES, "default", f"{ref.name}-httproute")
    stale = route["metadata"].get("generation", 1) - 1
    parents = [
        {
            "parentRef": {"name": "other-gateway"},
            "conditions": [{"type": "Accepted", "status": "False", "reason": "NotAllowed"}],
        },
        {
            "parentRef": {"name": f"{ref.name}-gateway", "namespace": "default"},
            "conditions": [{"type": "Accepted", "status": "True", "observedGeneration": stale}],
        },
    ]
    await client.patch(
        kube.HTTPROUTES,
        "default",
        route["metadata"]["name"],
        {"status": {"parents": parents}},
        sub="status",
    )


async def test_gateway_route_weights_and_cleanup(client: KubeClient) -> None:
    crds = kube.Resource(
        "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False
    )
    for crd in gateway_api_crds():
        await client.create(crds, None, crd)
    acts = ServiceActivities(client)
    serve = ServeActivities(client, DashboardConnector(client))
    routes = RouteActivities(client, HeadLabeler(client, serve))
    strategy = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "maxSurgePercent": 50,
            "stepSizePercent": 25,
            "intervalSeconds": 5,
            "gatewayClassName": "local",
        },
    }
    ref = await make_service(client, upgradeStrategy=strategy)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    blue, green = f"{ref.name}-bbbbb", f"{ref.name}-ggggg"
    for name in (blue, green):
        await run(
            acts.create_cluster,
            contract.CreateServiceClusterInput(ref=ref, name=name, goal_hash=goal),
        )
    for weights in ({blue: 100, green: 0}, {blue: 75, green: 25}, {blue: 75, green: 25}):
        await run(routes.reconcile_gateway, contract.GatewayInput(ref=ref, weights=weights))
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.route_weights == {blue: 75, green: 25} and not snap.gateway_ready
    assert set(snap.serve_endpoints) == {
        f"{ref.name}-serve-svc",
        f"{blue}-serve-svc",
        f"{green}-serve-svc",
    }
    per_cluster = await client.get(kube.SERVICES, "default", f"{green}-serve-svc")
    assert per_cluster["metadata"]["ownerReferences"][0]["name"] == green
    assert sorted(snap.owned_objects) == [
        f"Gateway/{ref.name}-gateway",
        f"HTTPRoute/{ref.name}-httproute",
    ]
    found = await reasons(client)
    assert found.count("CreatedGateway") == found.count("CreatedHTTPRoute") == 1
    objects = contract.ServiceObjectsInput(ref=ref)
    assert await run(routes.read_gateway_status, objects) == contract.GatewayRouteStatus()
    await report_route_status(client, ref)
    reported = await run(routes.read_gateway_status, objects)
    assert [(c.type, c.status, c.current) for c in reported.gateway] == [
        ("Accepted", "True", True),
        ("Programmed", "False", True),
    ]
    assert [(c.type, c.current) for c in reported.route] == [("Accepted", False)]
    await run(routes.delete_service_objects, contract.ServiceObjectsInput(ref=ref))
    assert (await run(acts.read, contract.ReadServiceInput(ref=ref))).owned_objects == []


async def test_missing_gateway_api_is_a_warning_and_a_final_failure(client: KubeClient) -> None:
    """No Gateway API CRDs (devcluster serves none by default): say so, do not retry."""
    acts = ServiceActivities(client)
    serve = ServeActivities(client, DashboardConnector(client))
    routes = RouteActivities(client, HeadLabeler(client, serve))
    strategy = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "maxSurgePercent": 50,
            "stepSizePercent": 25,
            "intervalSeconds": 5,
            "gatewayClassName": "istio",
        },
    }
    ref = await make_service(client, upgradeStrategy=strategy)
    goal = (await run(acts.read, contract.ReadServiceInput(ref=ref))).goal_hash
    blue = f"{ref.name}-bbbbb"
    await run(
        acts.create_cluster, contract.CreateServiceClusterInput(ref=ref, name=blue, goal_hash=goal)
    )
    for _ in range(2):  # a second run records no second Event
        with pytest.raises(ApplicationError) as raised:
            await run(routes.reconcile_gateway, contract.GatewayInput(ref=ref, weights={blue: 100}))
        assert raised.value.type == contract.GATEWAY_API_MISSING and raised.value.non_retryable
    assert "serves no Gateway (gateway.networking.k8s.io/v1)" in raised.value.message
    events = [e for e in await client.list_all(kube.EVENTS, "default") if e["type"] == "Warning"]
    (event,) = events
    assert event["reason"] == "FailedToCreateGateway"
    assert event["involvedObject"]["uid"] == ref.uid
    assert "Gateway API CRDs are not installed" in event["message"]
    assert "'istio'" in event["message"]
    # The snapshot and the suspend cleanup still work without the API.
    snap = await run(acts.read, contract.ReadServiceInput(ref=ref))
    assert snap.route_weights is None and not snap.gateway_ready
    await run(routes.delete_service_objects, contract.ServiceObjectsInput(ref=ref))
