"""Inputs and results of the RayCluster activities (the contract the workflow codes against).

Kept apart from the activity implementations so that the workflow sandbox imports plain
pydantic models, not the Kubernetes client.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from activities.contract import (
    ActivityRef,
    DesiredResources,
    PodView,
    ReplicaFailure,
    ServiceView,
    Written,
)
from activities.kube.vocabulary import EventType, JobConditionType
from crds.messages import EVENT_MESSAGE_LIMIT, clipped
from crds.raycluster import RayClusterSpec, RayClusterStatus
from crds.refs import ObjectRef


class ReadClusterInput(BaseModel):
    """Read a RayCluster and what it owns.

    The spec travels back only when its generation differs from `known_generation`, and the
    stored status only on the first read (`known_generation` None): both are large, and the
    workflow keeps them in its own state otherwise.
    """

    ref: ObjectRef
    known_generation: int | None = None
    pods_as_of: int = 0
    """The newest pod resourceVersion the bridge reported: pods are read at least this new."""
    as_of: int = 0
    """The newest resourceVersion of the RayCluster the workflow knows of (its own writes, the
    bridge's news): the worker's copy answers once it has reached it; 0 reads it live."""


class ClusterSnapshot(BaseModel):
    """One consistent look at a RayCluster, its pods and its head Service."""

    exists: bool = True
    resource_version: str = ""
    """The RayCluster's version as read: the pass's later steps name it to reuse this read."""
    generation: int = 0
    deleting: bool = False
    annotations: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    schema_violations: list[str] = Field(default_factory=list)
    """Why the stored object does not load at all (the rest of the snapshot is then empty)."""
    gate_violations: list[str] = Field(default_factory=list)
    """The fields the spec uses whose KubeRay feature gate is off in this worker's settings."""
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None
    spec_hash: str = ""
    head_prefix: str = ""
    head_name: str = ""
    """The head pod's fixed name with KubeRay's ENABLE_DETERMINISTIC_HEAD_POD_NAME; empty: the
    workflow adds a random suffix to `head_prefix`."""
    worker_prefixes: dict[str, str] = Field(default_factory=dict)
    resources: DesiredResources = Field(default_factory=DesiredResources)
    pods: list[PodView] = Field(default_factory=list)
    pods_seen: int = 0
    """The pod version `pods` reflects: every pod event up to it is in them (0 in histories
    before it). News of pods no newer than this needs no pass."""
    head_service: ServiceView | None = None
    missing_objects: list[str] = Field(default_factory=list)
    """`Kind/name` of owned objects the spec calls for that do not exist (Services, autoscaler
    RBAC, the GCS storage PVC)."""
    deleted_at: datetime | None = None
    """The CR's deletionTimestamp."""
    cleanup_job_exists: bool = False
    cleanup_job_finished: JobConditionType | None = None
    """"Complete" or "Failed" once the Redis cleanup Job ended (read only while deleting)."""
    redis_cleanup: bool = True
    """KubeRay's ENABLE_GCS_FT_REDIS_CLEANUP as the worker is configured: the finalizer
    decision reads it here, from history, never from the workflow's environment."""


def _event_message(text: str) -> str:
    return clipped(text, EVENT_MESSAGE_LIMIT)


class EventSpec(BaseModel):
    """A Kubernetes Event to record on the CR."""

    type: EventType = EventType.NORMAL
    reason: str
    message: Annotated[str, AfterValidator(_event_message)]
    """Clipped to an Event's limit when made, so the history never holds a longer one."""


class PodDeletion(BaseModel):
    """Delete one pod; `reason` goes into the Kubernetes Event."""

    model_config = ConfigDict(frozen=True)

    name: str
    group: str
    reason: str


class PodCreation(BaseModel):
    """Create one Ray pod under a name the workflow chose (so a retried create is a no-op)."""

    model_config = ConfigDict(frozen=True)

    name: str
    group: str
    head: bool = False
    replica_index: int | None = None
    replica_name: str | None = None
    host_index: int | None = None


class ApplyClusterInput(BaseModel):
    """Carry out one pass's decisions for a RayCluster.

    The activity builds every object from the CR it reads, and refuses (`stale`) when the CR's
    generation is no longer the one the decisions were made for.
    """

    ref: ObjectRef
    generation: int
    read_version: str = ""
    """The version the pass read (`ClusterSnapshot.resource_version`): used as read, not again."""
    ensure_objects: bool = False
    delete_all_reason: str | None = None
    deletions: list[PodDeletion] = Field(default_factory=list)
    creations: list[PodCreation] = Field(default_factory=list)
    events: list[EventSpec] = Field(default_factory=list)


class ApplyClusterResult(BaseModel):
    """What was done; `failure` is set when a create or delete failed (the pass stopped there)."""

    stale: bool = False
    created: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    failure: ReplicaFailure | None = None
    created_pods: list[PodView] = Field(default_factory=list)
    """The created pods as the API server returned them (none in histories before it)."""
    pods_version: int = 0
    """The newest resourceVersion among them: a later read sees pods at least this new."""
    head_service: ServiceView | None = None
    """The head Service as this apply created or found it, when it made the missing objects:
    the status then names it at once, as KubeRay's reconcile that its creation wakes does."""


class WriteStatusInput(BaseModel):
    """Replace the status subresource of a RayCluster."""

    ref: ObjectRef
    status: RayClusterStatus
    read_version: str = ""
    """The version the pass read: its status is what the new one replaces."""


class SetSuspendInput(BaseModel):
    """Write `spec.suspend` (a user's suspend or resume signal) so the CR shows the truth."""

    ref: ObjectRef
    suspend: bool


class CleanupStep(StrEnum):
    """The one thing a pass does about the Redis cleanup finalizer."""

    NONE = "None"
    ADD_FINALIZER = "AddFinalizer"
    DELETE_PODS = "DeletePods"
    WAIT_FOR_HEAD = "WaitForHead"
    CREATE_JOB = "CreateJob"
    WAIT_FOR_JOB = "WaitForJob"
    REMOVE_FINALIZER = "RemoveFinalizer"
    FORCE_REMOVE_FINALIZER = "ForceRemoveFinalizer"


class CleanupStepInput(BaseModel):
    """Carry out one step of the Redis cleanup finalizer (see `workflows.raycluster.cleanup`)."""

    ref: ObjectRef
    step: CleanupStep
    reason: str = ""


class RecordEventInput(BaseModel):
    """Record a Kubernetes Event on any ray.io object."""

    ref: ObjectRef
    event: EventSpec


# The activities, as the workflows call them (the names are in recorded histories).

READ_CLUSTER = ActivityRef("read_raycluster", ReadClusterInput, ClusterSnapshot)
APPLY_CLUSTER = ActivityRef("apply_raycluster", ApplyClusterInput, ApplyClusterResult)
WRITE_CLUSTER_STATUS = ActivityRef("write_raycluster_status", WriteStatusInput, Written)
SET_CLUSTER_SUSPEND = ActivityRef("set_raycluster_suspend", SetSuspendInput, Written)
RECORD_EVENT = ActivityRef("record_event", RecordEventInput, type(None))
CLEANUP_CLUSTER = ActivityRef("raycluster_cleanup_step", CleanupStepInput, Written)
