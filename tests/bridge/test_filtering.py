"""Which watch events reach Temporal, and where they go."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bridge.filtering import Memory, owned_nudges, primary_nudges
from workflows import messages


def cr(kind: str = "RayCluster", generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "generation": generation, **meta},
        "spec": {},
    }


def signals(nudges: list[Any]) -> list[tuple[str, str, Any]]:
    return [(n.target.name, n.signal, n.payload) for n in nudges]


def seeing(*crs: dict[str, Any]) -> Memory:
    """A bridge's memory once it has seen these CRs exist."""
    memory = Memory()
    for obj in crs:
        primary_nudges(obj["kind"], "ADDED", obj, memory)
    return memory


def job(mode: str = "HTTPMode") -> dict[str, Any]:
    """The RayJob `OWNER` names."""
    return {**cr("RayJob", name="job", uid="j1"), "spec": {"submissionMode": mode}}


def test_first_sight_signals_the_generation() -> None:
    nudges = primary_nudges("RayCluster", "ADDED", cr(), Memory())
    assert signals(nudges) == [("c", "spec_changed", messages.SpecChanged(generation=1))]
    assert nudges[0].target.workflow_id == "raycluster/ns/c/u1"


def test_status_only_write_is_silent() -> None:
    memory = Memory()
    primary_nudges("RayCluster", "ADDED", cr(), memory)
    with_status = {**cr(), "status": {"state": "ready"}}
    assert primary_nudges("RayCluster", "MODIFIED", with_status, memory) == []


def test_new_generation_and_metadata_changes() -> None:
    memory = Memory()
    primary_nudges("RayJob", "ADDED", cr("RayJob"), memory)
    newer = primary_nudges("RayJob", "MODIFIED", cr("RayJob", generation=2), memory)
    assert signals(newer) == [("c", "spec_changed", messages.SpecChanged(generation=2))]
    labelled = cr("RayJob", generation=2, labels={"team": "a"})
    relabel = primary_nudges("RayJob", "MODIFIED", labelled, memory)
    assert signals(relabel) == [
        ("c", "spec_changed", messages.SpecChanged(generation=2, resync=True))
    ]


def test_deletion_is_signalled_once_then_gone() -> None:
    memory = Memory()
    primary_nudges("RayService", "ADDED", cr("RayService"), memory)
    deleting = cr("RayService", deletionTimestamp="2026-01-01T00:00:00Z")
    first = primary_nudges("RayService", "MODIFIED", deleting, memory)
    again = primary_nudges("RayService", "MODIFIED", deleting, memory)
    gone = primary_nudges("RayService", "DELETED", deleting, memory)
    assert signals(first) == [("c", "deleted", messages.Deleted(gone=False))]
    assert again == []
    assert signals(gone) == [("c", "deleted", messages.Deleted(gone=True))]


def test_the_generation_a_deletion_bumps_is_not_a_spec_change() -> None:
    """The API server bumps a custom resource's generation as it sets deletionTimestamp."""
    memory = Memory()
    primary_nudges("RayJob", "ADDED", cr("RayJob"), memory)
    deleting = cr("RayJob", generation=2, deletionTimestamp="2026-01-01T00:00:00Z")
    nudges = primary_nudges("RayJob", "MODIFIED", deleting, memory)
    assert signals(nudges) == [("c", "deleted", messages.Deleted(gone=False))]


def test_a_head_pod_just_created_is_no_news_to_the_rayjob_either() -> None:
    cluster = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    memory = seeing(job("SidecarMode"), cluster)
    assert owned_nudges("Pod", "ADDED", pod(), memory) == []


def test_a_cluster_its_owner_just_created_is_no_news_until_it_has_a_status() -> None:
    memory = seeing(job())
    created = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    added = primary_nudges("RayCluster", "ADDED", created, memory)
    assert [n.target.kind for n in added] == ["RayCluster"]  # its own workflow only
    provisioning = {**created, "status": {"state": ""}}
    nudged = primary_nudges("RayCluster", "MODIFIED", provisioning, memory)
    assert [n.target.kind for n in nudged] == ["RayJob"]


@pytest.mark.parametrize(("mode", "nudged"), [("SidecarMode", True), ("HTTPMode", False)])
def test_a_head_pod_nudges_only_a_sidecar_mode_rayjob(mode: str, nudged: bool) -> None:
    """Only SidecarMode reads the head pod (its submitter container)."""
    cluster = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    memory = seeing(job(mode), cluster)
    targets = [n.target.kind for n in owned_nudges("Pod", "ADDED", pod("Running"), memory)]
    assert targets == (["RayCluster", "RayJob"] if nudged else ["RayCluster"])


def test_multikueue_objects_are_left_alone() -> None:
    obj = {**cr("RayJob"), "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}
    assert primary_nudges("RayJob", "ADDED", obj, Memory()) == []


OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "name": "job",
    "uid": "j1",
    "controller": True,
}


def test_owned_cluster_status_nudges_its_owner() -> None:
    obj = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    memory = seeing(job(), obj)
    ready = {
        **obj,
        "metadata": {**obj["metadata"], "resourceVersion": "42"},
        "status": {"state": "ready", "lastUpdateTime": "t1"},
    }
    nudges = primary_nudges("RayCluster", "MODIFIED", ready, memory)
    # The version: the owner reads its cluster at least this new (from the worker's copy).
    change = messages.OwnedChanged(kinds=["RayCluster"], names=["c"], versions={"RayCluster": 42})
    assert signals(nudges) == [("job", "owned_changed", change)]
    touched = {**ready, "status": {"state": "ready", "lastUpdateTime": "t2"}}
    assert primary_nudges("RayCluster", "MODIFIED", touched, memory) == []


def test_a_deleted_owned_cluster_nudges_its_owner() -> None:
    """The owner waits on its cluster's deletion; its pods' events may come after the
    cluster's DELETED (separate watches) and then no longer know the owner (found by the
    chaos suite: a RayService kept its finalizer until its 5-minute resync)."""
    obj = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    memory = seeing(job(), obj)
    gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "77"}}
    nudges = primary_nudges("RayCluster", "DELETED", gone, memory)
    # The version: a copy of RayClusters that has reached it has seen the cluster go.
    change = messages.OwnedChanged(kinds=["RayCluster"], names=["c"], versions={"RayCluster": 77})
    assert signals(nudges) == [
        ("c", "deleted", messages.Deleted(gone=True)),
        ("job", "owned_changed", change),
    ]


def pod(
    phase: str = "Pending", ready: str = "False", reason: str = "", **labels: str
) -> dict[str, Any]:
    condition = {"type": "Ready", "status": ready} | ({"reason": reason} if reason else {})
    return {
        "metadata": {
            "name": "c-head-x",
            "namespace": "ns",
            "uid": "p1",
            "labels": {"ray.io/cluster": "c", "ray.io/node-type": "head", **labels},
            "ownerReferences": [{**OWNER, "kind": "RayCluster", "name": "c", "uid": "u1"}],
        },
        "status": {"phase": phase, "conditions": [condition]},
    }


def scheduled(obj: dict[str, Any]) -> dict[str, Any]:
    conditions = [*obj["status"]["conditions"], {"type": "PodScheduled", "status": "True"}]
    return {**obj, "status": {**obj["status"], "conditions": conditions}}


def worker(obj: dict[str, Any], tls: bool = False) -> dict[str, Any]:
    labels = {**obj["metadata"]["labels"], "ray.io/node-type": "worker"}
    inits = [{"name": "wait-for-tls-ip-san"}] if tls else []
    return {
        **obj,
        "metadata": {**obj["metadata"], "labels": labels},
        "spec": {"initContainers": inits},
    }


def addressed(obj: dict[str, Any]) -> dict[str, Any]:
    """As the kubelet leaves a pod whose sandbox is up: an IP, its container being created."""
    waiting = {"name": "ray", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
    status = {**obj["status"], "podIP": "10.0.0.9", "containerStatuses": [waiting]}
    return {**obj, "status": status}


@pytest.mark.parametrize(
    ("before", "after", "signalled"),
    [
        pytest.param(pod(), pod("Running"), True, id="phase"),
        pytest.param(pod(), addressed(pod()), True, id="head-ip"),
        pytest.param(worker(pod()), worker(addressed(pod())), False, id="worker-ip-is-not-read"),
        pytest.param(worker(pod(), True), worker(addressed(pod()), True), True, id="worker-ip-tls"),
        pytest.param(worker(pod()), worker(pod("Running")), True, id="worker-phase"),
        pytest.param(pod("Running"), pod("Running", "True"), True, id="ready"),
        pytest.param(pod("Running"), pod("Running", team="x"), False, id="label-noise"),
        pytest.param(pod(), scheduled(pod()), False, id="scheduled-is-not-read"),
        pytest.param(pod(), pod(reason="ContainersNotReady"), True, id="kubelet-started-it"),
    ],
)
def test_pod_changes(before: dict[str, Any], after: dict[str, Any], signalled: bool) -> None:
    memory = seeing(cr())
    owned_nudges("Pod", "ADDED", before, memory)
    assert bool(owned_nudges("Pod", "MODIFIED", after, memory)) == signalled


def test_a_pod_just_created_is_no_news_but_one_seen_first_running_is() -> None:
    """The workflow created the pod and expects it; a restarted bridge re-signals the rest."""
    assert owned_nudges("Pod", "ADDED", pod(), seeing(cr())) == []
    running = owned_nudges("Pod", "ADDED", pod("Running"), seeing(cr()))
    assert [n.target.kind for n in running] == ["RayCluster"]


def test_pods_of_a_deleted_cluster_reach_nobody() -> None:
    """The cascade after a RayCluster's deletion: its workflow has ended."""
    memory = seeing(cr())
    owned_nudges("Pod", "ADDED", pod("Running"), memory)
    primary_nudges("RayCluster", "DELETED", cr(), memory)
    terminating = pod("Running")
    terminating["metadata"]["deletionTimestamp"] = "2026-12-04T00:00:00Z"
    assert owned_nudges("Pod", "MODIFIED", terminating, memory) == []
    assert owned_nudges("Pod", "DELETED", terminating, memory) == []
    # Nor is anything kept of it: cascades come after their CRs, by the thousand.
    assert "p1" not in memory.seen


def test_head_pod_of_a_rayjob_cluster_nudges_both() -> None:
    cluster = {**cr(), "metadata": {**cr()["metadata"], "ownerReferences": [OWNER]}}
    memory = seeing(job("SidecarMode"), cluster)
    targets = [n.target.kind for n in owned_nudges("Pod", "ADDED", pod("Running"), memory)]
    assert targets == ["RayCluster", "RayJob"]
    sidecar = pod("Running", "True")
    sidecar["status"]["containerStatuses"] = [
        {"name": "ray-job-submitter", "state": {"terminated": {"reason": "Completed"}}}
    ]
    targets = [n.target.kind for n in owned_nudges("Pod", "MODIFIED", sidecar, memory)]
    assert "RayJob" in targets


def test_deleted_pod_nudges_its_cluster() -> None:
    memory = seeing(cr())
    owned_nudges("Pod", "ADDED", pod(), memory)
    assert [n.signal for n in owned_nudges("Pod", "DELETED", pod(), memory)] == ["owned_changed"]


def test_a_pod_nudge_names_the_version_a_cached_read_must_reach() -> None:
    memory = seeing(cr())
    owned_nudges("Pod", "ADDED", pod(), memory)
    running = pod("Running")
    running["metadata"]["resourceVersion"] = "42"
    (nudge,) = owned_nudges("Pod", "MODIFIED", running, memory)
    assert isinstance(nudge.payload, messages.OwnedChanged)
    assert nudge.payload.versions == {"Pod": 42}
    ready = pod("Running", "True")
    ready["metadata"]["resourceVersion"] = "not-a-number"  # then no cached read waits for it
    (nudge,) = owned_nudges("Pod", "MODIFIED", ready, memory)
    assert isinstance(nudge.payload, messages.OwnedChanged) and nudge.payload.versions == {}


def forged(kind: str = "RayCluster", name: str = "c", uid: str = "u1") -> dict[str, Any]:
    """A controller reference as anyone who may create an object in the namespace can write."""
    return {"apiVersion": "ray.io/v1", "kind": kind, "name": name, "uid": uid, "controller": True}


def claiming(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "ownerReferences": [owner]}}


def submitter(owner: dict[str, Any]) -> dict[str, Any]:
    """A submitter Job as the bridge watches it (created by a RayJob in K8sJobMode)."""
    meta = {"name": "job-x", "namespace": "ns", "uid": "s1", "ownerReferences": [owner]}
    return {"metadata": meta, "status": {"active": 1}}


@pytest.mark.parametrize(
    ("kind", "owner"),
    [
        pytest.param("Pod", forged(name="ghost", uid="g1"), id="no-such-cr"),
        pytest.param("Pod", forged(uid="g1"), id="a-cr's-name-another-uid"),
        pytest.param("Pod", forged(name="other"), id="a-cr's-uid-another-name"),
        pytest.param("Pod", forged("RayJob"), id="a-cr's-uid-another-kind"),
        pytest.param("Pod", forged("RayFoo"), id="a-kind-not-reconciled"),
        pytest.param("Pod", forged(uid="o1"), id="a-cr-of-another-namespace"),
        pytest.param("Job", forged("RayJob", "job", "g1"), id="submitter-job"),
    ],
)
def test_an_owner_the_bridge_has_not_seen_exist_is_nudged_by_nothing(
    kind: str, owner: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """A forged ownerReference would start a workflow for a CR that does not exist (or, for a
    kind without one, fail every delivery): it is dropped, and said so only at debug level."""
    elsewhere = {**cr(uid="o1"), "metadata": {**cr(uid="o1")["metadata"], "namespace": "other"}}
    memory = seeing(cr(), job(), elsewhere)
    obj = claiming(pod("Running"), owner) if kind == "Pod" else submitter(owner)
    caplog.set_level(logging.DEBUG, logger="bridge.filtering")
    assert owned_nudges(kind, "ADDED", obj, memory) == []
    assert owned_nudges(kind, "DELETED", obj, memory) == []
    name = obj["metadata"]["name"]
    assert [(r.levelname, f"{kind} ns/{name} names" in r.getMessage()) for r in caplog.records] == [
        ("DEBUG", True),
        ("DEBUG", True),
    ]


def test_a_forged_owner_of_a_cluster_hears_nothing_of_it() -> None:
    """A tenant's RayCluster claiming a RayJob or RayService that does not exist nudges none,
    nor does its head pod."""
    cluster = claiming(cr(), forged("RayService", "svc", "g1"))
    memory = seeing(cluster)
    ready = {**cluster, "status": {"state": "ready"}}
    assert primary_nudges("RayCluster", "MODIFIED", ready, memory) == []
    targets = [n.target.kind for n in owned_nudges("Pod", "ADDED", pod("Running"), memory)]
    assert targets == ["RayCluster"]
    gone = primary_nudges("RayCluster", "DELETED", ready, memory)
    assert [n.target.kind for n in gone] == ["RayCluster"]


def test_a_cluster_seen_before_its_owner_tells_the_owner_once_it_is_known() -> None:
    """A restarted bridge may list RayClusters before RayJobs: the news waits, not dropped."""
    ready = {**claiming(cr(), OWNER), "status": {"state": "ready"}}
    memory = Memory()
    added = primary_nudges("RayCluster", "ADDED", ready, memory)
    assert [n.target.kind for n in added] == ["RayCluster"]  # its own workflow only
    primary_nudges("RayJob", "ADDED", job(), memory)
    nudged = primary_nudges("RayCluster", "MODIFIED", ready, memory)
    assert [n.target.kind for n in nudged] == ["RayJob"]


def test_a_pod_seen_before_its_cluster_is_news_once_the_cluster_is_known() -> None:
    memory = Memory()
    assert owned_nudges("Pod", "ADDED", pod("Running"), memory) == []
    primary_nudges("RayCluster", "ADDED", cr(), memory)
    nudged = owned_nudges("Pod", "MODIFIED", pod("Running"), memory)
    assert [n.target.kind for n in nudged] == ["RayCluster"]


def test_pods_of_a_cluster_left_to_multikueue_reach_nobody() -> None:
    """Such a cluster has no workflow here; its pods must not start one."""
    memory = seeing({**cr(), "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})
    assert owned_nudges("Pod", "ADDED", pod("Running"), memory) == []
