"""Inputs and results of the RayJob activities (the contract the RayJob workflow codes against).

Kept apart from the implementations so that the workflow sandbox imports plain pydantic models,
not the Kubernetes or HTTP clients. The contract is deliberately small: one snapshot read, a few
idempotent writes named after what they achieve, and one long, heartbeating wait on Ray, so a
RayJob's history grows with its state changes rather than with the job's duration.

Every write is idempotent, as an activity may run twice: objects have names the workflow chose,
a create that finds its object reports `created=False`, deletes tolerate 404, and a Ray job is
submitted under a `submission_id` fixed per attempt, so a second submit is refused by Ray and
counts as success. Activities that create or delete an object record the Kubernetes Event
KubeRay records for it (`JobEventReason`), only when they really did it.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from activities.contract import ActivityRef, Written
from activities.raycluster.contract import RECORD_EVENT, EventSpec, RecordEventInput
from crds.constants import (
    DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS,
    DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS,
)
from crds.enums import ClusterState, JobStatus
from crds.raycluster import RayClusterStatus
from crds.rayjob import RayJobSpec, RayJobStatus
from crds.refs import ObjectRef

__all__ = [
    "ASK_RAY_JOB",
    "CREATE_RAYJOB_CLUSTER",
    "CREATE_SUBMITTER_JOB",
    "DELETE_ATTEMPT",
    "DELETE_RAYJOB",
    "ENSURE_RAYJOB_HEAD_SERVICE",
    "INVALID_SPEC_ERROR",
    "READ_RAYJOB",
    "RECORD_EVENT",
    "SET_RAYJOB_FINALIZER",
    "SET_RAYJOB_SUSPEND",
    "STOP_RAY_JOB",
    "SUBMIT_RAY_JOB",
    "SUSPEND_WORKERS",
    "WRITE_RAYJOB_STATUS",
    "AskRayJobInput",
    "ClusterView",
    "CreateClusterInput",
    "CreateResult",
    "CreateSubmitterInput",
    "DeleteAttemptInput",
    "DeleteAttemptResult",
    "EnsureHeadServiceInput",
    "EventSpec",
    "JobEventReason",
    "JobOperatorOptions",
    "JobSnapshot",
    "RayJobRef",
    "RayJobView",
    "ReadJobInput",
    "RecordEventInput",
    "SetFinalizerInput",
    "SetJobSuspendInput",
    "StopRayJobInput",
    "SubmitRayJobInput",
    "SubmitRayJobResult",
    "SubmitterView",
    "SuspendWorkersInput",
    "WriteJobStatusInput",
    "Written",
]

INVALID_SPEC_ERROR = "InvalidRayJobSpec"
"""`ApplicationError.type` of an activity that met a RayJob field validation refuses (never
retried): the RayJob was edited after the workflow validated it; the next read sees why."""


class JobEventReason(StrEnum):
    """Event reasons KubeRay records on a RayJob (`utils/constant.go`)."""

    CREATED_RAY_CLUSTER = "CreatedRayCluster"
    FAILED_TO_CREATE_RAY_CLUSTER = "FailedToCreateRayCluster"
    DELETED_RAY_CLUSTER = "DeletedRayCluster"
    FAILED_TO_DELETE_RAY_CLUSTER = "FailedToDeleteRayCluster"
    UPDATED_RAY_CLUSTER = "UpdatedRayCluster"
    CREATED_SUBMITTER = "CreatedRayJobSubmitter"
    FAILED_TO_CREATE_SUBMITTER = "FailedToCreateRayJobSubmitter"
    DELETED_SUBMITTER = "DeletedRayJobSubmitter"
    CREATED_SERVICE = "CreatedService"
    UPDATED_SERVICE = "UpdatedService"
    RAY_CLUSTER_NOT_FOUND = "RayClusterNotFound"
    INVALID_SPEC = "InvalidRayJobSpec"
    INVALID_METADATA = "InvalidRayJobMetadata"
    INVALID_STATUS = "InvalidRayJobStatus"
    BATCH_SCHEDULER_CLEANED_UP = "BatchSchedulerCleanedUp"


FAILED_TO_CREATE_POD_GROUP = "FailedToCreatePodGroup"
"""Ours: KubeRay only logs a PodGroup it cannot create, and retries."""


class RayJobRef(BaseModel):
    """Which RayJob an activity works for; every input carries one."""

    model_config = ConfigDict(frozen=True)

    ref: ObjectRef


# --- the snapshot -------------------------------------------------------------------------------


class ReadJobInput(RayJobRef):
    """Read a RayJob, its RayCluster and its submitter.

    The spec travels back only when its generation differs from `known_generation`, and the
    stored status only on the first read (`known_generation` None): the workflow keeps both.
    """

    known_generation: int | None = None
    cluster_name: str | None = None
    """The attempt's RayCluster (status.rayClusterName); None before the first attempt."""
    cluster_as_of: int = 0
    """The newest resourceVersion of the RayCluster known (its create, the bridge's news): the
    worker's copies answer for it, and for its pods, once they have reached it."""
    as_of: int = 0
    """The newest RayJob resourceVersion the workflow wrote or heard of: read it this new."""
    count_left_pods: bool = False
    """Count the pods a missing cluster left: only a teardown waits for them."""


class ClusterView(BaseModel):
    """What the RayJob needs to know about its RayCluster."""

    name: str
    exists: bool = True
    deleting: bool = False
    status: RayClusterStatus | None = None
    """The cluster's status, copied into RayJob `status.rayClusterStatus`."""
    dashboard_url: str | None = None
    """`<head svc>.<ns>.svc.<domain>:<dashboard port>` once the head Service the cluster owns
    exists (`activities.dashboard.heads`)."""
    head_service_problem: str = ""
    """Why the cluster's head Service is not one to call, when it exists but is refused."""
    head_pod: bool = False
    """Whether a head pod exists (SidecarMode fails without one; read in that mode only)."""
    pods: int = 0
    """Pods still labelled with this cluster: teardown is finished only when this is 0 (P15).

    Counted once the cluster is gone, and in SidecarMode; 0 otherwise."""
    workers_suspended: bool = False
    """Every worker group has `suspend: true` (the DeleteWorkers rule is done)."""

    @property
    def ready(self) -> bool:
        """KubeRay's gate: the deprecated `status.state == ready`."""
        return self.exists and self.status is not None and self.status.state == ClusterState.READY

    @property
    def gone(self) -> bool:
        """The CR and every pod of it have disappeared."""
        return not self.exists and self.pods == 0


class SubmitterView(BaseModel):
    """The submitter: the batch/v1 Job (K8sJobMode) or the head's sidecar (SidecarMode)."""

    exists: bool = True
    deleting: bool = False
    finished_at: datetime | None = None
    """When the Job got Complete/Failed, or the sidecar container terminated."""
    failed: bool = False
    """The Job's Failed condition, or a non-zero sidecar exit code."""
    reason: str = ""
    message: str = ""


class JobOperatorOptions(BaseModel):
    """KubeRay's operator-wide RayJob switches, as the worker was configured.

    They change decisions, so the workflow must not read them from its own process: the read
    activity reports them in every snapshot, and replay sees the values recorded then. An
    old history without them replays with KubeRay's defaults, which is what ran.
    """

    model_config = ConfigDict(frozen=True)

    delete_rayjob_cr_after_job_finishes: bool = False
    """DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: `shutdownAfterJobFinishes` deletes the RayJob."""
    transition_grace_period_seconds: int = DEFAULT_TRANSITION_GRACE_PERIOD_SECONDS
    """RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS (J12)."""
    status_check_timeout_seconds: int = DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS
    """RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS (J13)."""


class JobSnapshot(BaseModel):
    """One consistent look at a RayJob and what it owns."""

    exists: bool = True
    resource_version: str = ""
    """The RayJob's version as read: the pass's status write names it to reuse this read."""
    deleting: bool = False
    generation: int = 0
    has_finalizer: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    schema_violations: list[str] = Field(default_factory=list)
    """Why the stored object does not load at all (the rest of the snapshot is then empty)."""
    gate_violations: list[str] = Field(default_factory=list)
    """The fields the spec uses whose KubeRay feature gate is off in this worker's settings."""
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None
    cluster: ClusterView | None = None
    submitter: SubmitterView | None = None
    options: JobOperatorOptions = Field(default_factory=JobOperatorOptions)
    """How the worker that read this is configured (decisions must use these, not defaults)."""


# --- Kubernetes writes --------------------------------------------------------------------------


class CreateClusterInput(RayJobRef):
    """Create the attempt's RayCluster from the RayJob's `rayClusterSpec`, owned by the RayJob.

    Labels and annotations as KubeRay's `constructRayClusterForRayJob` (the RayJob's own, plus
    originated-from and `ray.io/job-submission-mode`) and ours, `ray.io/rayjob-attempt`. In
    SidecarMode the head gets the `ray-job-submitter` container, `restartPolicy: Never` and the
    `ray.io/disable-provisioned-head-restart` annotation.
    """

    cluster_name: str
    job_id: str
    attempt: int
    as_of: int = 0
    """The newest RayJob resourceVersion the workflow knows (`ReadJobInput.as_of`): the RayJob
    comes from the worker's copy once the copy has reached it."""


class CreateSubmitterInput(RayJobRef):
    """Create the K8sJobMode submitter Job `<rayjob>` for this attempt."""

    cluster_name: str
    job_id: str
    attempt: int
    as_of: int = 0
    """The newest RayJob resourceVersion the workflow knows (`ReadJobInput.as_of`): the RayJob
    comes from the worker's copy once the copy has reached it."""
    cluster_as_of: int = 0
    """As `ReadJobInput.cluster_as_of`: the cluster comes from the worker's copy once the copy
    has reached it."""


class CreateResult(BaseModel):
    """`created` is False when the object already existed (a retried activity)."""

    created: bool = True
    version: int = 0
    """The object's resourceVersion as created or found (0: none; results from before)."""


class DeleteAttemptInput(RayJobRef):
    """Delete an attempt's RayCluster and/or submitter Job (background propagation)."""

    cluster_name: str | None
    delete_cluster: bool = True
    delete_submitter: bool = True
    cluster_as_of: int = 0
    """As `ReadJobInput.cluster_as_of`: the cluster and its pods come from the worker's copies
    once they have reached it."""


class DeleteAttemptResult(BaseModel):
    """What still exists (objects or pods being terminated); empty means the attempt is gone."""

    remaining: list[str] = Field(default_factory=list)


class SuspendWorkersInput(RayJobRef):
    """The DeleteWorkers policy: set `suspend: true` on every worker group of the cluster."""

    cluster_name: str


class EnsureHeadServiceInput(RayJobRef):
    """Create or re-point `<rayjob>-head-svc` at the attempt's head pod (KubeRay J15)."""

    cluster_name: str
    as_of: int = 0
    """The newest RayJob resourceVersion the workflow knows (`ReadJobInput.as_of`): the RayJob
    comes from the worker's copy once the copy has reached it."""
    cluster_as_of: int = 0
    """As `ReadJobInput.cluster_as_of`: the cluster comes from the worker's copy once the copy
    has reached it."""


class WriteJobStatusInput(RayJobRef):
    """Replace the status subresource of the RayJob."""

    status: RayJobStatus
    read_version: str = ""
    """The version the pass read (`JobSnapshot.resource_version`): its status is replaced."""


class SetJobSuspendInput(RayJobRef):
    """Write `spec.suspend` (a user's suspend or resume signal) so the CR shows the truth."""

    suspend: bool


class SetFinalizerInput(RayJobRef):
    """Add or remove `ray.io/rayjob-finalizer`."""

    present: bool
    as_of: int = 0
    """The newest RayJob resourceVersion the workflow knows (`ReadJobInput.as_of`): the RayJob
    comes from the worker's copy once the copy has reached it."""


# --- Ray dashboard ------------------------------------------------------------------------------


class RayJobView(BaseModel):
    """What the dashboard says about one Ray job (`GET /api/jobs/<id>`)."""

    model_config = ConfigDict(frozen=True)

    reachable: bool = True
    """False when the dashboard did not answer (the job's state is then unknown)."""
    found: bool = False
    status: JobStatus = JobStatus.NEW
    message: str = ""
    start_time_ms: int = 0
    end_time_ms: int = 0
    error: str = ""

    def same_as(self, other: RayJobView | None) -> bool:
        """Whether nothing the state machine reacts to differs."""
        if other is None:
            return False
        return (self.reachable, self.found, self.status) == (
            other.reachable,
            other.found,
            other.status,
        )


class RayJobDashboardInput(RayJobRef):
    """A call to the dashboard of the RayJob's cluster about one Ray job.

    The cluster is named, never its address: the activity reads the RayCluster in the RayJob's
    namespace and calls it through the head Service that cluster owns.
    """

    cluster_name: str
    job_id: str


class SubmitRayJobInput(RayJobDashboardInput):
    """`POST /api/jobs/` with `submission_id=job_id`, built from the RayJob's spec."""

    as_of: int
    """The newest RayJob version the workflow knows (it read it or wrote it): the spec comes
    from the worker's copy once the copy has reached it, else from the API server."""


class SubmitRayJobResult(BaseModel):
    """`duplicate`: Ray already knew the submission id, which is success (idempotence)."""

    submitted: bool = True
    duplicate: bool = False
    error: str = ""
    """Set (and `submitted` False) when the dashboard could not be reached."""


class AskRayJobInput(RayJobDashboardInput):
    """`GET /api/jobs/<id>`, once: the job's view as the dashboard gives it now."""


class StopRayJobInput(RayJobDashboardInput):
    """`POST /api/jobs/<id>/stop`, best effort."""


# The activities, as the workflows call them (the names are in recorded histories).

READ_RAYJOB = ActivityRef("read_rayjob", ReadJobInput, JobSnapshot)
CREATE_RAYJOB_CLUSTER = ActivityRef("create_rayjob_cluster", CreateClusterInput, CreateResult)
CREATE_SUBMITTER_JOB = ActivityRef("create_submitter_job", CreateSubmitterInput, CreateResult)
ENSURE_RAYJOB_HEAD_SERVICE = ActivityRef(
    "ensure_rayjob_head_service", EnsureHeadServiceInput, type(None)
)
DELETE_ATTEMPT = ActivityRef("delete_attempt", DeleteAttemptInput, DeleteAttemptResult)
SUSPEND_WORKERS = ActivityRef("suspend_workers", SuspendWorkersInput, type(None))
DELETE_RAYJOB = ActivityRef("delete_rayjob", RayJobRef, type(None))
SUBMIT_RAY_JOB = ActivityRef("submit_ray_job", SubmitRayJobInput, SubmitRayJobResult)
ASK_RAY_JOB = ActivityRef("ask_ray_job", AskRayJobInput, RayJobView)
STOP_RAY_JOB = ActivityRef("stop_ray_job", StopRayJobInput, type(None))
WRITE_RAYJOB_STATUS = ActivityRef("write_rayjob_status", WriteJobStatusInput, Written)
SET_RAYJOB_SUSPEND = ActivityRef("set_rayjob_suspend", SetJobSuspendInput, Written)
SET_RAYJOB_FINALIZER = ActivityRef("set_rayjob_finalizer", SetFinalizerInput, Written)
