"""Table tests of the RayService status functions against KubeRay's conditions (S9, S17–S19).

Each row names a KubeRay behaviour (`calculateConditions`, `handleSuspend`,
`markFailedOnInitializingTimeout`, the validation branch of `Reconcile`) and checks the
type, status, reason and, where KubeRay's wording is part of the contract, the message.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.dashboard.contract import ServeStatus
from crds.common import Condition
from crds.enums import ConditionStatus, ServiceStatus
from crds.enums import RayServiceConditionReason as Reason
from crds.enums import RayServiceConditionType as Cond
from crds.rayservice import RayServiceStatus, RayServiceStatuses
from workflows.conditions import find_condition
from workflows.rayservice import status as st
from workflows.rayservice.status import ClusterSide, StatusInputs

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(minutes=5)
_T, _F, _U = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


def cond(kind: str, status: str, reason: str, at: datetime = T0, message: str = "") -> Condition:
    return Condition(
        type=kind, status=status, reason=reason, message=message, last_transition_time=at
    )


def statuses(*conds: Condition) -> RayServiceStatuses:
    return RayServiceStatuses(conditions=list(conds))


def inputs(
    previous: RayServiceStatuses | None = None,
    active: str = "",
    pending: str = "",
    endpoints: int = 0,
    refused: tuple[str, str] | None = None,
    rollback: str | None = None,
) -> StatusInputs:
    return StatusInputs(
        previous=previous,
        generation=3,
        active=ClusterSide(name=active),
        pending=ClusterSide(name=pending),
        endpoints=endpoints,
        refused=refused,
        rollback_reason=rollback,
    )


def summary(status: RayServiceStatuses) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions or []}


INITIALIZING = statuses(
    cond(Cond.READY, _F, Reason.INITIALIZING),
    cond(Cond.UPGRADE_IN_PROGRESS, _F, Reason.INITIALIZING),
)
READY = statuses(
    cond(Cond.READY, _T, Reason.NON_ZERO_SERVE_ENDPOINTS),
    cond(Cond.UPGRADE_IN_PROGRESS, _F, Reason.NO_PENDING_CLUSTER),
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(
            inputs(),
            {
                Cond.READY: (_F, Reason.INITIALIZING),
                Cond.UPGRADE_IN_PROGRESS: (_F, Reason.INITIALIZING),
            },
            id="first-pass-initializing",
        ),
        pytest.param(
            inputs(INITIALIZING, pending="b"),
            {
                Cond.READY: (_F, Reason.INITIALIZING),
                Cond.UPGRADE_IN_PROGRESS: (_F, Reason.INITIALIZING),
            },
            id="first-cluster-pending-stays-initializing",
        ),
        pytest.param(
            inputs(INITIALIZING, active="a", endpoints=2),
            {
                Cond.READY: (_T, Reason.NON_ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_F, Reason.NO_PENDING_CLUSTER),
            },
            id="endpoints-make-ready",
        ),
        pytest.param(
            inputs(READY, active="a"),
            {
                Cond.READY: (_F, Reason.ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_F, Reason.NO_PENDING_CLUSTER),
            },
            id="endpoints-dropped-to-zero",
        ),
        pytest.param(
            inputs(READY, active="a", pending="b", endpoints=1),
            {
                Cond.READY: (_T, Reason.NON_ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_T, Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST),
            },
            id="upgrade-in-progress",
        ),
        pytest.param(
            inputs(READY),
            {
                Cond.READY: (_F, Reason.ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_U, Reason.NO_ACTIVE_CLUSTER),
            },
            id="active-lost-after-init",
        ),
        pytest.param(
            inputs(
                statuses(
                    cond(Cond.READY, _F, Reason.INITIALIZING_TIMEOUT),
                    cond(Cond.UPGRADE_IN_PROGRESS, _F, Reason.INITIALIZING_TIMEOUT),
                )
            ),
            {
                Cond.READY: (_F, Reason.INITIALIZING_TIMEOUT),
                Cond.UPGRADE_IN_PROGRESS: (_F, Reason.INITIALIZING_TIMEOUT),
            },
            id="timed-out-kept",
        ),
        pytest.param(
            inputs(READY, active="a", endpoints=1, refused=(st.ROLLED_BACK, "by request")),
            {
                Cond.READY: (_T, Reason.NON_ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_F, st.ROLLED_BACK),
            },
            id="refused-goal-ours",
        ),
        pytest.param(
            inputs(
                READY,
                active="a",
                pending="b",
                endpoints=1,
                rollback=Reason.DESIRED_CLUSTER_SPEC_CHANGED,
            ),
            {
                Cond.READY: (_T, Reason.NON_ZERO_SERVE_ENDPOINTS),
                Cond.UPGRADE_IN_PROGRESS: (_T, Reason.BOTH_ACTIVE_PENDING_CLUSTERS_EXIST),
                Cond.ROLLBACK_IN_PROGRESS: (_T, Reason.DESIRED_CLUSTER_SPEC_CHANGED),
            },
            id="spec-driven-rollback",
        ),
    ],
)
def test_conditions_follow_kuberays_calculate_conditions(
    given: StatusInputs, expected: dict[str, tuple[str, str]]
) -> None:
    status = st.compute_status(given, NOW)
    assert summary(status) == expected
    ready = expected[Cond.READY][0] == _T
    assert status.service_status == (ServiceStatus.RUNNING if ready else ServiceStatus.NOT_RUNNING)
    assert status.observed_generation == 3 and status.last_update_time == NOW


def test_kuberays_condition_messages() -> None:
    first = st.compute_status(inputs(), NOW)
    assert {c.message for c in first.conditions or []} == {"RayService is initializing"}
    ready = st.compute_status(inputs(first, active="a", endpoints=1), NOW)
    messages = {c.type: c.message for c in ready.conditions or []}
    assert messages == {
        Cond.READY: "Number of serve endpoints is greater than 0",
        Cond.UPGRADE_IN_PROGRESS: "Active Ray cluster exists and no pending Ray cluster",
    }
    dropped = st.compute_status(inputs(ready, active="a", pending="b"), NOW)
    messages = {c.type: c.message for c in dropped.conditions or []}
    assert messages == {
        Cond.READY: "Number of serve endpoints dropped to 0",
        Cond.UPGRADE_IN_PROGRESS: "Both active and pending Ray clusters exist",
    }


def test_transition_time_moves_only_when_the_status_changes() -> None:
    status = st.compute_status(inputs(READY, active="a", endpoints=4), NOW)
    ready = find_condition(status.conditions, Cond.READY)
    assert ready is not None and ready.last_transition_time == T0
    dropped = st.compute_status(inputs(READY, active="a"), NOW)
    ready = find_condition(dropped.conditions, Cond.READY)
    assert ready is not None and ready.last_transition_time == NOW
    assert ready.observed_generation == 3


def test_rollback_condition_is_removed_once_the_rollback_is_over() -> None:
    """KubeRay removes RollbackInProgress when a rollback completes or is cancelled (S15)."""
    rolling = st.compute_status(
        inputs(READY, active="a", pending="b", endpoints=1, rollback=st.ROLLBACK_REQUESTED), NOW
    )
    assert summary(rolling)[Cond.ROLLBACK_IN_PROGRESS] == (_T, st.ROLLBACK_REQUESTED)
    done = st.compute_status(inputs(rolling, active="a", endpoints=1), NOW)
    assert Cond.ROLLBACK_IN_PROGRESS not in summary(done)
    assert summary(done)[Cond.UPGRADE_IN_PROGRESS] == (_F, Reason.NO_PENDING_CLUSTER)


def test_the_false_rollback_condition_of_a_suspend_stays_after_resuming() -> None:
    """KubeRay removes RollbackInProgress only when it was True; suspend's False one stays."""
    done = st.suspend_completed(st.suspend_begun(READY, 1, NOW), NOW)
    resumed = st.resumed(done, 2, NOW)
    assert summary(resumed)[Cond.ROLLBACK_IN_PROGRESS] == (_F, Reason.SUSPEND_COMPLETE)
    serving = st.compute_status(inputs(resumed, active="a", endpoints=1), NOW)
    assert summary(serving)[Cond.ROLLBACK_IN_PROGRESS] == (_F, Reason.SUSPEND_COMPLETE)
    rolling = st.compute_status(
        inputs(serving, active="a", pending="b", endpoints=1, rollback="X"), NOW
    )
    assert summary(rolling)[Cond.ROLLBACK_IN_PROGRESS] == (_T, "X")
    assert Cond.ROLLBACK_IN_PROGRESS not in summary(
        st.compute_status(inputs(rolling, active="a", endpoints=1), NOW)
    )


def test_sides_copy_cluster_names_applications_and_traffic() -> None:
    serve = ServeStatus.model_validate(
        {
            "applications": {
                "app1": {
                    "status": "DEPLOYING",
                    "message": "",
                    "deployments": {"D": {"status": "UPDATING", "message": "starting"}},
                },
                "app2": {"status": "RUNNING", "message": "ok", "deployments": {}},
            }
        }
    )
    given = StatusInputs(
        previous=None,
        generation=1,
        active=ClusterSide(name="a", serve=serve, traffic=75, capacity=100, migrated_at=T0),
        pending=ClusterSide(),
        endpoints=0,
    )
    status = st.compute_status(given, NOW)
    active = status.active_service_status
    assert active is not None and active.ray_cluster_name == "a"
    assert (active.traffic_routed_percent, active.target_capacity) == (75, 100)
    assert active.last_traffic_migrated_time == T0
    apps = active.applications or {}
    assert apps["app1"].status == "DEPLOYING" and apps["app1"].message is None
    deployment = (apps["app1"].deployments or {})["D"]
    assert (deployment.status, deployment.message) == ("UPDATING", "starting")
    assert apps["app2"].message == "ok" and apps["app2"].deployments is None
    assert status.pending_service_status == st.empty_side()
    wire = status.to_json_dict()
    assert wire["activeServiceStatus"]["applicationStatuses"]["app1"]["serveDeploymentStatuses"]
    assert wire["activeServiceStatus"]["trafficRoutedPercent"] == 75


def test_validation_failure_sets_only_ready() -> None:
    status = st.validation_failed(READY, "bad spec", NOW)
    assert summary(status) == {
        Cond.READY: (_F, Reason.VALIDATION_FAILED),
        Cond.UPGRADE_IN_PROGRESS: (_F, Reason.NO_PENDING_CLUSTER),
    }
    ready = find_condition(status.conditions, Cond.READY)
    assert ready is not None and ready.message == "bad spec"
    assert st.validation_failed(None, "x", NOW).conditions is not None


def test_initializing_timeout_clears_the_clusters_and_is_terminal() -> None:
    previous = INITIALIZING.model_copy(
        update={
            "active_service_status": RayServiceStatus(ray_cluster_name="a"),
            "pending_service_status": RayServiceStatus(ray_cluster_name="b"),
        }
    )
    status = st.initializing_timed_out(previous, "too slow", NOW)
    assert summary(status)[Cond.READY] == (_F, Reason.INITIALIZING_TIMEOUT)
    assert status.active_service_status == st.empty_side()
    assert status.pending_service_status == st.empty_side()
    assert status.service_status == ServiceStatus.NOT_RUNNING
    # A later pass without clusters keeps the terminal reason.
    later = st.compute_status(inputs(status), NOW + timedelta(minutes=1))
    assert summary(later)[Cond.READY] == (_F, Reason.INITIALIZING_TIMEOUT)


def test_suspend_steps_write_kuberays_conditions() -> None:
    """handleSuspend: begin, complete, resume (S19)."""
    begun = st.suspend_begun(
        READY.model_copy(
            update={
                "active_service_status": RayServiceStatus(ray_cluster_name="a"),
                "num_serve_endpoints": 2,
            }
        ),
        4,
        NOW,
    )
    assert summary(begun) == {
        Cond.READY: (_F, Reason.SUSPEND_IN_PROGRESS),
        Cond.UPGRADE_IN_PROGRESS: (_F, Reason.SUSPEND_IN_PROGRESS),
        Cond.SUSPENDING: (_T, Reason.SUSPEND_REQUESTED),
        Cond.ROLLBACK_IN_PROGRESS: (_F, Reason.SUSPEND_IN_PROGRESS),
    }
    assert begun.active_service_status == st.empty_side()
    assert begun.num_serve_endpoints == 0 and begun.observed_generation == 4
    assert begun.service_status == ServiceStatus.NOT_RUNNING

    deleting = st.suspend_deleting(begun, NOW)
    assert summary(deleting)[Cond.SUSPENDING] == (_T, Reason.SUSPEND_IN_PROGRESS)
    suspending = find_condition(deleting.conditions, Cond.SUSPENDING)
    assert suspending is not None and suspending.message == (
        "Waiting for all Kubernetes resources owned by this RayService to be deleted."
    )
    assert {k: v for k, v in summary(deleting).items() if k != Cond.SUSPENDING} == {
        k: v for k, v in summary(begun).items() if k != Cond.SUSPENDING
    }

    done = st.suspend_completed(deleting, NOW)
    assert summary(done) == {
        Cond.READY: (_F, Reason.SUSPEND_COMPLETE),
        Cond.UPGRADE_IN_PROGRESS: (_F, Reason.SUSPEND_COMPLETE),
        Cond.SUSPENDING: (_F, Reason.SUSPEND_COMPLETE),
        Cond.SUSPENDED: (_T, Reason.SUSPEND_COMPLETE),
        Cond.ROLLBACK_IN_PROGRESS: (_F, Reason.SUSPEND_COMPLETE),
    }
    messages = {c.type: c.message for c in done.conditions or []}
    assert messages[Cond.READY] == "RayService is suspended."
    assert messages[Cond.SUSPENDED] == "All owned resources have been deleted."

    later = NOW + timedelta(hours=1)
    resumed = st.resumed(done, 5, later)
    assert summary(resumed)[Cond.SUSPENDED] == (_F, Reason.RESUMED)
    for kind in (Cond.READY, Cond.UPGRADE_IN_PROGRESS):
        found = find_condition(resumed.conditions, kind)
        assert found is not None and (found.status, found.reason) == (_F, Reason.INITIALIZING)
        assert found.last_transition_time == later  # re-arms the initializing timeout
    assert resumed.observed_generation == 5


def test_status_changed_ignores_only_the_update_time() -> None:
    assert st.status_changed(None, READY)
    touched = READY.model_copy(update={"last_update_time": NOW})
    assert not st.status_changed(READY, touched)
    assert st.status_changed(READY, READY.model_copy(update={"num_serve_endpoints": 1}))


@pytest.mark.parametrize(
    ("status", "upgrading", "expected"),
    [
        pytest.param(None, False, "Initializing", id="nothing-yet"),
        pytest.param(INITIALIZING, False, "Initializing", id="initializing"),
        pytest.param(READY, False, "Ready", id="ready"),
        pytest.param(READY, True, "Upgrading", id="upgrading"),
        pytest.param(
            statuses(cond(Cond.READY, _F, Reason.ZERO_SERVE_ENDPOINTS)),
            False,
            "NotReady",
            id="down",
        ),
        pytest.param(
            statuses(cond(Cond.READY, _F, Reason.VALIDATION_FAILED)),
            True,
            "ValidationFailed",
            id="invalid",
        ),
        pytest.param(
            statuses(cond(Cond.READY, _F, Reason.INITIALIZING_TIMEOUT)),
            False,
            "InitializingTimeout",
            id="timed-out",
        ),
        pytest.param(
            statuses(cond(Cond.SUSPENDING, _T, Reason.SUSPEND_REQUESTED)),
            False,
            "Suspending",
            id="suspending",
        ),
        pytest.param(
            statuses(
                cond(Cond.SUSPENDING, _F, Reason.SUSPEND_COMPLETE),
                cond(Cond.SUSPENDED, _T, Reason.SUSPEND_COMPLETE),
            ),
            False,
            "Suspended",
            id="suspended",
        ),
    ],
)
def test_headline(status: RayServiceStatuses | None, upgrading: bool, expected: str) -> None:
    assert st.headline(status, upgrading) == expected


@pytest.mark.parametrize(
    ("active", "pending", "kind", "expected"),
    [
        pytest.param(
            "a",
            "b",
            Cond.UPGRADE_IN_PROGRESS,
            "Both active and pending Ray clusters exist; blocked: no Gateway API",
            id="upgrade",
        ),
        pytest.param(
            "", "b", Cond.READY, "RayService is initializing; blocked: no Gateway API", id="first"
        ),
    ],
)
def test_a_blocked_upgrade_is_told_in_the_message_and_untold_after(
    active: str, pending: str, kind: str, expected: str
) -> None:
    previous = None if not active else READY
    given = inputs(previous, active=active, pending=pending, endpoints=1 if active else 0)
    blocked = st.compute_status(given.model_copy(update={"blocked": "no Gateway API"}), NOW)
    found = find_condition(blocked.conditions, kind)
    assert found is not None and found.message == expected
    assert summary(blocked) == summary(st.compute_status(given, NOW))  # reasons stay KubeRay's
    unblocked = st.compute_status(given.model_copy(update={"previous": blocked}), NOW)
    found = find_condition(unblocked.conditions, kind)
    assert found is not None and found.message == expected.split(";")[0]


def test_a_side_without_a_cluster_is_written_as_kuberay_writes_it() -> None:
    """Regression: an empty side was `{}`, where KubeRay writes its Go zero quantities: after a
    blue-green promotion the differential suite saw `pendingServiceStatus.rayClusterStatus`
    with `desiredCPU: "0"` (and memory, GPU, TPU) on KubeRay's side only."""
    zero = {"desiredCPU": "0", "desiredMemory": "0", "desiredGPU": "0", "desiredTPU": "0"}
    empty = st.empty_side().model_dump(by_alias=True, exclude_none=True)
    assert empty == {"rayClusterStatus": zero}
    status = st.compute_status(inputs(), NOW)
    for side in (status.active_service_status, status.pending_service_status):
        assert side is not None
        assert side.model_dump(by_alias=True, exclude_none=True) == {"rayClusterStatus": zero}
