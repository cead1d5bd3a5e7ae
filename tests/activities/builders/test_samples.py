"""Every RayCluster spec among KubeRay's samples builds, with the core invariants in place.

RayJob (`spec.rayClusterSpec`) and RayService (`spec.rayClusterConfig`) samples embed cluster
specs too; they are wrapped into a RayCluster labelled the way their controller labels it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from activities.builders import (
    build_head_pod,
    build_head_service,
    build_headless_service,
    build_serve_service,
    build_worker_pod,
    desired_resources,
    head_pod_name_prefix,
    pod_name,
    recreate_hash,
    wants_headless_service,
    worker_pod_name_prefix,
)
from activities.builders.cluster_services import service_ports
from crds.loading import is_ray_object, parse_ray_object
from crds.raycluster import RayCluster, RayClusterSpec
from crds.rayjob import RayJob
from crds.rayservice import RayService
from tests.reference import sample_files


def _clusters() -> list[Any]:
    params = []
    for path in sample_files():
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if not isinstance(doc, dict) or not is_ray_object(doc):
                continue
            if doc.get("kind") not in ("RayCluster", "RayJob", "RayService"):
                continue
            model = _as_cluster(parse_ray_object(doc))
            if model is not None:
                params.append(pytest.param(model, id=f"{_name(path)}#{index}"))
    return params


def _name(path: Path) -> str:
    return str(path.relative_to(path.parents[1] if path.parent.name != "samples" else path.parent))


def _as_cluster(obj: Any) -> RayCluster | None:
    spec: RayClusterSpec | None
    labels: dict[str, str] = {}
    if isinstance(obj, RayCluster):
        model = obj.model_copy(deep=True)
    else:
        if isinstance(obj, RayJob):
            spec, kind = obj.spec.ray_cluster_spec, "RayJob"
        elif isinstance(obj, RayService):
            spec, kind = obj.spec.ray_cluster_config, "RayService"
        else:
            return None
        if spec is None:
            return None
        labels = {"ray.io/originated-from-crd": kind, "ray.io/originated-from-cr-name": obj.name}
        model = RayCluster.model_validate(
            {
                "metadata": {"name": f"{obj.name}-abcde", "labels": labels},
                "spec": spec.to_json_dict(),
            }
        )
    model.metadata.uid = "uid-sample"
    model.metadata.namespace = model.metadata.namespace or "default"
    return model


CLUSTERS = _clusters()


def test_samples_were_found() -> None:
    assert len(CLUSTERS) > 60


@pytest.mark.parametrize("model", CLUSTERS)
def test_sample_builds(model: RayCluster) -> None:
    before = model.model_dump()
    fqdn = f"{model.name}-head-svc.{model.namespace}.svc.cluster.local"
    head = build_head_pod(model, pod_name(head_pod_name_prefix(model), "abcde"))
    _check_pod(model, head, "head", "headgroup")
    assert head["spec"]["containers"][0]["ports"]
    assert head["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] == (
        recreate_hash(model.spec)
    )
    for group in model.spec.worker_group_specs or []:
        name = pod_name(worker_pod_name_prefix(model, group.group_name), "fghij")
        worker = build_worker_pod(model, group.group_name, name)
        _check_pod(model, worker, "worker", group.group_name)
        assert len(name) <= 63
        init = [c["name"] for c in worker["spec"].get("initContainers") or []]
        assert "wait-gcs-ready" in init
        if not model.spec.head_group_spec.head_service:
            env = {v["name"]: v.get("value") for v in worker["spec"]["containers"][0]["env"]}
            assert env["FQ_RAY_IP"] == fqdn
    service = build_head_service(model)
    assert service["spec"]["selector"]["ray.io/node-type"] == "head"
    ports = {port["name"]: port["port"] for port in service["spec"]["ports"]}
    assert ports["metrics"] == service_ports(model)["metrics"]
    assert set(service_ports(model)) <= set(ports)
    if wants_headless_service(model):
        assert build_headless_service(model)["metadata"]["name"] == f"{model.name}-headless"
    if any(p.startswith("serve") for p in service_ports(model)):
        assert build_serve_service(model)["spec"]["ports"]
    desired_resources(model)
    assert model.model_dump() == before


def _check_pod(model: RayCluster, pod: dict[str, Any], node_type: str, group: str) -> None:
    metadata = pod["metadata"]
    labels = metadata["labels"]
    assert labels["ray.io/cluster"] == model.name
    assert labels["ray.io/node-type"] == node_type
    assert labels["ray.io/group"] == group
    assert labels["ray.io/is-ray-node"] == "yes"
    assert labels["app.kubernetes.io/created-by"] == "kuberay-operator"
    assert metadata["namespace"] == model.namespace
    owner = metadata["ownerReferences"][-1]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("RayCluster", model.name, "uid-sample")
    assert owner["controller"] is True
    ray = pod["spec"]["containers"][0]
    env = {var["name"]: var.get("value") for var in ray["env"]}
    start = env["KUBERAY_GEN_RAY_START_CMD"]
    assert start.startswith("ray start --head " if node_type == "head" else "ray start ")
    assert " --block " in start
    overwrite = model.annotations.get("ray.io/overwrite-container-cmd") == "true"
    command_text = " ".join([*(ray.get("command") or []), *(ray.get("args") or [])])
    if not overwrite:
        assert "ray start" in command_text
    assert any(port["name"] == "metrics" for port in ray["ports"])
    assert "livenessProbe" in ray
    assert "readinessProbe" in ray
