"""The pure RayService builders: hashes, Serve config, switching Services, Gateway API objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from activities.builders import rayservice as rs
from activities.builders import rayservice_gateway as gw
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayservice import RayService
from tests.activities.rayservice.test_kube_effects import SPEC
from tests.alias_bombs import BOMB_584, SMALL_BOMB

GROUP: dict[str, Any] = SPEC["rayClusterConfig"]["workerGroupSpecs"][0]


def service(**spec: Any) -> RayService:
    return RayService.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayService",
            "metadata": {"name": "svc", "namespace": "ns", "uid": "u1"},
            "spec": {**copy.deepcopy(SPEC), **spec},
        }
    )


def cluster(name: str = "svc-abcde") -> RayCluster:
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "ns", "uid": "c1"},
            "spec": copy.deepcopy(SPEC["rayClusterConfig"]),
        }
    )


def spec_with(**fields: Any) -> RayClusterSpec:
    return RayClusterSpec.model_validate({**copy.deepcopy(SPEC["rayClusterConfig"]), **fields})


def test_goal_hash_ignores_suspend_and_scaling_but_not_the_template() -> None:
    base = rs.goal_hash(spec_with())
    scaled = {**GROUP, "replicas": 7, "minReplicas": 1, "maxReplicas": 9}
    scaled["scaleStrategy"] = {"workersToDelete": ["p"]}
    assert rs.goal_hash(spec_with(suspend=True, workerGroupSpecs=[scaled])) == base
    assert rs.goal_hash(spec_with(rayVersion="2.61.0")) != base


def test_goal_hash_cut_to_fewer_groups_matches_the_older_spec() -> None:
    appended = spec_with(workerGroupSpecs=[GROUP, {**GROUP, "groupName": "big"}])
    assert rs.goal_hash(appended) != rs.goal_hash(spec_with())
    assert rs.goal_hash(appended, worker_groups=1) == rs.goal_hash(spec_with())


def test_serve_config_parse_errors_never_quote_the_text() -> None:
    assert rs.parse_serve_config("applications: []\n") == {"applications": []}
    with pytest.raises(rs.ServeConfigError) as err:
        rs.parse_serve_config("token: [s3cr3t\n")
    assert "s3cr3t" not in str(err.value) and "line" in str(err.value)


@pytest.mark.parametrize("bomb", [SMALL_BOMB, BOMB_584], ids=["small-bomb", "bomb-584"])
def test_an_alias_bomb_in_the_serve_config_is_refused_unexpanded(bomb: str) -> None:
    with pytest.raises(rs.ServeConfigError) as err:
        rs.parse_serve_config(bomb)
    assert str(err.value) == (
        "serveConfigV2 expands to more than 25,000 keys and values through its aliases "
        "(*name) (line 5)"
    )


def test_serve_service_merges_the_users_and_selects_serving_pods() -> None:
    user = {"metadata": {"name": "custom", "labels": {"a": "b"}}, "spec": {"type": "NodePort"}}
    built = rs.build_rayservice_serve_service(service(serveService=user), cluster())
    assert built["metadata"]["name"] == "custom"
    assert built["metadata"]["labels"] == {
        "a": "b",
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
        "ray.io/serve": "svc-serve",
    }
    assert built["spec"]["selector"] == {"ray.io/cluster": "svc-abcde", "ray.io/serve": "true"}
    assert built["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    assert built["spec"]["type"] == "NodePort"
    assert [o["uid"] for o in built["metadata"]["ownerReferences"]] == ["u1"]


def test_serve_service_ports_are_the_heads_serve_ports_as_kuberay_builds_them() -> None:
    """KubeRay's custom-serve-service sample: a user's own port is dropped while the head
    names a serve port; without one, only the user's port named `serve` is kept."""
    custom = {"name": "custom", "port": 12345, "targetPort": 12345}
    user = {"spec": {"type": "LoadBalancer", "ports": [custom]}}
    built = rs.build_rayservice_serve_service(service(serveService=user), cluster())
    assert built["spec"]["ports"] == [{"name": "serve", "port": 8000}]

    bare = cluster()
    gcs_only = [{"name": "gcs-server", "containerPort": 6379}]
    bare.spec.head_group_spec.template["spec"]["containers"][0]["ports"] = gcs_only
    serve = {"name": "serve", "port": 9000, "targetPort": 9001}
    user = {"spec": {"ports": [custom, serve]}}
    built = rs.build_rayservice_serve_service(service(serveService=user), bare)
    assert built["spec"]["ports"] == [{"name": "serve", "port": 9000}]


def test_head_service_for_the_rayservice_selects_the_target_head() -> None:
    built = rs.build_rayservice_head_service(service(), cluster())
    assert built["metadata"]["name"] == "svc-head-svc"
    assert built["spec"]["selector"]["ray.io/cluster"] == "svc-abcde"
    assert built["metadata"]["labels"]["ray.io/node-type"] == "head"


def test_switched_keeps_the_allocated_cluster_ip() -> None:
    old = rs.build_rayservice_serve_service(service(), cluster("svc-old"))
    old["spec"]["clusterIP"] = "10.96.0.7"
    new = rs.build_rayservice_serve_service(service(), cluster("svc-new"))
    assert rs.switched(old, old) is None
    updated = rs.switched(old, new)
    assert updated is not None and updated["spec"]["clusterIP"] == "10.96.0.7"
    assert rs.selected_cluster(updated) == "svc-new"


def test_ready_endpoints_are_unique_pods() -> None:
    slices = [
        {
            "endpoints": [
                {"addresses": ["10.0.0.1"], "targetRef": {"uid": "a"}},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": False}},
            ]
        },
        {"endpoints": [{"addresses": ["fd00::1"], "targetRef": {"uid": "a"}}]},
    ]
    assert rs.ready_endpoint_count(slices) == 1


def test_gateway_and_route_for_incremental_upgrades() -> None:
    options = {"maxSurgePercent": 50, "stepSizePercent": 25, "intervalSeconds": 30}
    strategy = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {**options, "gatewayClassName": "local"},
    }
    svc = service(upgradeStrategy=strategy)
    gateway = gw.build_gateway(svc)
    assert gateway["metadata"]["name"] == "svc-gateway"
    assert gateway["spec"]["gatewayClassName"] == "local"
    assert gateway["spec"]["listeners"] == [{"name": "http", "protocol": "HTTP", "port": 80}]
    route = gw.build_httproute(svc, {"svc-a": 70, "svc-b": 30}, 8000)
    refs = route["spec"]["rules"][0]["backendRefs"]
    assert [(r["name"], r["port"], r["weight"]) for r in refs] == [
        ("svc-a-serve-svc", 8000, 70),
        ("svc-b-serve-svc", 8000, 30),
    ]
    assert gw.route_weights(route) == {"svc-a": 70, "svc-b": 30}
    assert not gw.gateway_ready(gateway, route)
    accepted = [{"type": t, "status": "True"} for t in ("Accepted", "Programmed", "ResolvedRefs")]
    gateway["status"] = {"conditions": accepted}
    route["status"] = {"parents": [{"conditions": accepted}]}
    assert gw.gateway_ready(gateway, route)
    per_cluster = gw.build_cluster_serve_service(svc, cluster("svc-a"))
    assert per_cluster["metadata"]["name"] == "svc-a-serve-svc"
    assert per_cluster["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
