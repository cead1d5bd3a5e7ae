"""The RayJob Kubernetes activities against devcluster (real HTTP, real API semantics)."""

from __future__ import annotations

import copy
import uuid
from typing import Any, cast

import pytest
from temporalio.testing import ActivityEnvironment

from activities.builders import DEFAULT_OPTIONS
from activities.kube import client as kube
from activities.kube import informer
from activities.kube.client import KubeClient
from activities.kube.errors import KubeRejected
from activities.kube.informer import Informer
from activities.rayjob import contract
from activities.rayjob.kube_effects import JobActivities
from crds.enums import JobDeploymentStatus, JobStatus
from crds.rayjob import RayJobStatus
from crds.refs import ObjectRef
from tests.activities.counting import Calls
from tests.activities.head_services import make_alias_service, make_head_service
from tests.activities.kube.test_informer import QuietApi, running
from tests.eventually import eventually

IMAGE = "rayproject/ray:2.60.0"
CLUSTER_SPEC: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": IMAGE}]}},
    },
    "workerGroupSpecs": [
        {
            "groupName": "small",
            "replicas": 1,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w", "image": IMAGE}]}},
        }
    ],
}


async def make_rayjob(client: KubeClient, **spec: Any) -> ObjectRef:
    name = f"j{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default", "labels": {"team": "a"}},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": copy.deepcopy(CLUSTER_SPEC)} | spec,
    }
    created = await client.create(kube.RAYJOBS, "default", body)
    return ObjectRef(kind="RayJob", namespace="default", name=name, uid=created["metadata"]["uid"])


def run(activity: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(activity, arg)


async def reasons(client: KubeClient, ref: ObjectRef) -> list[str]:
    found = await client.list_all(kube.EVENTS, ref.namespace)
    return sorted(e["reason"] for e in found if e["involvedObject"]["uid"] == ref.uid)


async def test_read_a_missing_or_recreated_rayjob(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    other = ref.model_copy(update={"uid": "someone-else"})
    assert not (await run(acts.read, contract.ReadJobInput(ref=other))).exists


async def test_read_returns_spec_status_and_the_cluster_view(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, cluster_name="c1"))
    assert snap.exists and snap.generation == 1 and snap.spec is not None
    assert snap.labels == {"team": "a"} and not snap.has_finalizer
    assert snap.cluster == contract.ClusterView(name="c1", exists=False)
    assert snap.submitter is None
    again = await run(acts.read, contract.ReadJobInput(ref=ref, known_generation=1))
    assert again.spec is None and again.status is None
    assert snap.options == again.options == contract.JobOperatorOptions()


async def test_read_reports_the_operator_options_it_was_built_with(client: KubeClient) -> None:
    options = contract.JobOperatorOptions(
        delete_rayjob_cr_after_job_finishes=True, status_check_timeout_seconds=30
    )
    acts = JobActivities(client, DEFAULT_OPTIONS, job_options=options)
    ref = await make_rayjob(client)
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, known_generation=1))
    assert snap.options == options


async def test_the_snapshot_carries_no_inline_secret(client: KubeClient) -> None:
    cluster = copy.deepcopy(CLUSTER_SPEC)
    cluster["headGroupSpec"]["rayStartParams"]["redis-password"] = "s3cret-param"
    worker = cluster["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker["env"] = [{"name": "RAY_AUTH_TOKEN", "value": "s3cret-token"}]
    env = [{"name": "HF_TOKEN", "value": "s3cret-submitter"}]
    submitter = {"spec": {"containers": [{"name": "s", "image": IMAGE, "env": env}]}}
    ref = await make_rayjob(client, rayClusterSpec=cluster, submitterPodTemplate=submitter)
    snap = await run(JobActivities(client, DEFAULT_OPTIONS).read, contract.ReadJobInput(ref=ref))
    assert snap.spec is not None and "s3cret" not in snap.model_dump_json()
    assert snap.spec.submitter_pod_template is not None


async def test_create_cluster_is_idempotent_and_recorded(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    params = contract.CreateClusterInput(
        ref=ref, cluster_name=f"{ref.name}-abcde", job_id="x", attempt=1
    )
    assert (await run(acts.create_cluster, params)).created
    assert not (await run(acts.create_cluster, params)).created
    cluster = await client.get(kube.RAYCLUSTERS, "default", params.cluster_name)
    labels = cluster["metadata"]["labels"]
    assert labels["ray.io/originated-from-cr-name"] == ref.name
    assert labels["ray.io/rayjob-attempt"] == "1" and labels["team"] == "a"
    assert cluster["metadata"]["ownerReferences"][0]["uid"] == ref.uid
    assert await reasons(client, ref) == ["CreatedRayCluster"]

    # The read sees it, with its head Service once the RayCluster workflow made one.
    await make_head_service(client, "default", params.cluster_name)
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, cluster_name=params.cluster_name))
    assert snap.cluster is not None and snap.cluster.exists and not snap.cluster.ready
    expected = f"{params.cluster_name}-head-svc.default.svc.cluster.local:8265"
    assert snap.cluster.dashboard_url == expected
    assert not snap.cluster.workers_suspended


async def test_a_head_service_the_cluster_does_not_own_gives_no_dashboard(
    client: KubeClient,
) -> None:
    """One made under the head Service's name before the cluster (here: an alias elsewhere)."""
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    name = f"{ref.name}-abcde"
    await make_alias_service(client, "default", f"{name}-head-svc")
    create = contract.CreateClusterInput(ref=ref, cluster_name=name, job_id="x", attempt=1)
    await run(acts.create_cluster, create)
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, cluster_name=name))
    assert snap.cluster is not None and snap.cluster.dashboard_url is None
    assert f"not owned by RayCluster {name}" in snap.cluster.head_service_problem
    # Nor does a submitter get it to submit to.
    submitter = contract.CreateSubmitterInput(ref=ref, cluster_name=name, job_id="x", attempt=1)
    assert not (await run(acts.create_submitter, submitter)).created
    assert await client.get_or_none(kube.JOBS, "default", ref.name) is None


async def test_submitter_job_and_head_service(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    first = f"{ref.name}-aaaaa"
    await run(
        acts.create_cluster,
        contract.CreateClusterInput(ref=ref, cluster_name=first, job_id="x", attempt=1),
    )
    await make_head_service(client, "default", first)
    params = contract.CreateSubmitterInput(ref=ref, cluster_name=first, job_id="x", attempt=1)
    assert (await run(acts.create_submitter, params)).created
    assert not (await run(acts.create_submitter, params)).created
    job = await client.get(kube.JOBS, "default", ref.name)
    assert job["metadata"]["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
    assert job["metadata"]["ownerReferences"][0]["controller"] is True
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, cluster_name=first))
    assert snap.submitter is not None and snap.submitter.finished_at is None

    await run(
        acts.ensure_head_service, contract.EnsureHeadServiceInput(ref=ref, cluster_name=first)
    )
    await run(
        acts.ensure_head_service, contract.EnsureHeadServiceInput(ref=ref, cluster_name=first)
    )
    service = await client.get(kube.SERVICES, "default", f"{ref.name}-head-svc")
    assert service["spec"]["selector"]["ray.io/cluster"] == first
    second = f"{ref.name}-bbbbb"
    await run(
        acts.create_cluster,
        contract.CreateClusterInput(ref=ref, cluster_name=second, job_id="y", attempt=2),
    )
    await run(
        acts.ensure_head_service, contract.EnsureHeadServiceInput(ref=ref, cluster_name=second)
    )
    service = await client.get(kube.SERVICES, "default", f"{ref.name}-head-svc")
    assert service["spec"]["selector"]["ray.io/cluster"] == second
    assert await reasons(client, ref) == [
        "CreatedRayCluster",
        "CreatedRayCluster",
        "CreatedRayJobSubmitter",
        "CreatedService",
        "UpdatedService",
    ]


async def test_delete_attempt_only_deletes_what_the_rayjob_owns(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    mine = f"{ref.name}-aaaaa"
    await run(
        acts.create_cluster,
        contract.CreateClusterInput(ref=ref, cluster_name=mine, job_id="x", attempt=1),
    )
    borrowed = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "borrowed", "namespace": "default"},
        "spec": copy.deepcopy(CLUSTER_SPEC),
    }
    await client.create(kube.RAYCLUSTERS, "default", borrowed)
    params = contract.DeleteAttemptInput(ref=ref, cluster_name="borrowed")
    assert (await run(acts.delete_attempt, params)).remaining == []
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", "borrowed") is not None

    params = contract.DeleteAttemptInput(ref=ref, cluster_name=mine)
    await run(acts.delete_attempt, params)
    await run(acts.delete_attempt, params)
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", mine) is None
    assert (await run(acts.delete_attempt, params)).remaining == []
    assert (await reasons(client, ref)).count("DeletedRayCluster") == 1


async def test_suspend_workers_and_delete_self(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    name = f"{ref.name}-aaaaa"
    await run(
        acts.create_cluster,
        contract.CreateClusterInput(ref=ref, cluster_name=name, job_id="x", attempt=1),
    )
    await run(acts.suspend_workers, contract.SuspendWorkersInput(ref=ref, cluster_name=name))
    await run(acts.suspend_workers, contract.SuspendWorkersInput(ref=ref, cluster_name=name))
    cluster = await client.get(kube.RAYCLUSTERS, "default", name)
    assert cluster["spec"]["workerGroupSpecs"][0]["suspend"] is True
    snap = await run(acts.read, contract.ReadJobInput(ref=ref, cluster_name=name))
    assert snap.cluster is not None and snap.cluster.workers_suspended
    assert (await reasons(client, ref)).count("UpdatedRayCluster") == 1
    await run(acts.delete_rayjob, contract.RayJobRef(ref=ref))
    await run(acts.delete_rayjob, contract.RayJobRef(ref=ref))
    assert await client.get_or_none(kube.RAYJOBS, "default", ref.name) is None


async def test_status_suspend_and_finalizer_writes(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    status = RayJobStatus(
        job_id="x", job_status=JobStatus.RUNNING, job_deployment_status=JobDeploymentStatus.RUNNING
    )
    await run(acts.write_status, contract.WriteJobStatusInput(ref=ref, status=status))
    await run(
        acts.write_status,
        contract.WriteJobStatusInput(
            ref=ref, status=RayJobStatus(job_deployment_status="Suspended")
        ),
    )
    stored = (await client.get(kube.RAYJOBS, "default", ref.name))["status"]
    # Replaced, not merged: the old jobId is gone (the CRD defaults the counters to 0).
    assert stored["jobDeploymentStatus"] == "Suspended" and "jobId" not in stored
    waiting = RayJobStatus(job_status=JobStatus.NEW, job_deployment_status="Waiting", job_id="")
    await run(acts.write_status, contract.WriteJobStatusInput(ref=ref, status=waiting))
    stored = (await client.get(kube.RAYJOBS, "default", ref.name))["status"]
    # As KubeRay (omitempty): a new job's empty jobStatus and jobId are not written at all.
    assert "jobStatus" not in stored and "jobId" not in stored, stored
    # Before any copy of its cluster's status, KubeRay's struct value: zero quantities.
    zero = {"desiredCPU": "0", "desiredGPU": "0", "desiredMemory": "0", "desiredTPU": "0"}
    assert stored["rayClusterStatus"] == zero

    await run(acts.set_suspend, contract.SetJobSuspendInput(ref=ref, suspend=True))
    await run(acts.set_finalizer, contract.SetFinalizerInput(ref=ref, present=True))
    await run(acts.set_finalizer, contract.SetFinalizerInput(ref=ref, present=True))
    obj = await client.get(kube.RAYJOBS, "default", ref.name)
    assert obj["spec"]["suspend"] is True
    assert obj["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]
    snap = await run(acts.read, contract.ReadJobInput(ref=ref))
    assert snap.has_finalizer and snap.status is not None
    await client.delete(kube.RAYJOBS, "default", ref.name)
    assert (await run(acts.read, contract.ReadJobInput(ref=ref))).deleting
    await run(acts.set_finalizer, contract.SetFinalizerInput(ref=ref, present=False))
    assert await client.get_or_none(kube.RAYJOBS, "default", ref.name) is None


async def test_a_refused_create_records_kuberays_warning_and_raises(client: KubeClient) -> None:
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    params = contract.CreateClusterInput(ref=ref, cluster_name="Not_A-Name", job_id="x", attempt=1)
    with pytest.raises(KubeRejected):
        await run(acts.create_cluster, params)
    found = await client.list_all(kube.EVENTS, ref.namespace)
    (event,) = [e for e in found if e["involvedObject"]["uid"] == ref.uid]
    assert (event["type"], event["reason"]) == ("Warning", "FailedToCreateRayCluster")
    assert event["message"].startswith("Failed to create RayCluster default/Not_A-Name: ")


async def test_pods_are_listed_only_where_they_decide_something(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head pod in SidecarMode, the last pods once the cluster is gone; no other pass."""
    acts = JobActivities(client, DEFAULT_OPTIONS)
    listed: list[str] = []
    list_all = client.list_all

    async def counting(resource: kube.Resource, *args: Any, **kwargs: Any) -> Any:
        listed.append(resource.plural)
        return await list_all(resource, *args, **kwargs)

    monkeypatch.setattr(client, "list_all", counting)
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c1"}}
    await client.create(kube.RAYCLUSTERS, "default", cluster | {"spec": CLUSTER_SPEC})
    head = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "c1-head",
            "labels": {"ray.io/cluster": "c1", "ray.io/node-type": "head"},
        },
        "spec": {"containers": [{"name": "ray-head", "image": IMAGE}]},
    }
    await client.create(kube.PODS, "default", head)
    http = await make_rayjob(client, submissionMode="HTTPMode")
    sidecar = await make_rayjob(client, submissionMode="SidecarMode")

    snap = await run(acts.read, contract.ReadJobInput(ref=http, cluster_name="c1"))
    assert snap.cluster.exists and listed == []
    snap = await run(acts.read, contract.ReadJobInput(ref=sidecar, cluster_name="c1"))
    assert snap.cluster.head_pod and listed == ["pods"]
    await client.delete(kube.RAYCLUSTERS, "default", "c1")
    # A finished job's cluster removed by a deletion rule: its pods decide nothing.
    snap = await run(acts.read, contract.ReadJobInput(ref=http, cluster_name="c1"))
    assert not snap.cluster.exists and listed == ["pods"]
    # A teardown waits for the last pod.
    teardown = contract.ReadJobInput(ref=http, cluster_name="c1", count_left_pods=True)
    snap = await run(acts.read, teardown)
    assert snap.cluster.pods == 1 and not snap.cluster.gone and listed == ["pods", "pods"]


async def test_the_status_write_reuses_the_pass_read(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass reads its RayJob once: the status write names the read's version."""
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    gets = Calls(client, "get_or_none", monkeypatch)
    real = gets.real
    snap = await run(acts.read, contract.ReadJobInput(ref=ref))
    running = RayJobStatus(job_id="x", job_deployment_status=JobDeploymentStatus.RUNNING)
    write = contract.WriteJobStatusInput(
        ref=ref, status=running, read_version=snap.resource_version
    )
    await run(acts.write_status, write)
    assert gets.count("rayjobs") == 1
    stored = (await real(kube.RAYJOBS, "default", ref.name) or {})["status"]
    assert stored["jobDeploymentStatus"] == "Running" and stored["jobId"] == "x"
    # The same version again: written since, so read again and replaced (not merged).
    suspended = RayJobStatus(job_deployment_status=JobDeploymentStatus.SUSPENDED)
    await run(acts.write_status, write.model_copy(update={"status": suspended}))
    assert gets.count("rayjobs") == 2
    stored = (await real(kube.RAYJOBS, "default", ref.name) or {})["status"]
    assert stored["jobDeploymentStatus"] == "Suspended" and "jobId" not in stored


async def test_the_status_write_after_the_finalizer_names_the_finalizer_write(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first pass adds the finalizer, then writes the status: against the version the
    finalizer left, one PATCH (against the read's, a 409, a GET and the PATCH again)."""
    acts = JobActivities(client, DEFAULT_OPTIONS)
    ref = await make_rayjob(client)
    await run(acts.read, contract.ReadJobInput(ref=ref))
    written = await run(acts.set_finalizer, contract.SetFinalizerInput(ref=ref, present=True))
    gets = Calls(client, "get_same", monkeypatch)
    patches = Calls(client, "patch", monkeypatch)
    initializing = RayJobStatus(job_deployment_status=JobDeploymentStatus.INITIALIZING)
    write = contract.WriteJobStatusInput(
        ref=ref, status=initializing, read_version=str(written.version)
    )
    after = await run(acts.write_status, write)
    assert gets.count("rayjobs") == 0 and patches.count("rayjobs") == 1
    assert after.version > written.version
    stored = await client.get(kube.RAYJOBS, "default", ref.name)
    assert stored["status"]["jobDeploymentStatus"] == "Initializing"
    assert stored["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]


async def test_the_cluster_comes_from_the_copy_when_it_is_as_new_as_the_news(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = await make_rayjob(client)
    # A RayCluster only the copy knows of: seen in a snapshot, it came from the copy.
    ghost = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ghost", "namespace": "default", "uid": "g"},
        "spec": copy.deepcopy(CLUSTER_SPEC),
        "status": {"state": "ready"},
    }
    clusters = Informer(
        cast(KubeClient, QuietApi([ghost], {None: "5"})), kube.RAYCLUSTERS, "ray.io/x"
    )
    acts = JobActivities(client, DEFAULT_OPTIONS, clusters=clusters)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    read = contract.ReadJobInput(ref=ref, cluster_name="ghost", cluster_as_of=5)
    point = contract.EnsureHeadServiceInput(ref=ref, cluster_name="ghost", cluster_as_of=6)
    async with running(clusters):
        assert await eventually(lambda: clusters.whole)
        cached = await run(acts.read, read)
        behind = await run(acts.read, read.model_copy(update={"cluster_as_of": 6}))
        await run(acts.ensure_head_service, point)  # behind: live, and no cluster there
        assert await client.get_or_none(kube.SERVICES, "default", f"{ref.name}-head-svc") is None
        await run(acts.ensure_head_service, point.model_copy(update={"cluster_as_of": 5}))
    assert cached.cluster is not None and cached.cluster.exists
    assert cached.cluster.status is not None and cached.cluster.status.state == "ready"
    assert behind.cluster == contract.ClusterView(name="ghost", exists=False)  # read live
    # The step after the read takes the cluster where the read did: from the copy.
    service = await client.get(kube.SERVICES, "default", f"{ref.name}-head-svc")
    assert service["spec"]["selector"]["ray.io/cluster"] == "ghost"


async def test_the_rayjob_comes_from_the_copy_when_it_is_as_new_as_the_workflow_knows(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = await make_rayjob(client)
    stored = await client.get(kube.RAYJOBS, "default", ref.name)
    # The copy's RayJob differs from the stored one in a label: seen, it came from the copy.
    copied = copy.deepcopy(stored)
    copied["metadata"]["labels"] = {"team": "copy"}
    version = int(stored["metadata"]["resourceVersion"])
    rayjobs = Informer(
        cast(KubeClient, QuietApi([copied], {None: str(version)})), kube.RAYJOBS, "x", ""
    )
    acts = JobActivities(client, DEFAULT_OPTIONS, rayjobs=rayjobs)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    async with running(rayjobs):
        assert await eventually(lambda: rayjobs.whole)
        cached = await run(acts.read, contract.ReadJobInput(ref=ref, as_of=version))
        behind = await run(acts.read, contract.ReadJobInput(ref=ref, as_of=version + 1))
        unknown = await run(acts.read, contract.ReadJobInput(ref=ref))
    assert cached.labels == {"team": "copy"}
    assert behind.labels == unknown.labels == {"team": "a"}  # read live


async def test_a_gone_cluster_and_its_pods_come_from_the_copies_once_they_saw_it_go(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copies that reached the version at which the cluster existed (or went) and lack it
    say it is gone; its pods are then counted from the pod copy, as KubeRay's cache does."""
    ref = await make_rayjob(client)
    leftover = {
        "metadata": {
            "name": "old-head",
            "namespace": "default",
            "labels": {"ray.io/cluster": "old", "ray.io/node-type": "head"},
        },
        "status": {"phase": "Running"},
    }
    clusters = Informer(cast(KubeClient, QuietApi([], {None: "5"})), kube.RAYCLUSTERS, "x", "")
    pod_api = cast(KubeClient, QuietApi([leftover], {None: "5"}))
    pods = Informer(pod_api, kube.PODS, "ray.io/cluster")
    acts = JobActivities(client, DEFAULT_OPTIONS, clusters=clusters, pods=pods)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    lists = Calls(client, "list_all", monkeypatch)
    read = contract.ReadJobInput(ref=ref, cluster_name="old", cluster_as_of=5, count_left_pods=True)
    delete = contract.DeleteAttemptInput(
        ref=ref, cluster_name="old", delete_submitter=False, cluster_as_of=5
    )
    async with running(clusters), running(pods):
        assert await eventually(lambda: clusters.whole and pods.whole)
        cached = await run(acts.read, read)
        remaining = await run(acts.delete_attempt, delete)
        assert lists.count("pods") == 0
        live = await run(acts.read, read.model_copy(update={"cluster_as_of": 0}))
    assert cached.cluster == contract.ClusterView(name="old", exists=False, pods=1)
    assert remaining.remaining == ["Pod/old-head"]
    assert live.cluster == contract.ClusterView(name="old", exists=False, pods=0)  # listed


async def test_steps_after_the_read_take_the_rayjob_from_the_copy_too(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finalizer write and the creates read the RayJob as the pass knew it, from the copy
    once it has reached that version; no copy that new: from the API server."""
    ref = await make_rayjob(client)
    stored = await client.get(kube.RAYJOBS, "default", ref.name)
    version = int(stored["metadata"]["resourceVersion"])
    copied = copy.deepcopy(stored)
    copied["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]  # only the copy has it
    rayjobs = Informer(
        cast(KubeClient, QuietApi([copied], {None: str(version)})), kube.RAYJOBS, "x", ""
    )
    acts = JobActivities(client, DEFAULT_OPTIONS, rayjobs=rayjobs)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    gets = Calls(client, "get_same", monkeypatch)
    add = contract.SetFinalizerInput(ref=ref, present=True, as_of=version)
    async with running(rayjobs):
        assert await eventually(lambda: rayjobs.whole)
        cached = await run(acts.set_finalizer, add)  # the copy has it: nothing to write
        assert gets.count("rayjobs") == 0 and cached.version == version
        live = await run(acts.set_finalizer, add.model_copy(update={"as_of": version + 1}))
    assert gets.count("rayjobs") == 1 and live.version > version
    stored = await client.get(kube.RAYJOBS, "default", ref.name)
    assert stored["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]
