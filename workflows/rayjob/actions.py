"""What the RayJob state machine asks the workflow to do: small, typed, in order.

Each action maps to one idempotent activity. Actions carry names, never manifests: the
activities build objects from the RayJob CR they read, so histories stay small and never
hold a secret value.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from activities.kube.vocabulary import EventType
from crds.enums import DeletionPolicyType


class Action(BaseModel):
    """Base of every action."""

    model_config = ConfigDict(frozen=True)


class AddFinalizer(Action):
    """Add `ray.io/rayjob-finalizer` so a deletion waits until the Ray job is stopped."""


class CreateCluster(Action):
    """Create the attempt's RayCluster."""

    cluster_name: str
    job_id: str


class CreateSubmitter(Action):
    """Create the K8sJobMode submitter Job (it submits to the cluster's own head Service)."""

    cluster_name: str
    job_id: str


class EnsureHeadService(Action):
    """Point `<rayjob>-head-svc` at the attempt's head."""

    cluster_name: str


class SubmitJob(Action):
    """HTTPMode: submit the attempt's Ray job under its fixed submission id, to its cluster."""

    cluster_name: str
    job_id: str
    resubmit: bool = False


class DeleteAttempt(Action):
    """Suspending / Retrying: delete the attempt's cluster and submitter, wait until gone."""

    cluster_name: str | None
    delete_cluster: bool
    delete_submitter: bool


class ApplyDeletionRule(Action):
    """Run one cleanup policy of a finished RayJob."""

    policy: DeletionPolicyType
    cluster_name: str | None
    source: str


class RecordEvent(Action):
    """Record a Kubernetes Event on the RayJob."""

    type: EventType
    reason: str
    message: str
