"""How the RayCluster workflow puts its decisions into words.

Event reasons, what it waits for and the lines of its decision log, as pure functions; the
words end up in the Temporal UI, `kuberay-temporal status` and Kubernetes Events.
"""

from __future__ import annotations

from activities.raycluster import contract
from crds.refs import ObjectRef
from workflows.raycluster.plans import PodPlan, SuspendPhase
from workflows.raycluster.state import RayClusterState


def invalid_reason(violations: list[str]) -> str:
    """KubeRay's Event reason: metadata is checked first, then the status, then the spec."""
    if any(v.startswith("metadata") for v in violations):
        return "InvalidRayClusterMetadata"
    if all(v.startswith("status") for v in violations):
        return "InvalidRayClusterStatus"
    return "InvalidRayClusterSpec"


def waiting_for(plan: PodPlan, phase: SuspendPhase, creations_seen: bool = False) -> list[str]:
    """What the cluster waits for after this plan, the stopping reason first.

    `creations_seen`: the pass counted the pods it created, so they are not waited for.
    """
    waiting = list(plan.waiting) + ([] if creations_seen else plan.creating)
    if plan.stopped:
        waiting.insert(0, plan.stopped)
    if phase == SuspendPhase.SUSPENDING:
        waiting.append("all pods to be deleted (suspending)")
    return waiting


def describe_plan(plan: PodPlan) -> str:
    """The plan in one line, as the apply activity's summary."""
    parts = []
    if plan.delete_all_reason:
        parts.append(f"delete all pods: {plan.delete_all_reason}")
    if plan.deletions:
        parts.append(f"delete {len(plan.deletions)} pod(s)")
    if plan.creations:
        parts.append(f"create {len(plan.creations)} pod(s)")
    return "; ".join(parts) or "create missing owned objects"


def decision_lines(plan: PodPlan, result: contract.ApplyClusterResult) -> list[str]:
    """What the plan did, for the decision log: only the pods the apply really touched."""
    lines = []
    if plan.delete_all_reason:
        lines.append(f"deleted all pods: {plan.delete_all_reason}")
    lines += [f"deleted {d.name}: {d.reason}" for d in plan.deletions if d.name in result.deleted]
    lines += [f"created {c.name} ({c.group})" for c in plan.creations if c.name in result.created]
    if result.failure:
        lines.append(f"{result.failure.reason}: {result.failure.message}")
    return lines


def summary(ref: ObjectRef, headline: str, state: RayClusterState) -> str:
    """The workflow's current details in the Temporal UI: state, workers ready, what it awaits."""
    status = state.status
    lines = [f"**{ref}**: {headline}"]
    if status is not None and status.desired_worker_replicas is not None:
        lines.append(
            f"workers ready {status.ready_worker_replicas or 0}/{status.desired_worker_replicas}"
        )
    lines += [f"waiting for {w}" for w in state.waiting]
    return "\n\n".join(lines)
