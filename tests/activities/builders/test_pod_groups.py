"""The gang schedulers' PodGroups and pod metadata, from KubeRay's Volcano and scheduler-plugins
samples (`batchscheduler/volcano`, `batchscheduler/scheduler-plugins`)."""

from __future__ import annotations

import copy

import pytest

from activities.builders import build_head_pod, pod_groups
from activities.builders.batch_scheduling import (
    SCHEDULER_PLUGINS,
    VOLCANO,
    UnschedulableError,
    check_submission,
    label_problem,
)
from activities.builders.rayjob import (
    InvalidJobSpecError,
    build_rayjob_cluster,
    build_submitter_job,
)
from activities.raycluster.owned_objects import wanted_objects
from crds.enums import JobSubmissionMode
from crds.raycluster import RayCluster
from crds.rayjob import RayJob
from tests.activities.builders.test_batch_scheduling import options, pods, sample

TIER = "volcano.sh/network-topology-highest-tier-allowed"


def test_volcano_pods_name_their_pod_group_queue_and_group() -> None:
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    found = pods(cluster, VOLCANO)
    for pod, group in zip(found, ["headgroup", "worker"], strict=False):
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "kuberay-test-queue"
        annotations = pod["metadata"]["annotations"]
        assert annotations["scheduling.k8s.io/group-name"] == "ray-test-cluster-0-pg"
        assert annotations["volcano.sh/task-spec"] == group


def test_a_volcano_cluster_pod_group_counts_the_head_and_desired_workers() -> None:
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    group = pod_groups.cluster_pod_group(VOLCANO, cluster)
    assert group is not None
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["metadata"]["name"] == "ray-test-cluster-0-pg"
    (owner,) = group["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("RayCluster", "u-1", True)
    # The head's requests (1 CPU, 2Gi) and two workers of 1 CPU, 1Gi: requests win over limits.
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3", "memory": "4Gi"},
        "queue": "kuberay-test-queue",
    }


def test_with_autoscaling_volcano_counts_the_minimum_workers() -> None:
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    doc = cluster.to_json_dict()
    doc["spec"]["enableInTreeAutoscaling"] = True
    doc["spec"]["workerGroupSpecs"][0].update(replicas=4, minReplicas=1, maxReplicas=5)
    group = pod_groups.cluster_pod_group(VOLCANO, RayCluster.model_validate(doc))
    assert group is not None
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["minResources"] == {"cpu": "2", "memory": "3Gi"}


def test_volcano_reads_priority_and_network_topology_from_the_labels() -> None:
    cluster = sample("ray-cluster.volcano-scheduler.yaml", "RayCluster")
    doc = cluster.to_json_dict()
    doc["metadata"]["labels"] = {
        "ray.io/priority-class-name": "high",
        "volcano.sh/network-topology-mode": "hard",
        TIER: "2",
    }
    doc["metadata"]["annotations"] = {"team": "a"}
    group = pod_groups.cluster_pod_group(VOLCANO, RayCluster.model_validate(doc))
    assert group is not None
    assert group["spec"]["priorityClassName"] == "high"
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert group["metadata"]["annotations"] == {"team": "a"}  # the CR's, as KubeRay v1.7 copies


@pytest.mark.parametrize("tier", ["two", " 2", "2.0", "1_0", "٣", ""])
def test_a_tier_go_cannot_read_is_a_problem_with_its_label(tier: str) -> None:
    labels = {"volcano.sh/network-topology-mode": "hard", TIER: tier}
    assert TIER in label_problem(labels)
    assert label_problem({**labels, TIER: "-1"}) == ""
    assert label_problem({TIER: tier}) == ""  # without a mode the tier is not read


def test_a_cluster_with_an_unreadable_tier_wants_a_pod_group_it_cannot_make() -> None:
    cluster = sample("ray-cluster.volcano-scheduler.yaml", "RayCluster")
    doc = cluster.to_json_dict()
    doc["metadata"]["labels"] = {"volcano.sh/network-topology-mode": "hard", TIER: "x"}
    wanted = wanted_objects(RayCluster.model_validate(doc), options(VOLCANO))
    assert wanted[-1].key == "PodGroup/ray-test-cluster-0-pg"
    assert TIER in wanted[-1].problem


def test_a_volcano_rayjob_pod_group_reserves_the_submitter_too() -> None:
    rayjob = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    group = pod_groups.rayjob_pod_group(VOLCANO, rayjob)
    assert group is not None
    assert group["metadata"]["name"] == "ray-rayjob-sample-0-pg"
    assert group["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    # Members: the head and two workers, the submitter left out; its 500m and 200Mi counted.
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3500m", "memory": "4296Mi"},
        "queue": "kuberay-test-queue",
    }
    http = copy.deepcopy(rayjob)
    http.spec.submission_mode = JobSubmissionMode.HTTP
    http_group = pod_groups.rayjob_pod_group(VOLCANO, http)
    assert http_group is not None
    assert http_group["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi"}


def test_a_volcano_rayjob_cluster_and_its_pods_use_the_rayjob_pod_group() -> None:
    rayjob = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    manifest = build_rayjob_cluster(rayjob, "c-x", "j", 1, batch_scheduler=VOLCANO)
    annotations = manifest["metadata"]["annotations"]
    assert annotations["scheduling.k8s.io/group-name"] == "ray-rayjob-sample-0-pg"
    assert annotations["volcano.sh/task-spec"] == ""
    cluster = RayCluster.model_validate(
        manifest | {"metadata": manifest["metadata"] | {"uid": "2"}}
    )
    assert pod_groups.cluster_pod_group(VOLCANO, cluster) is None  # the RayJob's gangs it
    head = build_head_pod(cluster, "c-x-head", options(VOLCANO))
    assert head["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == (
        "ray-rayjob-sample-0-pg"
    )


def test_a_volcano_rayjob_with_an_unreadable_tier_is_refused() -> None:
    rayjob = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    rayjob.metadata.labels = {"volcano.sh/network-topology-mode": "soft", TIER: "high"}
    with pytest.raises(InvalidJobSpecError, match=TIER):
        build_rayjob_cluster(rayjob, "c-x", "j", 1, batch_scheduler=VOLCANO)


def test_volcano_updates_only_members_and_resources_and_compares_amounts() -> None:
    cluster = sample("ray-cluster.volcano-scheduler-queue.yaml", "RayCluster")
    wanted = pod_groups.cluster_pod_group(VOLCANO, cluster)
    assert wanted is not None
    stored = copy.deepcopy(wanted)
    stored["spec"]["minResources"] = {"cpu": "3000m", "memory": "4096Mi"}
    stored["spec"]["queue"] = "moved-by-someone"
    assert not pod_groups.needs_update(stored, wanted)  # the same amounts, spelled otherwise
    stored["spec"]["minMember"] = 5
    assert pod_groups.needs_update(stored, wanted)
    updated = pod_groups.updated(stored, wanted)
    assert updated["spec"]["minMember"] == 3
    assert updated["spec"]["queue"] == "moved-by-someone"
    assert stored["spec"]["minMember"] == 5  # the stored copy is left as it was


def test_scheduler_plugins_gang_a_labelled_cluster_under_its_name() -> None:
    cluster = sample("ray-cluster.scheduler-plugins.yaml", "RayCluster")
    group = pod_groups.cluster_pod_group(SCHEDULER_PLUGINS, cluster)
    assert group is not None
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["metadata"]["name"] == "test-podgroup-0"
    (owner,) = group["metadata"]["ownerReferences"]
    assert "controller" not in owner and owner["uid"] == "u-1"
    assert group["spec"] == {"minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}}
    for pod in pods(cluster, SCHEDULER_PLUGINS):
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "test-podgroup-0"
    (wanted,) = [o for o in wanted_objects(cluster, options(SCHEDULER_PLUGINS)) if "Pod" in o.key]
    assert wanted.resource.group == "scheduling.x-k8s.io"
    assert wanted.updated({**group, "spec": {"minMember": 9}}) is None  # made once


def test_scheduler_plugins_leave_an_unlabelled_cluster_to_itself() -> None:
    cluster = sample("ray-cluster.volcano-scheduler.yaml", "RayCluster")
    assert pod_groups.cluster_pod_group(SCHEDULER_PLUGINS, cluster) is None
    head = build_head_pod(cluster, "h", options(SCHEDULER_PLUGINS))
    assert head["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert "scheduling.x-k8s.io/pod-group" not in head["metadata"]["labels"]


def test_scheduler_plugins_take_no_rayjob() -> None:
    rayjob = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    with pytest.raises(UnschedulableError, match="RayClusters only"):
        check_submission(SCHEDULER_PLUGINS, rayjob.spec, rayjob.labels)
    check_submission(VOLCANO, rayjob.spec, rayjob.labels)


def test_a_volcano_rayjob_on_an_existing_cluster_has_no_pod_group_to_name() -> None:
    """Regression: its submitter named `ray-<rayjob>-pg`, which nothing makes, and would wait
    for it; Volcano groups a pod that names none by itself."""
    rayjob = sample("ray-job.volcano-scheduler-queue.yaml", "RayJob")
    assert isinstance(rayjob, RayJob)
    cluster = RayCluster.model_validate(
        build_rayjob_cluster(rayjob, "c-x", "j", 1) | {"metadata": {"name": "c-x", "uid": "2"}}
    )
    rayjob.spec.ray_cluster_spec = None
    rayjob.spec.cluster_selector = {"ray.io/cluster": "c-x"}
    assert pod_groups.rayjob_pod_group(VOLCANO, rayjob) is None
    job = build_submitter_job(rayjob, cluster, "j", "http://h:8265", 1, options(VOLCANO))
    template = job["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert "scheduling.k8s.io/group-name" not in (template["metadata"].get("annotations") or {})
    assert template["metadata"]["labels"]["volcano.sh/queue-name"] == "kuberay-test-queue"
