"""Pods stamped for a batch scheduler, from KubeRay's own samples for KAI and YuniKorn."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from activities.builders import DEFAULT_OPTIONS, build_head_pod, build_worker_pod
from activities.builders.batch_scheduling import KAI, YUNIKORN
from activities.builders.rayjob import (
    InvalidJobSpecError,
    build_rayjob_cluster,
    build_submitter_job,
)
from crds.enums import JobSubmissionMode
from crds.loading import parse_ray_object
from crds.raycluster import RayCluster
from crds.rayjob import RayJob
from tests.reference import KUBERAY_SAMPLES


def sample(file: str, kind: str) -> Any:
    docs = yaml.safe_load_all((KUBERAY_SAMPLES / file).read_text())
    (doc,) = [d for d in docs if isinstance(d, dict) and d.get("kind") == kind]
    doc["metadata"].setdefault("namespace", "default")
    doc["metadata"]["uid"] = "u-1"
    return parse_ray_object(doc)


def options(scheduler: str) -> Any:
    return DEFAULT_OPTIONS.__class__(batch_scheduler=scheduler)


def pods(cluster: RayCluster, scheduler: str) -> list[Any]:
    opts = options(scheduler)
    found = [build_head_pod(cluster, f"{cluster.name}-head", opts)]
    for group in cluster.spec.worker_group_specs or []:
        name = f"{cluster.name}-{group.group_name}-x"
        found.append(build_worker_pod(cluster, group.group_name, name, options=opts))
    return found


def test_without_a_batch_scheduler_nothing_is_stamped() -> None:
    cluster = sample("ray-cluster.kai-scheduler.yaml", "RayCluster")
    for pod in pods(cluster, ""):
        assert "schedulerName" not in pod["spec"]
        assert "kai.scheduler/queue" not in pod["metadata"]["labels"]


def test_kai_stamps_its_name_and_the_queue() -> None:
    cluster = sample("ray-cluster.kai-scheduler.yaml", "RayCluster")
    for pod in pods(cluster, KAI):
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"


def test_kai_refuses_a_k8s_job_mode_rayjob_and_takes_the_others() -> None:
    rayjob = sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    with pytest.raises(InvalidJobSpecError, match="cannot gang-schedule a K8sJobMode RayJob"):
        build_rayjob_cluster(rayjob, "c", "j", 1, batch_scheduler=KAI)
    spec = rayjob.spec.model_copy(update={"submission_mode": JobSubmissionMode.HTTP})
    http = rayjob.model_copy(update={"spec": spec})
    cluster = build_rayjob_cluster(http, "c", "j", 1, batch_scheduler=KAI)
    assert "schedulerName" not in cluster["spec"]  # HTTPMode: the cluster is not stamped


def test_yunikorn_stamps_the_application_queue_and_task_groups() -> None:
    cluster = sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    head, worker = pods(cluster, YUNIKORN)
    for pod, group in ((head, "headgroup"), (worker, "worker")):
        meta = pod["metadata"]
        assert pod["spec"]["schedulerName"] == "yunikorn"
        assert meta["labels"]["applicationId"] == "test-yunikorn-0"
        assert meta["labels"]["queue"] == "root.test"
        assert meta["annotations"]["yunikorn.apache.org/task-group-name"] == group
    groups = json.loads(head["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    # One head, the worker group's minReplicas; each with one pod's requests (limits fill in).
    assert groups == [
        {"minResource": {"cpu": "1", "memory": "2Gi"}, "name": "headgroup", "minMember": 1},
        {"minResource": {"cpu": "1", "memory": "1Gi"}, "name": "worker", "minMember": 2},
    ]
    assert (
        worker["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]
        == (head["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    )


def test_yunikorn_without_gang_scheduling_adds_no_task_groups() -> None:
    cluster = sample("ray-cluster.yunikorn-scheduler.yaml", "RayCluster")
    labels = {k: v for k, v in cluster.labels.items() if k != "ray.io/gang-scheduling-enabled"}
    plain = cluster.model_copy(
        update={"metadata": cluster.metadata.model_copy(update={"labels": labels})}
    )
    for pod in pods(plain, YUNIKORN):
        assert pod["metadata"]["labels"]["applicationId"] == "test-yunikorn-0"
        assert "yunikorn.apache.org/task-groups" not in (pod["metadata"].get("annotations") or {})


def test_a_yunikorn_rayjob_stamps_its_cluster_and_its_submitter() -> None:
    rayjob = sample("ray-job.yunikorn-scheduler.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    manifest = build_rayjob_cluster(rayjob, "c-x", "j", 1, batch_scheduler=YUNIKORN)
    meta = manifest["metadata"]
    assert "schedulerName" not in manifest["spec"]  # a RayCluster has none of its own
    assert meta["labels"]["applicationId"] == "rayjob-yunikorn-0"
    assert meta["labels"]["queue"] == "root.test"
    assert "yunikorn.apache.org/task-group-name" not in meta["annotations"]
    groups = json.loads(meta["annotations"]["yunikorn.apache.org/task-groups"])
    assert [g["name"] for g in groups][-1] == "submittergroup"
    submitter = groups[-1]
    # KubeRay's default submitter: requests 500m/200Mi (limits only fill in what is missing).
    assert submitter == {
        "minResource": {"cpu": "500m", "memory": "200Mi"},
        "name": "submittergroup",
        "minMember": 1,
    }
    # The cluster's pods then take the RayJob's task groups from it.
    cluster = RayCluster.model_validate(manifest | {"metadata": meta | {"uid": "u-2"}})
    head = build_head_pod(cluster, "c-x-head", options(YUNIKORN))
    assert (
        head["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]
        == (meta["annotations"]["yunikorn.apache.org/task-groups"])
    )
    job = build_submitter_job(rayjob, cluster, "j", "http://h:8265", 1, options(YUNIKORN))
    template = job["spec"]["template"]
    assert template["spec"]["schedulerName"] == "yunikorn"
    assert template["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == (
        "submittergroup"
    )


def test_kueues_queue_label_passes_from_a_rayjob_to_its_cluster() -> None:
    """Kueue admits a RayJob by its `kueue.x-k8s.io/queue-name` label and `suspend`; KubeRay
    copies the RayJob's labels to its cluster, and so does this, whatever the scheduler."""
    rayjob = sample("ray-job.kueue-toy-sample.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    rayjob.metadata.labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    for scheduler in ("", KAI, YUNIKORN):
        try:
            manifest = build_rayjob_cluster(rayjob, "c-x", "j", 1, batch_scheduler=scheduler)
        except InvalidJobSpecError:
            assert scheduler == KAI  # a K8sJobMode RayJob: KAI's own refusal
            continue
        assert manifest["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
