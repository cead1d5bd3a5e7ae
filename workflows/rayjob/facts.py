"""What one RayJob decision looks at (`Facts`) and what it returns (`Step`).

With the helpers every state's handler uses to build a step. Kept apart from `machine` so that
the Running state's larger handler (`running`) can live in its own module without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from activities.rayjob.contract import ClusterView, JobOperatorOptions, SubmitterView
from crds.enums import JobDeploymentStatus, JobFailedReason, JobSubmissionMode
from crds.rayjob import RayJobSpec, RayJobStatus
from workflows.names import KUBERNETES_ALPHABET
from workflows.rayjob import actions as act
from workflows.rayjob.state import Attempt

Deploy = JobDeploymentStatus
Mode = JobSubmissionMode


@dataclass(frozen=True)
class Facts:
    """Everything one decision looks at."""

    name: str
    spec: RayJobSpec
    status: RayJobStatus
    attempt: Attempt
    cluster: ClusterView | None = None
    submitter: SubmitterView | None = None
    has_finalizer: bool = True
    options: JobOperatorOptions = field(default_factory=JobOperatorOptions)
    """The operator's RayJob switches, as the read activity reported them (history)."""
    name_alphabet: str = KUBERNETES_ALPHABET
    """What a new attempt's job id and cluster name are drawn from (`naming`)."""
    cluster_status_early: bool = False
    """Copy the cluster's status while Initializing too, as workflows started before the
    patch `rayjob-cluster-status-while-running` did (their histories hold those writes)."""
    sidecar_catch_up: bool = False
    """A SidecarMode job's end waits briefly for its cluster's status to show the exited
    sidecar (patch `rayjob-sidecar-end-waits-for-cluster`; older histories did not)."""

    @property
    def mode(self) -> JobSubmissionMode:
        """The submission mode, K8sJobMode when unset."""
        return self.spec.submission_mode or Mode.K8S_JOB


@dataclass
class Step:
    """The outcome of one decision."""

    status: RayJobStatus
    attempt: Attempt
    actions: list[act.Action] = field(default_factory=list)
    waiting: str = ""
    poll: bool = False
    """Ask Ray for the job's status (the wait activity) after the actions."""
    again: bool = False
    """The deployment status moved on: decide again right away, without waiting."""
    wake_at: datetime | None = None
    """The next instant this decision could change on its own (a deadline or a TTL)."""
    busy: bool = False
    """Look again soon even without a signal: objects are being torn down, or a borrowed
    cluster (clusterSelector), whose changes are not signalled, is awaited."""
    notes: list[str] = field(default_factory=list)


def fail(facts: Facts, reason: JobFailedReason, message: str, **fields: object) -> Step:
    """Move to Failed with a reason and a message (retries are decided by `status.settle`)."""
    status = facts.status.model_copy(
        update={"job_deployment_status": Deploy.FAILED, "reason": reason, "message": message}
        | fields
    )
    return Step(status=status, attempt=facts.attempt, again=True, notes=[f"{reason}: {message}"])


def move(facts: Facts, to: JobDeploymentStatus, note: str, **fields: object) -> Step:
    """Move to another deployment status."""
    status = facts.status.model_copy(update={"job_deployment_status": to} | fields)
    return Step(status=status, attempt=facts.attempt, again=True, notes=[note])


def stay(
    facts: Facts, waiting: str, *, busy: bool = False, wake_at: datetime | None = None
) -> Step:
    """Keep the deployment status and wait for something."""
    return Step(
        status=facts.status, attempt=facts.attempt, waiting=waiting, busy=busy, wake_at=wake_at
    )
