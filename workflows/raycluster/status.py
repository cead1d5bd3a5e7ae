"""RayCluster status as a pure function of what one pass observed (KubeRay's `calculateStatus`).

KubeRay behaviours C25–C28 (docs/kuberay-parity.md). Unlike KubeRay, nothing here lists objects
halfway through: the pass reads a snapshot first, and this function only computes.
`status_changed` decides whether the status is worth a write; it ignores `lastUpdateTime`,
which changes on every pass.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from activities.contract import (
    DesiredResources,
    PodView,
    ReplicaFailure,
    ServiceView,
    is_head,
    is_worker,
)
from activities.kube.vocabulary import PodPhase
from crds import replicas
from crds.common import Condition
from crds.enums import (
    ClusterState,
    ConditionStatus,
    RayClusterConditionReason,
    RayClusterConditionType,
)
from crds.raycluster import HeadInfo, RayClusterSpec, RayClusterStatus
from workflows.conditions import is_true, remove_condition, set_condition
from workflows.raycluster.plans import SuspendPhase

_T, _F = ConditionStatus.TRUE, ConditionStatus.FALSE
Cond = RayClusterConditionType
Reason = RayClusterConditionReason


class StatusInputs(BaseModel):
    """Everything `compute_status` needs."""

    model_config = ConfigDict(frozen=True)

    spec: RayClusterSpec
    generation: int
    previous: RayClusterStatus | None
    pods: list[PodView]
    head_service: ServiceView | None
    suspend_phase: SuspendPhase
    resources: DesiredResources
    failure: ReplicaFailure | None = None


def with_created(pods: list[PodView], created: list[PodView]) -> list[PodView]:
    """The pods a pass read, and those it created since (as the API server returned them)."""
    read = {p.name for p in pods}
    return pods + [p for p in created if p.name not in read]


def all_running_and_ready(pods: list[PodView]) -> bool:
    """KubeRay's CheckAllPodsRunning: at least one pod, every pod Running and Ready."""
    return bool(pods) and all(p.phase == PodPhase.RUNNING and p.ready for p in pods)


def _complete(spec: RayClusterSpec, pods: list[PodView]) -> bool:
    """Whether every pod the spec asks for exists (the head plus the desired workers)."""
    return len(pods) == replicas.desired_worker_pods(spec) + 1


def head_pod(pods: list[PodView]) -> PodView | None:
    """The head pod, if exactly one exists."""
    heads = [p for p in pods if is_head(p) and not p.terminating]
    return heads[0] if len(heads) == 1 else None


def compute_status(inputs: StatusInputs, now: datetime) -> RayClusterStatus:
    """The status KubeRay would write after this pass."""
    previous = inputs.previous or RayClusterStatus()
    pods = [p for p in inputs.pods if not p.terminating]
    workers = [p for p in pods if is_worker(p)]
    spec = inputs.spec
    status = RayClusterStatus(
        state=previous.state,
        desired_cpu=inputs.resources.cpu,
        desired_memory=inputs.resources.memory,
        desired_gpu=inputs.resources.gpu,
        desired_tpu=inputs.resources.tpu,
        ready_worker_replicas=_omitted_if_zero(sum(1 for p in workers if p.ready)),
        available_worker_replicas=_omitted_if_zero(
            sum(1 for p in workers if p.phase == PodPhase.RUNNING)
        ),
        desired_worker_replicas=_omitted_if_zero(replicas.desired_worker_pods(spec)),
        min_worker_replicas=_omitted_if_zero(replicas.min_worker_pods(spec)),
        max_worker_replicas=_omitted_if_zero(replicas.max_worker_pods(spec)),
        observed_generation=inputs.generation,
        last_update_time=now,
    )
    if previous.reason:
        status.reason = previous.reason
    if inputs.failure is None and _complete(spec, pods) and all_running_and_ready(pods):
        status.state = ClusterState.READY
        status.reason = None
    if spec.suspend and not pods:
        status.state = ClusterState.SUSPENDED
    status.conditions = _conditions(inputs, pods, now)
    status.endpoints = dict(inputs.head_service.ports) if inputs.head_service else None
    status.head = _head_info(pods, inputs.head_service)
    status.state_transition_times = dict(previous.state_transition_times or {})
    if status.state and status.state != previous.state:
        status.state_transition_times[status.state] = now
    if not status.state_transition_times:
        status.state_transition_times = None
    return status


def _conditions(inputs: StatusInputs, pods: list[PodView], now: datetime) -> list[Condition]:
    conds = (inputs.previous.conditions if inputs.previous else None) or []
    if inputs.failure:
        conds = set_condition(
            conds, Cond.REPLICA_FAILURE, _T, inputs.failure.reason, inputs.failure.message, now
        )
    else:
        conds = remove_condition(conds, Cond.REPLICA_FAILURE)
    conds = _head_ready(conds, head_pod(pods), now)
    phase = inputs.suspend_phase
    if not is_true(conds, Cond.PROVISIONED) and phase != SuspendPhase.SUSPENDED:
        # KubeRay checks readiness only; it lists pods after creating them, while this pass
        # saw the pods before, so the count is checked too.
        if _complete(inputs.spec, pods) and all_running_and_ready(pods):
            msg = "All Ray Pods are ready for the first time"
            conds = set_condition(
                conds, Cond.PROVISIONED, _T, Reason.ALL_POD_RUNNING_AND_READY_FIRST_TIME, msg, now
            )
        else:
            msg = "RayCluster Pods are being provisioned for first time"
            conds = set_condition(conds, Cond.PROVISIONED, _F, Reason.PODS_PROVISIONING, msg, now)
    was_suspended = is_true(conds, Cond.SUSPENDED)
    if phase == SuspendPhase.SUSPENDED and not was_suspended:
        msg = "RayCluster has been suspended"
        conds = set_condition(conds, Cond.PROVISIONED, _F, Reason.PODS_PROVISIONING, msg, now)
    suspending = _T if phase == SuspendPhase.SUSPENDING else _F
    suspended = _T if phase == SuspendPhase.SUSPENDED else _F
    # KubeRay sets Suspended first, so a new cluster lists it before Suspending.
    conds = set_condition(conds, Cond.SUSPENDED, suspended, Cond.SUSPENDED, "", now)
    return set_condition(conds, Cond.SUSPENDING, suspending, Cond.SUSPENDING, "", now)


def _head_ready(conds: list[Condition], head: PodView | None, now: datetime) -> list[Condition]:
    if head is None:
        return set_condition(
            conds, Cond.HEAD_POD_READY, _F, Reason.HEAD_POD_NOT_FOUND, "Head Pod not found", now
        )
    status = _T if head.ready else _F
    reason = head.ready_reason or (
        Reason.HEAD_POD_RUNNING_AND_READY if head.ready else Reason.UNKNOWN
    )
    message = head.ready_message
    if reason == "ContainersNotReady" and head.not_ready_container is not None:
        message = "; ".join(m for m in (message, head.not_ready_container.message) if m)
        reason = head.not_ready_container.reason or reason
    return set_condition(conds, Cond.HEAD_POD_READY, status, reason, message, now)


def _omitted_if_zero(count: int) -> int | None:
    """KubeRay's status counters are `omitempty`: a zero is not written at all."""
    return count or None


def _head_info(pods: list[PodView], service: ServiceView | None) -> HeadInfo:
    # Also `omitempty` strings: no head pod (suspended) leaves its address and name out.
    head = head_pod(pods)
    info = HeadInfo(
        pod_ip=(head.pod_ip if head else None) or None, pod_name=head.name if head else None
    )
    if service is not None:
        headless = service.cluster_ip == "None"
        info.service_ip = (
            (head.pod_ip if head else None) if headless else service.cluster_ip
        ) or None
        info.service_name = service.name
    return info


def status_changed(old: RayClusterStatus | None, new: RayClusterStatus) -> bool:
    """Whether `new` says anything `old` does not (ignoring `lastUpdateTime`)."""
    if old is None:
        return True
    ignore = {"last_update_time"}
    return old.model_dump(exclude=ignore) != new.model_dump(exclude=ignore)


def suspend_phase(status: RayClusterStatus | None) -> SuspendPhase:
    """The suspend phase a written status records (its Suspending/Suspended conditions)."""
    conditions = getattr(status, "conditions", None)
    if is_true(conditions, RayClusterConditionType.SUSPENDING):
        return SuspendPhase.SUSPENDING
    if is_true(conditions, RayClusterConditionType.SUSPENDED):
        return SuspendPhase.SUSPENDED
    return SuspendPhase.NONE
