"""KubeRay's Redis cleanup finalizer (C20 in docs/kuberay-parity.md) as a pure function.

The GCS of a fault-tolerant cluster keeps its state in Redis under the cluster's storage
namespace. KubeRay adds `ray.io/gcs-ft-redis-cleanup-finalizer` before anything else, and on
deletion removes the pods, waits for the head to be gone (a live GCS would write the keys
again), runs the `<cluster>-redis-cleanup` Job and removes the finalizer when the Job ends,
either way. A cleanup that cannot finish is force-removed after `ray.io/gcs-ft-deletion-timeout`
seconds (default 300) with a `ForceDeletedStuckCluster` warning — measured from the CR's
deletionTimestamp, so a restarted worker resumes the same deadline. Unlike KubeRay, nothing
is created in a namespace that is itself being deleted (pain point P1): the finalizer goes at
once, with the same warning. With KubeRay's ENABLE_GCS_FT_REDIS_CLEANUP=false (`enabled`) no
finalizer is added, and one left from before is removed without a Job: KubeRay would leave it,
and the CR stuck in Terminating.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from activities.kube.vocabulary import JobConditionType
from activities.raycluster.contract import CleanupStep as CleanupStep  # the activity input names it
from activities.raycluster.contract import ClusterSnapshot
from crds import constants as k
from crds import flags
from crds.enums import GcsFaultToleranceBackend, RayNodeType
from crds.raycluster import RayClusterSpec
from crds.validation import formats
from workflows import durations


class CleanupFacts(BaseModel):
    """What the decision reads."""

    model_config = ConfigDict(frozen=True)

    spec: RayClusterSpec
    annotations: dict[str, str]
    has_finalizer: bool
    deleted_at: datetime | None
    live_pods: int
    """Pods of the cluster not yet being deleted."""
    head_pods: int
    """Head pods, terminating ones included."""
    job_finished: JobConditionType | None = None
    """"Complete" or "Failed" once the cleanup Job ended; None while it runs or is absent."""
    job_exists: bool = False
    enabled: bool = True
    """ENABLE_GCS_FT_REDIS_CLEANUP, as the read activity reported it."""


class CleanupDecision(BaseModel):
    """The step, why, and when to look again if nothing else happens first."""

    model_config = ConfigDict(frozen=True)

    step: CleanupStep
    reason: str = ""
    deadline: datetime | None = None


def needs_redis_cleanup(spec: RayClusterSpec, annotations: dict[str, str]) -> bool:
    """FT is on (options block or legacy annotation) with the Redis backend."""
    options = spec.gcs_fault_tolerance_options
    legacy = flags.is_on(annotations.get(k.ANNOTATION_FT_ENABLED))
    if options is None and not legacy:
        return False
    return options is None or options.backend != GcsFaultToleranceBackend.ROCKSDB


def deletion_timeout(annotations: dict[str, str]) -> timedelta:
    """`ray.io/gcs-ft-deletion-timeout` seconds when a positive integer, else 300 s.

    Read as KubeRay's `strconv.Atoi` reads it (ASCII digits, a sign), within a Go Duration.
    """
    seconds = formats.parse_go_seconds(annotations.get(k.ANNOTATION_GCS_FT_DELETION_TIMEOUT, ""))
    if seconds is not None and seconds > 0:
        return timedelta(seconds=seconds)
    return timedelta(seconds=k.DEFAULT_GCS_FT_DELETION_TIMEOUT_SECONDS)


def facts_of(
    spec: RayClusterSpec, annotations: dict[str, str], snap: ClusterSnapshot
) -> CleanupFacts:
    """The facts a pass's snapshot gives the decision."""
    return CleanupFacts(
        spec=spec,
        annotations=annotations,
        has_finalizer=k.FINALIZER_GCS_FT_REDIS_CLEANUP in snap.finalizers,
        deleted_at=snap.deleted_at,
        live_pods=sum(1 for p in snap.pods if not p.terminating),
        head_pods=sum(1 for p in snap.pods if p.node_type == RayNodeType.HEAD),
        job_exists=snap.cleanup_job_exists,
        job_finished=snap.cleanup_job_finished,
        enabled=snap.redis_cleanup,
    )


def cleanup_step(facts: CleanupFacts, now: datetime) -> CleanupDecision:
    """Decide this pass's finalizer work."""
    wanted = facts.enabled and needs_redis_cleanup(facts.spec, facts.annotations)
    if facts.deleted_at is None:
        if wanted and not facts.has_finalizer:
            return CleanupDecision(step=CleanupStep.ADD_FINALIZER, reason="GCS FT uses Redis")
        return CleanupDecision(step=CleanupStep.NONE)
    if not facts.has_finalizer:
        return CleanupDecision(step=CleanupStep.NONE)
    if not wanted:
        reason = "no Redis state to clean (embedded GCS storage); the finalizer is stale"
        if not facts.enabled:
            reason = "Redis cleanup is off (ENABLE_GCS_FT_REDIS_CLEANUP=false); clean it by hand"
        return CleanupDecision(step=CleanupStep.REMOVE_FINALIZER, reason=reason)
    deadline = durations.after(facts.deleted_at, deletion_timeout(facts.annotations))
    if deadline is not None and now >= deadline:
        reason = f"Redis cleanup did not finish within {deletion_timeout(facts.annotations)}"
        return CleanupDecision(step=CleanupStep.FORCE_REMOVE_FINALIZER, reason=reason)
    if facts.live_pods or facts.head_pods:
        step = CleanupStep.DELETE_PODS if facts.live_pods else CleanupStep.WAIT_FOR_HEAD
        reason = "the head must be gone before its storage namespace is cleaned"
        return CleanupDecision(step=step, reason=reason, deadline=deadline)
    if facts.job_finished is not None:
        reason = f"the Redis cleanup Job ended: {facts.job_finished}"
        return CleanupDecision(step=CleanupStep.REMOVE_FINALIZER, reason=reason)
    if facts.job_exists:
        reason = "waiting for the Redis cleanup Job"
        return CleanupDecision(step=CleanupStep.WAIT_FOR_JOB, reason=reason, deadline=deadline)
    return CleanupDecision(
        step=CleanupStep.CREATE_JOB, reason="run the Redis cleanup Job", deadline=deadline
    )
