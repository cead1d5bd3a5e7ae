"""What a workflow sees of the cluster: small, typed views of pods and Services.

A reconcile pass reads the CR and the objects it owns in one activity and hands the workflow
these views instead of the raw objects: a pod is a few hundred bytes here instead of tens of
kilobytes, which keeps workflow histories small, and the decision code reads fields that mean
something (`ready`, `ray_container_terminated`) instead of digging through status blocks.

The summarising functions are pure, so the rules they encode (what "ready" means, which
container is the Ray container) are tested without any API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from activities.kube.vocabulary import PodConditionType, PodPhase, RestartPolicy
from crds import constants
from crds.enums import ConditionStatus, RayClusterConditionReason, RayNodeType

JSON = dict[str, Any]
InputT = TypeVar("InputT")
ResultT = TypeVar("ResultT")


@dataclass(frozen=True)
class ActivityRef(Generic[InputT, ResultT]):
    """An activity as a workflow calls it: the name it is registered under, its input and result.

    Workflows call activities through these (`workflows.activity_calls`), so mypy holds each
    call's argument and result to the activity's types; `tests/activities/test_contracts.py`
    holds every implementation to its reference. `result` is `type(None)` for an activity
    that returns nothing.
    """

    name: str
    input: type[InputT]
    result: type[ResultT]


class ContainerProblem(BaseModel):
    """The first container that keeps a pod from being ready, as kubectl would report it."""

    model_config = ConfigDict(frozen=True)

    reason: str
    message: str


class Written(BaseModel):
    """What a write to a CR left: its new resourceVersion (0: nothing was written).

    The workflow reads the CR from the worker's copy once the copy has reached it. Histories
    from before a write returned this hold none: such a write reads back as None.
    """

    version: int = 0


class PodView(BaseModel):
    """One Ray pod as the decision code needs it."""

    model_config = ConfigDict(frozen=True)

    name: str
    uid: str = ""
    node_type: str = ""
    group: str = ""
    phase: str = ""
    ready: bool = False
    ready_reason: str = ""
    ready_message: str = ""
    terminating: bool = False
    restart_policy: str = RestartPolicy.ALWAYS.value
    ray_container_terminated: bool = False
    not_ready_container: ContainerProblem | None = None
    pod_ip: str = ""
    recreate_hash: str = ""
    kuberay_version: str = ""
    replica_index: int | None = None


WORKER_UNREAD = frozenset({"pod_ip", "ready_reason", "ready_message", "not_ready_container"})
"""What no decision reads of a worker pod (the status tells these of the head only), unless
mTLS certificates name its address: `bridge.filtering` leaves a change of them unsignalled."""


class ServiceView(BaseModel):
    """One Service the cluster owns."""

    model_config = ConfigDict(frozen=True)

    name: str
    cluster_ip: str = ""
    ports: dict[str, str] = {}
    """Port name → the value KubeRay reports in `status.endpoints` (nodePort, else targetPort)."""


class DesiredResources(BaseModel):
    """Totals of the pod resources the spec asks for, as Kubernetes quantities."""

    model_config = ConfigDict(frozen=True)

    cpu: str = "0"
    memory: str = "0"
    gpu: str = "0"
    tpu: str = "0"


class ReplicaFailure(BaseModel):
    """A failed pod create or delete in this pass (the `ReplicaFailure` condition)."""

    model_config = ConfigDict(frozen=True)

    reason: RayClusterConditionReason
    message: str

    @classmethod
    def refused(cls, reason: RayClusterConditionReason, api_message: str) -> ReplicaFailure:
        """The failure of a call the API server refused, worded as KubeRay words it.

        KubeRay joins its reason and the API server's refusal with Go's `errors.Join`: the
        reason, then the refusal on the next line.
        """
        return cls(reason=reason, message=f"{reason}\n{api_message}")


_POD_META_READ = (
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "deletionTimestamp",
    "ownerReferences",  # whose pod it is: only a cluster's own head pod is called directly
)


def pod_essentials(pod: JSON) -> JSON:
    """What `summarize_pod` and the pod-IP rules read of a pod: all a cached pod needs to keep.

    The containers' bodies (command, env, probes, mounts) are most of a Ray pod's size.
    """
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    containers = [
        {"name": container.get("name")}
        for container in spec.get("containers") or []
        if isinstance(container, dict)
    ]
    kept_spec: JSON = {"containers": containers}
    if "restartPolicy" in spec:
        kept_spec["restartPolicy"] = spec["restartPolicy"]
    return {
        "metadata": {key: meta[key] for key in _POD_META_READ if key in meta},
        "spec": kept_spec,
        "status": pod.get("status") or {},
    }


def summarize_pod(pod: JSON) -> PodView:
    """Reduce a pod object to a `PodView`."""
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    ready_cond = _pod_condition(status, PodConditionType.READY)
    index = labels.get(constants.LABEL_WORKER_REPLICA_INDEX)
    return PodView(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        node_type=labels.get(constants.LABEL_NODE_TYPE, ""),
        group=labels.get(constants.LABEL_GROUP, ""),
        phase=status.get("phase", ""),
        ready=status.get("phase") == PodPhase.RUNNING
        and (ready_cond or {}).get("status") == ConditionStatus.TRUE,
        ready_reason=(ready_cond or {}).get("reason", ""),
        ready_message=(ready_cond or {}).get("message", ""),
        terminating=bool(meta.get("deletionTimestamp")),
        restart_policy=spec.get("restartPolicy") or "Always",
        ray_container_terminated=_ray_container_state(spec, status).get("terminated") is not None,
        not_ready_container=_first_not_ready_container(status),
        pod_ip=status.get("podIP", ""),
        recreate_hash=annotations.get(constants.ANNOTATION_RECREATE_HASH, ""),
        kuberay_version=annotations.get(constants.ANNOTATION_KUBERAY_VERSION, ""),
        replica_index=_replica_index(index),
    )


def _replica_index(label: str | None) -> int | None:
    """The `ray.io/worker-group-replica-index` label as a number, if it is ASCII digits.

    `str.isdigit()` alone also takes "²", which `int()` refuses. Label syntax rules it out on a
    real API server, but a reader of every pod of a cluster should not count on its writer.
    """
    if label and label.isascii() and label.isdigit():
        return int(label)  # a label value has at most 63 characters
    return None


def summarize_service(service: JSON) -> ServiceView:
    """Reduce a Service object to a `ServiceView`."""
    spec = service.get("spec", {})
    ports: dict[str, str] = {}
    for port in spec.get("ports") or []:
        name = port.get("name")
        if not name:
            continue
        value = port.get("nodePort") or port.get("targetPort")
        if value:
            ports[name] = str(value)
    return ServiceView(
        name=service.get("metadata", {}).get("name", ""),
        cluster_ip=spec.get("clusterIP", ""),
        ports=ports,
    )


def is_head(pod: PodView) -> bool:
    """Whether the pod is a Ray head."""
    return pod.node_type == RayNodeType.HEAD


def is_worker(pod: PodView) -> bool:
    """Whether the pod is a Ray worker."""
    return pod.node_type == RayNodeType.WORKER


def _pod_condition(status: JSON, kind: str) -> JSON | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _ray_container_state(spec: JSON, status: JSON) -> JSON:
    """State of the Ray container, which KubeRay defines as the pod's first container."""
    containers = spec.get("containers") or []
    if not containers:
        return {}
    name = containers[constants.RAY_CONTAINER_INDEX].get("name")
    for container in status.get("containerStatuses") or []:
        if container.get("name") == name:
            return dict(container.get("state") or {})
    return {}


def _first_not_ready_container(status: JSON) -> ContainerProblem | None:
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        for key in ("waiting", "terminated"):
            if key in state:
                detail = state[key] or {}
                return ContainerProblem(
                    reason=detail.get("reason", ""),
                    message=f"{container.get('name', '')}: {detail.get('message', '')}",
                )
    return None
