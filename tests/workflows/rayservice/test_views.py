"""Table tests of the pure read-outs of a RayService pass (`workflows.rayservice.views`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from activities.dashboard.contract import ServeStatus
from activities.rayservice.contract import ClusterView, ServiceSnapshot
from crds.enums import RayServiceConditionReason as Reason
from crds.rayservice import RayServiceStatus, RayServiceStatuses
from crds.refs import ObjectRef
from workflows.rayservice import views
from workflows.rayservice.incremental import Traffic
from workflows.rayservice.state import RayServiceState, UpgradeProgress, UpgradeRecord

REF = ObjectRef(kind="RayService", namespace="default", name="svc", uid="u1")
AT = datetime(2026, 1, 1, tzinfo=UTC)
ENDPOINTS = {"svc-serve-svc": 2, "a-serve-svc": 3, "b-serve-svc": 1}
SERVE = ServeStatus.model_validate(
    {
        "applications": {
            "app1": {"status": "RUNNING", "deployments": {}},
            "app2": {"status": "DEPLOYING", "deployments": {}},
        }
    }
)


def state(
    active: str = "a",
    pending: str = "",
    progress: UpgradeProgress | None = None,
    aborting: str | None = None,
    **fields: object,
) -> RayServiceState:
    status = RayServiceStatuses(
        active_service_status=RayServiceStatus(ray_cluster_name=active or None)
    )
    upgrade = None
    if pending:
        upgrade = UpgradeRecord(
            number=2,
            child_id="c",
            pending=pending,
            goal_hash="g2",
            progress=progress or UpgradeProgress(number=2, pending=pending),
            aborting=aborting,
        )
    return RayServiceState(status=status, upgrade=upgrade, generation=7, **fields)


SNAP = ServiceSnapshot(
    clusters=[ClusterView(name="a"), ClusterView(name="b")], serve_endpoints=ENDPOINTS
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        pytest.param(RayServiceState(), "", id="no-status"),
        pytest.param(state(active=""), "", id="no-active"),
        pytest.param(state(), "a", id="active"),
    ],
)
def test_active_name(given: RayServiceState, expected: str) -> None:
    assert views.active_name(given) == expected


@pytest.mark.parametrize(
    ("active", "pending", "incremental", "expected"),
    [
        pytest.param("a", "b", False, 2, id="blue-green-counts-the-rayservice-serve-svc"),
        pytest.param("", "b", True, 2, id="incremental-first-cluster"),
        pytest.param("a", "", True, 3, id="incremental-active-only"),
        pytest.param("a", "b", True, 4, id="incremental-adds-both-clusters"),
        pytest.param("a", "gone", True, 3, id="missing-slices-count-zero"),
    ],
)
def test_serve_endpoints(active: str, pending: str, incremental: bool, expected: int) -> None:
    assert views.serve_endpoints(SNAP, REF, active, pending, incremental) == expected


def test_serve_endpoints_of_a_serve_service_the_user_named() -> None:
    """Regression: with `serveService.metadata.name` set, the endpoints were looked up under
    the default name, found none, and the RayService never got Ready (KubeRay's
    custom-serve-service sample)."""
    snap = SNAP.model_copy(update={"serve_service": "custom", "serve_endpoints": {"custom": 2}})
    assert views.serve_endpoints(snap, REF, "a", "", False) == 2


def test_blue_green_upgrade_reports_the_pending_cluster_without_traffic() -> None:
    progress = UpgradeProgress(number=2, pending="b", pending_serve=SERVE)
    got = views.status_inputs(state(pending="b", progress=progress), SNAP, REF, None, False)
    assert (got.active.name, got.pending.name, got.generation) == ("a", "b", 7)
    assert got.pending.serve == SERVE
    assert got.active.traffic is None and got.pending.capacity is None
    assert got.endpoints == 2
    assert got.rollback_reason is None and got.refused is None


def test_incremental_upgrade_reports_capacities_and_weights() -> None:
    traffic = Traffic(
        active_capacity=50,
        pending_capacity=100,
        active_weight=25,
        pending_weight=75,
        migrated_at=AT,
    )
    progress = UpgradeProgress(number=2, pending="b", traffic=traffic)
    got = views.status_inputs(state(pending="b", progress=progress), SNAP, REF, SERVE, True)
    assert (got.active.capacity, got.active.traffic) == (50, 25)
    assert (got.pending.capacity, got.pending.traffic) == (100, 75)
    assert got.active.migrated_at == got.pending.migrated_at == AT
    assert got.active.serve == SERVE and got.endpoints == 4


def test_incremental_without_upgrade_reports_the_active_cluster_at_full_traffic() -> None:
    got = views.status_inputs(state(), SNAP, REF, None, True)
    assert (got.active.capacity, got.active.traffic) == (100, 100)
    assert got.pending.name == "" and got.pending.traffic is None


@pytest.mark.parametrize(
    ("progress", "aborting", "expected"),
    [
        pytest.param(UpgradeProgress(), None, None, id="upgrading"),
        pytest.param(
            UpgradeProgress(rolling_back=True),
            None,
            Reason.DESIRED_CLUSTER_SPEC_CHANGED,
            id="spec-driven",
        ),
        pytest.param(UpgradeProgress(), "RollbackRequested", "RollbackRequested", id="signal"),
        pytest.param(
            UpgradeProgress(rolling_back=True),
            "RollbackRequested",
            "RollbackRequested",
            id="signal-wins",
        ),
    ],
)
def test_rollback_reason(
    progress: UpgradeProgress, aborting: str | None, expected: str | None
) -> None:
    given = state(pending="b", progress=progress, aborting=aborting)
    assert views.status_inputs(given, SNAP, REF, None, True).rollback_reason == expected


@pytest.mark.parametrize(
    ("goal", "expected"),
    [
        ("a-hash", "Goal state reverted to original cluster, rolling back."),
        ("third", "Goal state changed mid-upgrade, rolling back to original cluster."),
    ],
    ids=["back-to-active", "third-spec"],
)
def test_spec_driven_rollback_messages_are_kuberays(goal: str, expected: str) -> None:
    snap = SNAP.model_copy(update={"clusters": [ClusterView(name="a", spec_hash="a-hash")]})
    progress = UpgradeProgress(rolling_back=True)
    given = state(pending="b", progress=progress, goal_hash=goal)
    assert views.status_inputs(given, snap, REF, None, True).rollback_message == expected


@pytest.mark.parametrize(
    ("goal", "expected"),
    [("g1", ("RolledBack", "by request")), ("g2", None)],
    ids=["goal-still-refused", "new-goal"],
)
def test_refusal_shows_only_while_the_goal_is_the_refused_one(
    goal: str, expected: tuple[str, str] | None
) -> None:
    given = state(goal_hash=goal, refused_hash="g1", refused=("RolledBack", "by request"))
    assert views.status_inputs(given, SNAP, REF, None, False).refused == expected


def test_a_blocked_upgrade_reaches_the_status_inputs() -> None:
    progress = UpgradeProgress(number=2, pending="b", blocked="no Gateway API")
    got = views.status_inputs(state(pending="b", progress=progress), SNAP, REF, None, True)
    assert got.blocked == "no Gateway API"
    assert views.status_inputs(state(), SNAP, REF, None, True).blocked == ""


def test_details_name_the_upgrade_and_what_it_waits_for() -> None:
    progress = UpgradeProgress(
        number=2, pending="b", pending_serve=SERVE, traffic=Traffic(pending_weight=25)
    )
    progress.phase = "moving traffic"
    given = state(pending="b", progress=progress, waiting=["upgrade 2: moving traffic"])
    text = views.details(REF, "Upgrading", given)
    assert text.split("\n\n") == [
        "**RayService default/svc**: Upgrading",
        "upgrading: pending cluster b 1/2 apps RUNNING, 25% traffic (moving traffic)",
        "waiting for upgrade 2: moving traffic",
    ]
    assert views.details(REF, "Ready", state()) == "**RayService default/svc**: Ready"
