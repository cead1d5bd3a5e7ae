"""The gang schedulers' PodGroups through the RayCluster and RayJob activities, on devcluster
(which stores PodGroups as a cluster with Volcano's or scheduler-plugins' CRDs would)."""

from __future__ import annotations

from typing import Any

import pytest

from activities.builders import BuildOptions
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.raycluster import contract
from activities.raycluster.kube_effects import ClusterActivities
from activities.rayjob import contract as job_contract
from activities.rayjob.kube_effects import JobActivities
from crds.enums import JobDeploymentStatus
from crds.rayjob import RayJobStatus
from crds.refs import ObjectRef
from tests.activities.raycluster.test_kube_effects import make_cluster, run
from tests.activities.rayjob.test_kube_effects import make_rayjob, reasons

VOLCANO = BuildOptions(batch_scheduler="volcano")
PLUGINS = BuildOptions(batch_scheduler="scheduler-plugins")
TIER = "volcano.sh/network-topology-highest-tier-allowed"


async def label(client: KubeClient, ref: ObjectRef, labels: dict[str, str]) -> None:
    patch = {"metadata": {"labels": labels}}
    await client.patch(kube.RAYCLUSTERS, ref.namespace, ref.name, patch)


async def ensure(acts: ClusterActivities, ref: ObjectRef, generation: int) -> list[str]:
    """Read, then apply what the read found missing; what it found."""
    missing: list[str] = (await run(acts.read, contract.ReadClusterInput(ref=ref))).missing_objects
    params = contract.ApplyClusterInput(ref=ref, generation=generation, ensure_objects=True)
    await run(acts.apply, params)
    return missing


async def test_a_volcano_pod_group_is_made_then_follows_the_replicas(client: KubeClient) -> None:
    acts = ClusterActivities(client, VOLCANO)
    ref = await make_cluster(client)
    await label(client, ref, {"volcano.sh/queue-name": "q"})
    name = f"ray-{ref.name}-pg"
    assert f"PodGroup/{name}" in await ensure(acts, ref, 1)
    group = await client.get(kube.VOLCANO_POD_GROUPS, "default", name)
    assert group["spec"]["minMember"] == 2 and group["spec"]["queue"] == "q"
    assert f"PodGroup/{name}" not in await ensure(acts, ref, 1)  # in step: left alone

    patch: list[dict[str, Any]] = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}
    ]
    await client.patch(kube.RAYCLUSTERS, "default", ref.name, patch, content_type=kube.JSON_PATCH)
    assert f"PodGroup/{name}" in await ensure(acts, ref, 2)
    group = await client.get(kube.VOLCANO_POD_GROUPS, "default", name)
    assert group["spec"]["minMember"] == 4 and group["spec"]["queue"] == "q"
    assert not [r for r in await reasons(client, ref) if "PodGroup" in r]  # KubeRay records none


async def test_an_unreadable_tier_label_is_a_warning_and_no_pod_group(client: KubeClient) -> None:
    acts = ClusterActivities(client, VOLCANO)
    ref = await make_cluster(client)
    await label(client, ref, {"volcano.sh/network-topology-mode": "hard", TIER: "top"})
    with pytest.raises(Exception, match=TIER):
        await ensure(acts, ref, 1)
    assert (
        await client.get_or_none(kube.VOLCANO_POD_GROUPS, "default", f"ray-{ref.name}-pg") is None
    )
    events = await client.list_all(kube.EVENTS, "default")
    (event,) = [
        e for e in events if e["involvedObject"]["uid"] == ref.uid and e["type"] != "Normal"
    ]
    assert (event["type"], event["reason"]) == ("Warning", "FailedToCreatePodGroup")
    assert TIER in event["message"]


async def test_scheduler_plugins_make_a_labelled_clusters_pod_group_once(
    client: KubeClient,
) -> None:
    acts = ClusterActivities(client, PLUGINS)
    ref = await make_cluster(client)
    assert not [m for m in await ensure(acts, ref, 1) if m.startswith("PodGroup/")]
    await label(client, ref, {"ray.io/gang-scheduling-enabled": "true"})
    assert f"PodGroup/{ref.name}" in await ensure(acts, ref, 1)
    group = await client.get(kube.PLUGINS_POD_GROUPS, "default", ref.name)
    assert group["spec"]["minMember"] == 2
    assert group["metadata"]["ownerReferences"][0]["uid"] == ref.uid


async def test_a_volcano_rayjob_makes_its_pod_group_before_its_cluster(client: KubeClient) -> None:
    acts = JobActivities(client, VOLCANO)
    ref = await make_rayjob(client)
    params = job_contract.CreateClusterInput(
        ref=ref, cluster_name=f"{ref.name}-abcde", job_id="x", attempt=1
    )
    assert (await run(acts.create_cluster, params)).created
    group = await client.get(kube.VOLCANO_POD_GROUPS, "default", f"ray-{ref.name}-pg")
    # The head and one worker; the default submitter's 500m and 200Mi reserved besides.
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["minResources"] == {"cpu": "500m", "memory": "200Mi"}
    assert group["metadata"]["ownerReferences"][0]["uid"] == ref.uid
    cluster = await client.get(kube.RAYCLUSTERS, "default", params.cluster_name)
    assert cluster["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == (
        f"ray-{ref.name}-pg"
    )
    assert not (await run(acts.create_cluster, params)).created  # a retry changes nothing


async def test_scheduler_plugins_refuse_a_rayjob_with_kuberays_warning(client: KubeClient) -> None:
    acts = JobActivities(client, PLUGINS)
    ref = await make_rayjob(client)
    params = job_contract.CreateClusterInput(
        ref=ref, cluster_name=f"{ref.name}-abcde", job_id="x", attempt=1
    )
    with pytest.raises(Exception, match="RayClusters only"):
        await run(acts.create_cluster, params)
    assert await reasons(client, ref) == ["FailedToCreateRayCluster"]
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", params.cluster_name) is None


async def test_a_finished_volcano_rayjob_gives_back_what_no_longer_runs(
    client: KubeClient,
) -> None:
    acts = JobActivities(client, VOLCANO)
    ref = await make_rayjob(client)
    cluster = f"{ref.name}-abcde"
    create = job_contract.CreateClusterInput(ref=ref, cluster_name=cluster, job_id="x", attempt=1)
    await run(acts.create_cluster, create)
    name = f"ray-{ref.name}-pg"

    async def spec() -> dict[str, Any]:
        return dict((await client.get(kube.VOLCANO_POD_GROUPS, "default", name))["spec"])

    running = RayJobStatus(
        job_deployment_status=JobDeploymentStatus.RUNNING, ray_cluster_name=cluster
    )
    await run(acts.write_status, job_contract.WriteJobStatusInput(ref=ref, status=running))
    assert (await spec())["minResources"] == {"cpu": "500m", "memory": "200Mi"}  # unchanged

    # Complete with the cluster up: the submitter's reservation goes.
    done = RayJobStatus(
        job_deployment_status=JobDeploymentStatus.COMPLETE, ray_cluster_name=cluster
    )
    await run(acts.write_status, job_contract.WriteJobStatusInput(ref=ref, status=done))
    assert await spec() == {"minMember": 2, "minResources": {}}
    # DeleteWorkers: the head alone.
    await run(acts.suspend_workers, job_contract.SuspendWorkersInput(ref=ref, cluster_name=cluster))
    assert (await spec())["minMember"] == 1
    # The cluster deleted: nothing.
    delete = job_contract.DeleteAttemptInput(ref=ref, cluster_name=cluster)
    result = await run(acts.delete_attempt, delete)
    if result.remaining:  # the RayCluster went on the first call; a second sees it gone
        result = await run(acts.delete_attempt, delete)
    assert not result.remaining
    assert await spec() == {"minMember": 0, "minResources": {}}
    assert "BatchSchedulerCleanedUp" in await reasons(client, ref)
