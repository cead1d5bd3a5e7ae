"""RayCluster status computation: state, conditions, counters, endpoints, head info."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from activities.contract import (
    WORKER_UNREAD,
    ContainerProblem,
    DesiredResources,
    PodView,
    ReplicaFailure,
    ServiceView,
)
from crds.enums import RayClusterConditionReason as Reason
from crds.enums import RayClusterConditionType as Cond
from crds.raycluster import RayClusterSpec, RayClusterStatus
from workflows.conditions import find_condition
from workflows.raycluster.decisions import plan_pods
from workflows.raycluster.plans import SuspendPhase
from workflows.raycluster.status import (
    StatusInputs,
    compute_status,
    status_changed,
    with_created,
)

from .helpers import facts, head, namer, spec, worker

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
SVC = ServiceView(name="c-head-svc", cluster_ip="None", ports={"dashboard": "8265"})


def inputs(
    pods: list[PodView],
    cluster: RayClusterSpec | None = None,
    previous: RayClusterStatus | None = None,
    **fields: Any,
) -> StatusInputs:
    base: dict[str, Any] = {
        "spec": cluster or spec({"replicas": 1}),
        "generation": 3,
        "previous": previous,
        "pods": pods,
        "head_service": SVC,
        "suspend_phase": SuspendPhase.NONE,
        "resources": DesiredResources(cpu="2", memory="3Gi"),
    }
    return StatusInputs(**{**base, **fields})


def cond(status: RayClusterStatus, kind: str) -> tuple[str, str]:
    found = find_condition(status.conditions, kind)
    assert found is not None, kind
    return found.status.value, found.reason


READY = [head(pod_ip="10.0.0.1"), worker("w1")]


def test_all_pods_ready_makes_the_cluster_ready() -> None:
    status = compute_status(inputs(READY), T0)
    assert status.state == "ready"
    assert status.state_transition_times == {"ready": T0}
    assert cond(status, Cond.PROVISIONED) == ("True", Reason.ALL_POD_RUNNING_AND_READY_FIRST_TIME)
    assert cond(status, Cond.HEAD_POD_READY) == ("True", Reason.HEAD_POD_RUNNING_AND_READY)
    assert (status.ready_worker_replicas, status.available_worker_replicas) == (1, 1)
    assert (status.desired_worker_replicas, status.observed_generation) == (1, 3)
    assert (status.desired_cpu, status.desired_memory) == ("2", "3Gi")


def test_a_new_cluster_lists_its_conditions_in_kuberays_order() -> None:
    status = compute_status(inputs(READY), T0)
    assert [c.type for c in status.conditions or []] == [
        Cond.HEAD_POD_READY,
        Cond.PROVISIONED,
        Cond.SUSPENDED,
        Cond.SUSPENDING,
    ]


def test_ready_is_never_taken_back_but_provisioned_is_sticky_too() -> None:
    first = compute_status(inputs(READY), T0)
    later = compute_status(inputs([head(ready=False), worker("w1")], previous=first), T1)
    assert later.state == "ready"
    assert later.state_transition_times == {"ready": T0}
    assert cond(later, Cond.PROVISIONED)[0] == "True"
    assert cond(later, Cond.HEAD_POD_READY)[0] == "False"


def test_missing_worker_keeps_the_cluster_provisioning() -> None:
    status = compute_status(inputs([head()]), T0)
    assert status.state is None
    assert cond(status, Cond.PROVISIONED) == ("False", Reason.PODS_PROVISIONING)


def test_missing_head_pod() -> None:
    status = compute_status(inputs([worker("w1")]), T0)
    assert cond(status, Cond.HEAD_POD_READY) == ("False", Reason.HEAD_POD_NOT_FOUND)
    # KubeRay's omitempty: no pod name or address is written at all, nor a zero counter.
    assert status.head is not None and status.head.pod_name is None
    assert status.head.pod_ip is None and status.head.service_ip is None
    assert status.to_json_dict()["head"] == {"serviceName": "c-head-svc"}


def test_zero_counters_are_left_out_as_kuberay_does() -> None:
    status = compute_status(inputs([head()], spec({"replicas": 0, "minReplicas": 0})), T0)
    written = status.to_json_dict()
    for counter in ("readyWorkerReplicas", "availableWorkerReplicas", "desiredWorkerReplicas"):
        assert counter not in written
    assert "minWorkerReplicas" not in written


def test_container_problem_explains_an_unready_head() -> None:
    problem = ContainerProblem(reason="CrashLoopBackOff", message="ray-head: back-off")
    sick = head(ready=False, ready_reason="ContainersNotReady", not_ready_container=problem)
    status = compute_status(inputs([sick]), T0)
    found = find_condition(status.conditions, Cond.HEAD_POD_READY)
    assert found is not None
    assert (found.reason, found.message) == ("CrashLoopBackOff", "ray-head: back-off")


def test_replica_failure_blocks_ready_and_is_cleared_later() -> None:
    failure = ReplicaFailure(reason=Reason.FAILED_CREATE_WORKER_POD, message="quota exceeded")
    failed = compute_status(inputs(READY, failure=failure), T0)
    assert failed.state is None
    assert cond(failed, Cond.REPLICA_FAILURE) == ("True", "FailedCreateWorkerPod")
    healed = compute_status(inputs(READY, previous=failed), T1)
    assert find_condition(healed.conditions, Cond.REPLICA_FAILURE) is None


@pytest.mark.parametrize(
    ("phase", "suspending", "suspended"),
    [
        pytest.param(SuspendPhase.NONE, "False", "False", id="none"),
        pytest.param(SuspendPhase.SUSPENDING, "True", "False", id="suspending"),
        pytest.param(SuspendPhase.SUSPENDED, "False", "True", id="suspended"),
    ],
)
def test_suspend_conditions(phase: SuspendPhase, suspending: str, suspended: str) -> None:
    status = compute_status(inputs([], suspend_phase=phase), T0)
    assert cond(status, Cond.SUSPENDING)[0] == suspending
    assert cond(status, Cond.SUSPENDED)[0] == suspended


def test_suspended_cluster_state_and_provisioned_reset() -> None:
    ready = compute_status(inputs(READY), T0)
    cluster = spec({"replicas": 1}, suspend=True)
    suspended = compute_status(
        inputs([], cluster, previous=ready, suspend_phase=SuspendPhase.SUSPENDED), T1
    )
    assert suspended.state == "suspended"
    assert suspended.state_transition_times == {"ready": T0, "suspended": T1}
    assert cond(suspended, Cond.PROVISIONED) == ("False", Reason.PODS_PROVISIONING)


def test_endpoints_and_head_info_for_a_headless_service() -> None:
    status = compute_status(inputs(READY), T0)
    assert status.endpoints == {"dashboard": "8265"}
    assert status.head is not None
    assert (status.head.pod_ip, status.head.service_ip) == ("10.0.0.1", "10.0.0.1")
    assert status.head.service_name == "c-head-svc"


def test_cluster_ip_service_reports_its_ip() -> None:
    svc = ServiceView(name="c-head-svc", cluster_ip="10.96.0.5")
    status = compute_status(inputs(READY, head_service=svc), T0)
    assert status.head is not None and status.head.service_ip == "10.96.0.5"


def test_status_changed_ignores_only_last_update_time() -> None:
    first = compute_status(inputs(READY), T0)
    again = compute_status(inputs(READY, previous=first), T1)
    assert not status_changed(first, again)
    newer = compute_status(inputs(READY, previous=first, generation=4), T1)
    assert status_changed(first, newer)
    assert status_changed(None, first)


def test_transition_time_survives_an_unchanged_condition() -> None:
    first = compute_status(inputs(READY), T0)
    again = compute_status(inputs(READY, previous=first), T1)
    found = find_condition(again.conditions, Cond.HEAD_POD_READY)
    assert found is not None and found.last_transition_time == T0


def test_a_pass_counts_the_pods_it_created_beside_those_it_read() -> None:
    """A create answered with a pod the read already had (a retried apply) is not doubled."""
    read = [head(), worker("w-1")]
    created = [worker("w-1", phase="Pending"), worker("w-2", phase="Pending")]
    assert with_created(read, created) == [*read, created[1]]


@pytest.mark.parametrize(
    "state",
    [
        {"phase": "Pending", "ready": False},
        {"phase": "Running", "ready": False},
        {"phase": "Running", "ready": True},
        {"phase": "Failed", "ready": False, "ray_container_terminated": True},
    ],
)
def test_nothing_decided_reads_what_the_bridge_leaves_out_of_a_worker(
    state: dict[str, Any],
) -> None:
    """`bridge.filtering` signals no change of a worker's `WORKER_UNREAD` fields: neither the
    status nor the pod plan may depend on them."""
    told = {
        "pod_ip": "10.0.0.7",
        "ready_reason": "ContainersNotReady",
        "ready_message": "containers with unready status: [ray-worker]",
        "not_ready_container": ContainerProblem(reason="ImagePullBackOff", message="no such"),
    }
    assert set(told) == WORKER_UNREAD
    cluster = spec({"replicas": 1})
    plain, full = worker("w1", **state), worker("w1", **state, **told)
    statuses = [compute_status(inputs([head(), w], cluster), T0) for w in (plain, full)]
    plans = [plan_pods(facts(cluster), [head(), w], {}, T0, namer()) for w in (plain, full)]
    assert statuses[0] == statuses[1]
    assert plans[0] == plans[1]
