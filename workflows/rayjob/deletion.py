"""What to clean up after a RayJob finishes, and when (KubeRay J16–J18; pain point P14).

KubeRay has three overlapping mechanisms; this engine runs all of them from one rule list:

* `deletionStrategy.deletionRules`: every rule whose condition matches the final status is due
  at `status.endTime + ttlSeconds`. Of the overdue rules not yet done, the most impactful runs
  first (DeleteSelf > DeleteCluster > DeleteWorkers > DeleteNone), one per pass.
* Legacy `onSuccess` / `onFailure`: the policy for the final Ray job status, due at
  `endTime + ttlSecondsAfterFinished`.
* `shutdownAfterJobFinishes`: DeleteCluster (the submitter Job is kept for its logs), due at
  `endTime + ttlSecondsAfterFinished`; DeleteSelf instead when the operator sets KubeRay's
  DELETE_RAYJOB_CR_AFTER_JOB_FINISHES (`delete_self`, from the read activity's snapshot).

"Done" is judged on the cluster as it is now (`ClusterView`), never remembered, so a rule that
ran before a crash or a continue-as-new is not run twice and one undone by hand is redone.
The workflow sleeps until `next_at` on a durable timer instead of KubeRay's requeue + 2 s.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from activities.rayjob.contract import ClusterView
from crds.enums import DeletionPolicyType, JobStatus
from crds.rayjob import DeletionRule, RayJobSpec, RayJobStatus
from workflows import durations

Policy = DeletionPolicyType

IMPACT: dict[DeletionPolicyType, int] = {
    Policy.DELETE_NONE: 1,
    Policy.DELETE_WORKERS: 2,
    Policy.DELETE_CLUSTER: 3,
    Policy.DELETE_SELF: 4,
}


class DueRule(BaseModel):
    """One policy and the instant it becomes due."""

    model_config = ConfigDict(frozen=True)

    policy: DeletionPolicyType
    due_at: datetime
    source: str
    """Which mechanism asked for it, for the decision log."""


class DeletionStep(BaseModel):
    """What to delete now (if anything) and when to look again."""

    model_config = ConfigDict(frozen=True)

    run: DueRule | None = None
    next_at: datetime | None = None


def _matches(rule: DeletionRule, status: RayJobStatus) -> bool:
    condition = rule.condition
    if condition.job_status is not None:
        return condition.job_status == (status.job_status or JobStatus.NEW)
    return condition.job_deployment_status == status.job_deployment_status


def _due(
    policy: DeletionPolicyType, end: datetime, ttl_seconds: int | None, source: str
) -> list[DueRule]:
    """The rule, due `ttl_seconds` after `end`; none when that is never (past the year 9999)."""
    due_at = durations.after(end, ttl_seconds or 0)
    return [] if due_at is None else [DueRule(policy=policy, due_at=due_at, source=source)]


def due_rules(spec: RayJobSpec, status: RayJobStatus, delete_self: bool = False) -> list[DueRule]:
    """Every deletion the spec asks for once this RayJob has finished, with its due time.

    `delete_self` is DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: it turns `shutdownAfterJobFinishes`
    into deleting the RayJob (which cascades), as KubeRay's handleShutdownAfterJobFinishes.
    """
    end, deployment = status.end_time, status.job_deployment_status
    if end is None or spec.cluster_selector or deployment is None or not deployment.is_terminal:
        return []
    strategy = spec.deletion_strategy
    if strategy is not None and strategy.deletion_rules is not None:
        return [
            due
            for index, rule in enumerate(strategy.deletion_rules)
            if _matches(rule, status)
            for due in _due(rule.policy, end, rule.condition.ttl_seconds, f"deletionRules[{index}]")
        ]
    if strategy is not None:
        return _legacy(spec, status, end)
    if spec.shutdown_after_job_finishes:
        policy = Policy.DELETE_SELF if delete_self else Policy.DELETE_CLUSTER
        return _due(policy, end, spec.ttl_seconds_after_finished, "shutdown")
    return []


def _legacy(spec: RayJobSpec, status: RayJobStatus, end: datetime) -> list[DueRule]:
    strategy = spec.deletion_strategy
    assert strategy is not None
    chosen = {
        JobStatus.SUCCEEDED: strategy.on_success,
        JobStatus.FAILED: strategy.on_failure,
    }.get(status.job_status or JobStatus.NEW)
    if chosen is None or chosen.policy in (None, Policy.DELETE_NONE):
        return []
    source = "onSuccess" if status.job_status == JobStatus.SUCCEEDED else "onFailure"
    return _due(chosen.policy, end, spec.ttl_seconds_after_finished, source)


def is_done(policy: DeletionPolicyType, cluster: ClusterView | None) -> bool:
    """Whether the world already looks as the policy wants (KubeRay isDeletionActionCompleted)."""
    if policy == Policy.DELETE_NONE:
        return True
    if policy == Policy.DELETE_SELF:
        return False  # the RayJob still exists while its workflow decides
    cluster_gone = cluster is None or not cluster.exists or cluster.deleting
    if policy == Policy.DELETE_CLUSTER:
        return cluster_gone
    return cluster_gone or (cluster is not None and cluster.workers_suspended)


def next_deletion(
    spec: RayJobSpec,
    status: RayJobStatus,
    cluster: ClusterView | None,
    now: datetime,
    delete_self: bool = False,
) -> DeletionStep:
    """The most impactful overdue rule not yet done, and the next instant a rule falls due."""
    overdue: list[DueRule] = []
    pending: list[datetime] = []
    for rule in due_rules(spec, status, delete_self):
        if now < rule.due_at:
            pending.append(rule.due_at)
        elif not is_done(rule.policy, cluster):
            overdue.append(rule)
    run = None
    if overdue:
        # max() keeps the first of equals, as KubeRay's selectMostImpactfulRule does.
        run = max(overdue, key=lambda rule: IMPACT[rule.policy])
    return DeletionStep(run=run, next_at=min(pending) if pending else None)
