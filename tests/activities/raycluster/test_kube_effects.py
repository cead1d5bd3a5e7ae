"""The RayCluster activities against devcluster (real HTTP, real API semantics)."""

from __future__ import annotations

import copy
import uuid
from typing import Any, cast

import pytest
from temporalio.testing import ActivityEnvironment

from activities.builders import DEFAULT_OPTIONS, BuildOptions
from activities.kube import client as kube
from activities.kube import informer
from activities.kube.client import KubeClient
from activities.kube.informer import Informer
from activities.raycluster import contract
from activities.raycluster.kube_effects import ClusterActivities
from activities.raycluster.redis_cleanup import ClusterCleanupActivities
from crds.feature_gates import parse_feature_gates
from crds.raycluster import HeadInfo, RayClusterStatus
from crds.refs import ObjectRef
from tests.activities.counting import Calls
from tests.activities.kube.test_informer import QuietApi, running
from tests.eventually import eventually

SPEC: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}},
    },
    "workerGroupSpecs": [
        {
            "groupName": "small",
            "replicas": 1,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray"}]}},
        }
    ],
}


async def make_cluster(client: KubeClient, namespace: str = "default", **spec: Any) -> ObjectRef:
    name = f"c{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**SPEC, **spec},
    }
    created = await client.create(kube.RAYCLUSTERS, namespace, body)
    return ObjectRef(
        kind="RayCluster", namespace=namespace, name=name, uid=created["metadata"]["uid"]
    )


def run(activity: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(activity, arg)


async def test_read_a_missing_cluster(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = ObjectRef(kind="RayCluster", namespace="default", name="nope", uid="x")
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert not snap.exists


async def test_read_reports_whether_redis_cleanup_is_on(client: KubeClient) -> None:
    ref = await make_cluster(client)
    default = await run(
        ClusterActivities(client, DEFAULT_OPTIONS).read, contract.ReadClusterInput(ref=ref)
    )
    off = ClusterActivities(client, BuildOptions(gcs_ft_redis_cleanup=False))
    snap = await run(off.read, contract.ReadClusterInput(ref=ref))
    assert default.redis_cleanup and not snap.redis_cleanup


async def test_read_reports_the_deterministic_head_name(client: KubeClient) -> None:
    ref = await make_cluster(client)
    default = await run(
        ClusterActivities(client, DEFAULT_OPTIONS).read, contract.ReadClusterInput(ref=ref)
    )
    fixed = ClusterActivities(client, BuildOptions(deterministic_head_pod_name=True))
    snap = await run(fixed.read, contract.ReadClusterInput(ref=ref))
    assert default.head_name == "" and snap.head_name == f"{ref.name}-head"


async def test_read_reports_the_fields_whose_feature_gate_is_off(client: KubeClient) -> None:
    ref = await make_cluster(client, networkPolicy={})
    default = await run(
        ClusterActivities(client, DEFAULT_OPTIONS).read, contract.ReadClusterInput(ref=ref)
    )
    gated = BuildOptions(feature_gates=parse_feature_gates("RayClusterNetworkPolicy=true"))
    snap = await run(ClusterActivities(client, gated).read, contract.ReadClusterInput(ref=ref))
    assert default.gate_violations == [
        "spec.networkPolicy: requires the RayClusterNetworkPolicy feature gate to be enabled"
    ]
    assert snap.gate_violations == []


async def test_read_then_apply_creates_kuberay_objects_once(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.exists and snap.spec is not None and snap.generation == 1
    assert snap.missing_objects == [f"Service/{ref.name}-head-svc"] and snap.pods == []
    assert snap.head_prefix == f"{ref.name}-head-"
    assert snap.worker_prefixes == {"small": f"{ref.name}-small-worker-"}
    plan = contract.ApplyClusterInput(
        ref=ref,
        generation=1,
        ensure_objects=True,
        creations=[
            contract.PodCreation(name=f"{ref.name}-head-abcde", group="headgroup", head=True),
            contract.PodCreation(
                name=f"{ref.name}-small-worker-fghij", group="small", replica_index=0
            ),
        ],
    )
    first = await run(acts.apply, plan)
    again = await run(acts.apply, plan)  # a retried activity
    assert first.created == again.created == [c.name for c in plan.creations]
    pods = await client.list_all(kube.PODS, "default", f"ray.io/cluster={ref.name}")
    # The created pods as stored, for the pass's status, and the version a later read awaits.
    views = {v.name: v for v in first.created_pods}
    assert views == {v.name: v for v in again.created_pods}
    assert sorted(v.node_type for v in views.values()) == ["head", "worker"]
    versions = [int(p["metadata"]["resourceVersion"]) for p in pods]
    assert first.pods_version == again.pods_version == max(versions)
    assert sorted(p["metadata"]["labels"]["ray.io/node-type"] for p in pods) == ["head", "worker"]
    owners = {o["uid"] for p in pods for o in p["metadata"]["ownerReferences"]}
    assert owners == {ref.uid}
    service = await client.get(kube.SERVICES, "default", f"{ref.name}-head-svc")
    assert service["spec"]["clusterIP"] == "None"
    # The head Service as made, for the pass's status (its endpoints at once).
    assert first.head_service == again.head_service
    assert first.head_service is not None and first.head_service.name == f"{ref.name}-head-svc"
    assert first.head_service.ports["dashboard"] == "8265"
    reasons = sorted(e["reason"] for e in await client.list_all(kube.EVENTS, "default"))
    assert reasons.count("CreatedHeadPod") == 1 and reasons.count("CreatedWorkerPod") == 1
    after = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert after.spec is None and after.missing_objects == []
    assert sorted(p.node_type for p in after.pods) == ["head", "worker"]


async def test_a_plan_for_an_old_generation_is_refused(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    await client.patch(kube.RAYCLUSTERS, "default", ref.name, {"spec": {"rayVersion": "2.9.0"}})
    creation = contract.PodCreation(name=f"{ref.name}-head-abcde", group="headgroup", head=True)
    result = await run(
        acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, creations=[creation])
    )
    assert (
        result.stale
        and await client.list_all(kube.PODS, "default", f"ray.io/cluster={ref.name}") == []
    )


async def test_a_rejected_pod_is_a_replica_failure_with_a_warning(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    bad = contract.PodCreation(name="Not_A_Valid_Name", group="small", replica_index=0)
    result = await run(
        acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, creations=[bad])
    )
    assert result.failure is not None and result.failure.reason == "FailedCreateWorkerPod"
    # As KubeRay writes it: the reason, then the API server's own message (no status code).
    reason, refusal = result.failure.message.split("\n")
    assert reason == "FailedCreateWorkerPod" and refusal.startswith('Pod "Not_A_Valid_Name" is')
    events = await client.list_all(kube.EVENTS, "default")
    assert [e["type"] for e in events if e["reason"] == "FailedToCreateWorkerPod"] == ["Warning"]


async def test_status_is_replaced_and_suspend_written(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    await run(
        acts.write_status,
        contract.WriteStatusInput(ref=ref, status=RayClusterStatus(state="ready", reason="x")),
    )
    await run(
        acts.write_status,
        contract.WriteStatusInput(ref=ref, status=RayClusterStatus(state="ready")),
    )
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert stored["status"] == {"state": "ready"} and stored["metadata"]["generation"] == 1
    await run(acts.set_suspend, contract.SetSuspendInput(ref=ref, suspend=True))
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert stored["spec"]["suspend"] is True and stored["metadata"]["generation"] == 2


async def test_a_head_that_went_leaves_no_address_in_the_status(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    running = HeadInfo(pod_ip="10.0.0.9", pod_name="c-head-x", service_name="c-head-svc")
    for head in (running, HeadInfo(service_name="c-head-svc")):
        status = RayClusterStatus(state="ready", head=head)
        await run(acts.write_status, contract.WriteStatusInput(ref=ref, status=status))
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert stored["status"]["head"] == {"serviceName": "c-head-svc"}


FT = {
    "gcsFaultToleranceOptions": {"redisAddress": "redis:6379", "redisPassword": {"value": "s3cret"}}
}


async def test_the_snapshot_never_carries_an_inline_password(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, **FT)
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.spec is not None and "s3cret" not in snap.model_dump_json()
    # ...while the pods built from the CR still get the value the user wrote.
    creation = contract.PodCreation(name=f"{ref.name}-head-abcde", group="headgroup", head=True)
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, creations=[creation]))
    pod = await client.get(kube.PODS, "default", creation.name)
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["REDIS_PASSWORD"] == "s3cret"


def with_legacy_secrets(password: str) -> dict[str, Any]:
    """The legacy places a password goes: rayStartParams and env, in the head and a worker."""
    spec = copy.deepcopy(SPEC)
    for group in (spec["headGroupSpec"], spec["workerGroupSpecs"][0]):
        group["rayStartParams"]["redis-password"] = password
        env = [{"name": "REDIS_PASSWORD", "value": password}]
        group["template"]["spec"]["containers"][0]["env"] = env
    return spec


async def test_legacy_passwords_stay_out_of_the_snapshot_but_count_as_changes(
    client: KubeClient,
) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    first = await make_cluster(client, **with_legacy_secrets("s3cret-one"))
    second = await make_cluster(client, **with_legacy_secrets("s3cret-two"))
    snaps = [await run(acts.read, contract.ReadClusterInput(ref=ref)) for ref in (first, second)]
    assert all("s3cret" not in snap.model_dump_json() for snap in snaps)
    # The workflow sees the same spec, yet a password change still changes the recreate hash.
    assert snaps[0].spec == snaps[1].spec
    assert snaps[0].spec_hash != snaps[1].spec_hash


async def test_the_finalizer_steps(client: KubeClient) -> None:
    reads = ClusterActivities(client, DEFAULT_OPTIONS)
    steps = ClusterCleanupActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, **FT)
    added = await run(steps.step, contract.CleanupStepInput(ref=ref, step="AddFinalizer"))
    again = await run(steps.step, contract.CleanupStepInput(ref=ref, step="AddFinalizer"))
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert stored["metadata"]["finalizers"] == ["ray.io/gcs-ft-redis-cleanup-finalizer"]
    # The write's version, for the next read to wait on; a retry that writes nothing has none.
    assert added.version == int(stored["metadata"]["resourceVersion"]) and again.version == 0
    await client.delete(kube.RAYCLUSTERS, "default", ref.name)
    snap = await run(reads.read, contract.ReadClusterInput(ref=ref))
    assert snap.deleting and snap.deleted_at is not None and not snap.cleanup_job_exists
    await run(steps.step, contract.CleanupStepInput(ref=ref, step="CreateJob"))
    job = await client.get(kube.JOBS, "default", f"{ref.name}-redis-cleanup")
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 300
    assert job["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert "cleanup_redis_storage" in job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "s3cret" not in str(job["spec"]["template"]["spec"]["containers"][0]["args"])
    snap = await run(reads.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert snap.cleanup_job_exists and snap.cleanup_job_finished is None
    step = contract.CleanupStepInput(ref=ref, step="ForceRemoveFinalizer", reason="test")
    await run(steps.step, step)
    assert await client.get_or_none(kube.RAYCLUSTERS, "default", ref.name) is None
    warnings = [e for e in await client.list_all(kube.EVENTS, "default") if e["type"] == "Warning"]
    assert [e["reason"] for e in warnings] == ["ForceDeletedStuckCluster"]
    assert "s3cret" not in warnings[0]["message"]


async def test_no_cleanup_job_in_a_namespace_being_deleted(client: KubeClient) -> None:
    """The API server's refusal says the namespace is going: no Namespace read is needed."""
    await client.create(kube.NAMESPACES, None, {"metadata": {"name": "going"}})
    steps = ClusterCleanupActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client, "going", **FT)
    await run(steps.step, contract.CleanupStepInput(ref=ref, step="AddFinalizer"))
    await client.delete(kube.NAMESPACES, None, "going")  # waits on the cluster's finalizer
    await run(steps.step, contract.CleanupStepInput(ref=ref, step="CreateJob"))
    # The finalizer is gone, so the cluster and then the namespace could go; no Job was made.
    assert await client.get_or_none(kube.JOBS, "going", f"{ref.name}-redis-cleanup") is None

    async def namespace_gone() -> bool:
        return await client.get_or_none(kube.NAMESPACES, None, "going") is None

    await eventually(namespace_gone, message="the namespace deleted")
    assert await client.get_or_none(kube.RAYCLUSTERS, "going", ref.name) is None


async def test_autoscaler_rbac_and_gcs_pvc_are_owned_objects(client: KubeClient) -> None:
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(
        client,
        enableInTreeAutoscaling=True,
        gcsFaultToleranceOptions={"backend": "rocksdb"},
    )
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert snap.missing_objects == [
        f"ServiceAccount/{ref.name}",
        f"Role/{ref.name}",
        f"RoleBinding/{ref.name}",
        f"Service/{ref.name}-head-svc",
        f"PersistentVolumeClaim/{ref.name}-gcs-pvc",
    ]
    await run(acts.apply, contract.ApplyClusterInput(ref=ref, generation=1, ensure_objects=True))
    again = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert again.missing_objects == []
    role = await client.get(kube.ROLES, "default", ref.name)
    assert {
        "apiGroups": ["ray.io"],
        "resources": ["rayclusters"],
        "verbs": ["get", "patch"],
    } in role["rules"]
    pvc = await client.get(kube.PVCS, "default", f"{ref.name}-gcs-pvc")
    assert pvc["metadata"]["ownerReferences"][0]["uid"] == ref.uid


async def test_pods_come_from_the_cache_only_when_it_is_as_new_as_the_news(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = await make_cluster(client)
    # A head pod only the cache knows of: seen in a snapshot, it was read from the cache.
    ghost = {
        "metadata": {
            "name": f"{ref.name}-head-ghost",
            "namespace": "default",
            "labels": {"ray.io/cluster": ref.name, "ray.io/node-type": "head"},
        },
        "status": {"phase": "Running"},
    }
    api = QuietApi([ghost], {None: "5"})
    pods = Informer(cast(KubeClient, api), kube.PODS, "ray.io/cluster")
    acts = ClusterActivities(client, DEFAULT_OPTIONS, pods=pods)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    before = await run(acts.read, contract.ReadClusterInput(ref=ref))
    async with running(pods):
        assert await eventually(lambda: pods.whole)
        cached = await run(acts.read, contract.ReadClusterInput(ref=ref, pods_as_of=5))
        behind = await run(acts.read, contract.ReadClusterInput(ref=ref, pods_as_of=6))
    assert before.pods == [] and behind.pods == []  # not listed yet; older than the news
    assert [p.name for p in cached.pods] == [f"{ref.name}-head-ghost"]
    # Each read names the pod version it reflects: the copy's, or the live list's.
    _, listed = await client.list_versioned(kube.PODS, "default")
    assert cached.pods_seen == 5
    assert 0 < before.pods_seen <= behind.pods_seen == int(listed)


async def test_the_head_service_comes_from_the_copy_when_it_holds_it(
    client: KubeClient,
) -> None:
    ref = await make_cluster(client)
    # A head Service only the copy knows of: seen in a snapshot, it came from the copy.
    ghost = {
        "metadata": {
            "name": f"{ref.name}-head-svc",
            "namespace": "default",
            "labels": {"ray.io/cluster": ref.name},
        },
        "spec": {"clusterIP": "10.9.9.9"},
    }
    services = Informer(
        cast(KubeClient, QuietApi([ghost], {None: "5"})), kube.SERVICES, "ray.io/cluster"
    )
    acts = ClusterActivities(client, DEFAULT_OPTIONS, services=services)
    before = await run(acts.read, contract.ReadClusterInput(ref=ref))
    async with running(services):
        assert await eventually(lambda: services.whole)
        cached = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert before.head_service is None  # not listed yet: read live, and there is none
    assert cached.head_service is not None and cached.head_service.cluster_ip == "10.9.9.9"


async def test_a_first_pass_takes_the_head_services_absence_from_a_whole_copy(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new cluster's first pass made a GET of its head Service that found nothing; a later
    pass still reads live what the copy lacks: another's Service of the name has no label."""
    ref = await make_cluster(client)
    foreign = {"metadata": {"name": f"{ref.name}-head-svc"}, "spec": {"clusterIP": "None"}}
    await client.create(kube.SERVICES, "default", foreign)
    services = Informer(
        cast(KubeClient, QuietApi([], {None: "5"})), kube.SERVICES, "ray.io/cluster"
    )
    acts = ClusterActivities(client, DEFAULT_OPTIONS, services=services)
    gets = Calls(client, "get_or_none", monkeypatch)
    async with running(services):
        assert await eventually(lambda: services.whole)
        first = await run(acts.read, contract.ReadClusterInput(ref=ref))
        assert gets.count("services") == 0
        later = await run(acts.read, contract.ReadClusterInput(ref=ref, known_generation=1))
    assert gets.count("services") == 1
    assert first.head_service is None
    assert f"Service/{ref.name}-head-svc" in first.missing_objects  # the apply step finds it
    assert later.head_service is not None


async def test_a_pass_reads_its_raycluster_once(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The apply step and the status write use the read the pass made (its version); the write
    only while the object is still that version, else against the object as it is now."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    gets = Calls(client, "get_or_none", monkeypatch)
    real = gets.real
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    version = snap.resource_version
    assert version
    apply = contract.ApplyClusterInput(ref=ref, generation=1, read_version=version)
    assert not (await run(acts.apply, apply)).stale
    ready = contract.WriteStatusInput(
        ref=ref, status=RayClusterStatus(state="ready"), read_version=version
    )
    await run(acts.write_status, ready)
    assert gets.count("rayclusters") == 1
    assert (await real(kube.RAYCLUSTERS, ref.namespace, ref.name) or {})["status"] == {
        "state": "ready"
    }

    # Written since the read (here: by the write above): read again, and replace that.
    again = contract.WriteStatusInput(
        ref=ref, status=RayClusterStatus(reason="r"), read_version=version
    )
    await run(acts.write_status, again)
    assert gets.count("rayclusters") == 2
    assert (await real(kube.RAYCLUSTERS, ref.namespace, ref.name) or {})["status"] == {
        "reason": "r"
    }

    # Deleted and applied again under the name: the namesake's status is not ours to write.
    snap = await run(acts.read, contract.ReadClusterInput(ref=ref))
    await client.delete(kube.RAYCLUSTERS, ref.namespace, ref.name)
    body = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "spec": SPEC}
    body["metadata"] = {"name": ref.name, "namespace": ref.namespace}
    await client.create(kube.RAYCLUSTERS, ref.namespace, body)
    stale = contract.WriteStatusInput(
        ref=ref, status=RayClusterStatus(state="ready"), read_version=snap.resource_version
    )
    await run(acts.write_status, stale)
    assert "status" not in (await real(kube.RAYCLUSTERS, ref.namespace, ref.name) or {})


async def test_the_raycluster_comes_from_the_copy_when_it_is_as_new_as_the_workflow_knows(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = await make_cluster(client)
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    # The copy's RayCluster differs from the stored one in a label: seen, it came from the copy.
    copied = copy.deepcopy(stored)
    copied["metadata"]["labels"] = {"team": "copy"}
    version = int(stored["metadata"]["resourceVersion"])
    clusters = Informer(
        cast(KubeClient, QuietApi([copied], {None: str(version)})), kube.RAYCLUSTERS, "x", ""
    )
    acts = ClusterActivities(client, DEFAULT_OPTIONS, clusters=clusters)
    monkeypatch.setattr(informer, "CATCH_UP", 0.2)
    async with running(clusters):
        assert await eventually(lambda: clusters.whole)
        cached = await run(acts.read, contract.ReadClusterInput(ref=ref, as_of=version))
        behind = await run(acts.read, contract.ReadClusterInput(ref=ref, as_of=version + 1))
        unknown = await run(acts.read, contract.ReadClusterInput(ref=ref))
    assert cached.labels == {"team": "copy"}
    assert behind.labels == unknown.labels == {}  # read live


async def test_writes_return_the_version_they_left(client: KubeClient) -> None:
    """The workflow's next read waits for the worker's copy to reach it."""
    acts = ClusterActivities(client, DEFAULT_OPTIONS)
    ref = await make_cluster(client)
    status = contract.WriteStatusInput(ref=ref, status=RayClusterStatus(state="ready"))
    written = await run(acts.write_status, status)
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert written.version == int(stored["metadata"]["resourceVersion"])
    suspended = await run(acts.set_suspend, contract.SetSuspendInput(ref=ref, suspend=True))
    stored = await client.get(kube.RAYCLUSTERS, "default", ref.name)
    assert suspended.version == int(stored["metadata"]["resourceVersion"]) > written.version
    await client.delete(kube.RAYCLUSTERS, "default", ref.name)
    assert (await run(acts.write_status, status)).version == 0  # gone: nothing written
    assert (await run(acts.set_suspend, contract.SetSuspendInput(ref=ref, suspend=False))) == (
        contract.Written()
    )
