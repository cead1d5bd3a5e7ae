"""The words of the RayCluster workflow: Event reasons, waits and decision-log lines."""

from __future__ import annotations

import pytest

from activities.contract import ReplicaFailure
from activities.raycluster.contract import ApplyClusterResult, PodCreation, PodDeletion
from crds.enums import RayClusterConditionReason
from workflows.raycluster import narration
from workflows.raycluster.plans import PodPlan, SuspendPhase


@pytest.mark.parametrize(
    ("violations", "reason"),
    [
        pytest.param(
            ["metadata.name: too long", "spec.x: bad"],
            "InvalidRayClusterMetadata",
            id="metadata-first",
        ),
        pytest.param(["status.state: bad"], "InvalidRayClusterStatus", id="status-only"),
        pytest.param(
            ["status.state: bad", "spec.x: bad"], "InvalidRayClusterSpec", id="spec-and-status"
        ),
        pytest.param(["spec.headGroupSpec: missing"], "InvalidRayClusterSpec", id="spec"),
    ],
)
def test_invalid_reason_follows_kuberays_order(violations: list[str], reason: str) -> None:
    assert narration.invalid_reason(violations) == reason


PLAN = PodPlan(
    deletions=[
        PodDeletion(name="w-1", group="g", reason="scale down"),
        PodDeletion(name="w-2", group="g", reason="x"),
    ],
    creations=[PodCreation(name="w-3", group="g")],
    stopped="head pod is terminating",
    waiting=["pod w-3 to be ready"],
)


def test_waiting_names_the_stop_first_and_the_suspension_last() -> None:
    assert narration.waiting_for(PLAN, SuspendPhase.SUSPENDING) == [
        "head pod is terminating",
        "pod w-3 to be ready",
        "all pods to be deleted (suspending)",
    ]
    assert narration.waiting_for(PodPlan(), SuspendPhase.NONE) == []


def test_pods_being_created_are_waited_for_until_a_pass_counted_them() -> None:
    plan = PodPlan(waiting=["head: waiting for earlier pod changes"], creating=["group g: 2"])
    assert narration.waiting_for(plan, SuspendPhase.NONE) == [*plan.waiting, *plan.creating]
    assert narration.waiting_for(plan, SuspendPhase.NONE, creations_seen=True) == plan.waiting


def test_describe_plan() -> None:
    assert narration.describe_plan(PLAN) == "delete 2 pod(s); create 1 pod(s)"
    assert narration.describe_plan(PodPlan(delete_all_reason="suspended")) == (
        "delete all pods: suspended"
    )
    assert narration.describe_plan(PodPlan()) == "create missing owned objects"


def test_decision_lines_only_tell_what_was_done() -> None:
    failure = ReplicaFailure(
        reason=RayClusterConditionReason.FAILED_CREATE_WORKER_POD, message="quota exceeded"
    )
    result = ApplyClusterResult(deleted=["w-1"], created=[], failure=failure)
    assert narration.decision_lines(PLAN, result) == [
        "deleted w-1: scale down",
        f"{failure.reason}: quota exceeded",
    ]
