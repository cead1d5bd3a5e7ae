"""Table tests of the pure RayService decisions and the incremental traffic arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.rayservice.contract import ClusterView, GatewayRouteStatus, RouteCondition
from crds.common import Condition
from crds.enums import RayServiceUpgradeType as Upgrade
from crds.rayservice import RayServiceSpec
from workflows.rayservice import decisions as d
from workflows.rayservice.incremental import (
    MoveKind,
    Options,
    Traffic,
    next_move,
    next_rollback_move,
    options_of,
    traffic_gate,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def view(spec_hash: str = "g", prefix: str = "", version: str = "v1.7.0") -> ClusterView:
    return ClusterView(
        name="a", spec_hash=spec_hash, goal_prefix_hash=prefix, kuberay_version=version
    )


@pytest.mark.parametrize(
    ("active", "kind", "refused", "expected"),
    [
        pytest.param(None, Upgrade.NEW_CLUSTER, None, d.ClusterMove.CREATE_FIRST, id="first"),
        pytest.param(view(), Upgrade.NEW_CLUSTER, None, d.ClusterMove.NONE, id="same-hash"),
        pytest.param(
            view(version="v1.6.0"),
            Upgrade.NEW_CLUSTER,
            None,
            d.ClusterMove.UPDATE_IN_PLACE,
            id="operator-upgrade",
        ),
        pytest.param(
            view("old", "old"),
            Upgrade.NEW_CLUSTER,
            None,
            d.ClusterMove.UPDATE_IN_PLACE,
            id="appended-groups",
        ),
        pytest.param(
            view("old"), Upgrade.NEW_CLUSTER, None, d.ClusterMove.UPGRADE, id="blue-green"
        ),
        pytest.param(view("old"), Upgrade.NONE, None, d.ClusterMove.NONE, id="strategy-none"),
        pytest.param(
            view("old"), Upgrade.NEW_CLUSTER, "g", d.ClusterMove.REFUSED, id="rolled-back"
        ),
    ],
)
def test_cluster_move(
    active: ClusterView | None, kind: Upgrade, refused: str | None, expected: d.ClusterMove
) -> None:
    assert d.cluster_move("g", active, kind, refused) == expected


@pytest.mark.parametrize(
    ("applied", "apps", "expected"),
    [(None, 1, True), ("h", 0, True), ("x", 1, True), ("h", 1, False)],
    ids=["never-applied", "head-restarted", "config-changed", "up-to-date"],
)
def test_serve_apply_reason(applied: str | None, apps: int, expected: bool) -> None:
    assert bool(d.serve_apply_reason(applied, "h", apps)) == expected


def test_health_streak_resets_on_one_bad_poll() -> None:
    assert [d.next_streak(s, h) for s, h in [(0, True), (2, True), (3, False)]] == [1, 3, 0]


def test_deletions_keep_their_deadline_and_fall_due() -> None:
    first = d.schedule_deletions(["a", "b"], {"a"}, {}, timedelta(seconds=60), NOW)
    assert first.scheduled == {"b": NOW + timedelta(seconds=60)} and first.due == []
    later = d.schedule_deletions(
        ["a", "b"], {"a"}, first.scheduled, timedelta(seconds=5), NOW + timedelta(seconds=60)
    )
    assert later.due == ["b"]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5m", 300),
        ("90", 90),
        ("0", None),
        ("", None),
        # Refused by validation; the workflow reads them on every pass all the same.
        ("9223372036", 9223372036),
        ("100000000000000", None),
        ("9" * 5000, None),
        ("1s" * 131_072, None),
        ("²", None),
    ],
)
def test_initializing_timeout(value: str, seconds: int | None) -> None:
    got = d.initializing_timeout({"ray.io/initializing-timeout": value})
    assert got == (timedelta(seconds=seconds) if seconds else None)


def test_a_deletion_delay_past_year_9999_never_falls_due() -> None:
    spec = RayServiceSpec.model_validate(
        {"rayClusterConfig": {"headGroupSpec": {"template": {}}}}
        | {"rayClusterDeletionDelaySeconds": 10**18}
    )
    plan = d.schedule_deletions(["a", "b"], {"a"}, {}, d.deletion_delay(spec), NOW)
    assert (plan.scheduled, plan.due) == ({}, [])


def test_an_upgrade_interval_past_year_9999_waits_for_ever() -> None:
    spec = RayServiceSpec.model_validate(
        {
            "rayClusterConfig": {"headGroupSpec": {"template": {}}},
            "upgradeStrategy": {
                "type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {"stepSizePercent": 10, "intervalSeconds": 10**18},
            },
        }
    )
    options = options_of(spec)
    moved = Traffic(pending_capacity=100, pending_weight=10, active_weight=90, migrated_at=NOW)
    move = next_move(moved, options, NOW + timedelta(days=365 * 1000))
    assert (move.kind, move.until) == (MoveKind.WAIT, None)


def test_initializing_deadline_counts_from_the_initializing_transition() -> None:
    ready = Condition(type="Ready", status="False", reason="Initializing", last_transition_time=NOW)
    deadline = d.initializing_deadline({"ray.io/initializing-timeout": "1m"}, [ready])
    assert deadline == NOW + timedelta(minutes=1)


@pytest.mark.parametrize(
    ("phase", "suspend", "left", "step"),
    [
        (d.SuspendPhase.NONE, True, 2, d.SuspendStep.BEGIN),
        (d.SuspendPhase.SUSPENDING, False, 2, d.SuspendStep.DELETE),  # atomic: spec flips ignored
        (d.SuspendPhase.SUSPENDING, True, 0, d.SuspendStep.COMPLETE),
        (d.SuspendPhase.SUSPENDED, True, 0, d.SuspendStep.STAY),
        (d.SuspendPhase.SUSPENDED, False, 0, d.SuspendStep.RESUME),
        (d.SuspendPhase.NONE, False, 2, d.SuspendStep.NONE),
    ],
)
def test_suspend_step(phase: d.SuspendPhase, suspend: bool, left: int, step: d.SuspendStep) -> None:
    assert d.suspend_step(phase, suspend, left) == step


def _run(
    options: Options, rollback: bool = False, start: Traffic | None = None
) -> list[tuple[str, int, int, int, int]]:
    traffic, now = start or Traffic(), NOW
    seen: list[tuple[str, int, int, int, int]] = []
    for _ in range(50):
        move = (
            next_rollback_move(traffic, options, now, True)
            if rollback
            else next_move(traffic, options, now)
        )
        if move.kind in (MoveKind.DONE, MoveKind.ROLLED_BACK):
            seen.append((move.kind, 0, 0, 0, 0))
            return seen
        if move.kind == MoveKind.WAIT:
            assert move.until is not None
            now = move.until
            continue
        traffic = move.traffic
        seen.append(
            (
                move.kind,
                traffic.active_capacity,
                traffic.pending_capacity,
                traffic.active_weight,
                traffic.pending_weight,
            )
        )
    raise AssertionError("no end")


def test_incremental_steps_follow_kuberays_a_b_c_loop() -> None:
    moves = _run(Options(max_surge=50, step=25, interval=timedelta(seconds=30)))
    assert [m[0] for m in moves] == [
        "PendingCapacity",
        "Weights",
        "Weights",
        "ActiveCapacity",
        "PendingCapacity",
        "Weights",
        "Weights",
        "ActiveCapacity",
        "Done",
    ]
    assert moves[-2][1:] == (0, 100, 0, 100)


def test_rollback_returns_capacity_and_traffic_then_completes() -> None:
    midway = Traffic(active_capacity=50, pending_capacity=100, active_weight=25, pending_weight=75)
    moves = _run(Options(max_surge=50, step=25), rollback=True, start=midway)
    assert moves[-1][0] == "RolledBack"
    assert moves[-2][1:] == (100, 0, 100, 0)


def test_rollback_completes_at_once_when_the_pending_head_is_gone() -> None:
    back = Traffic(active_capacity=100, pending_capacity=50, active_weight=100, pending_weight=0)
    assert next_rollback_move(back, Options(), NOW, False).kind == MoveKind.ROLLED_BACK


def test_follow_up_is_an_eighth_of_the_time_not_serving_within_bounds() -> None:
    assert d.follow_up_delay(True, timedelta(minutes=5)) is None
    delays = [d.follow_up_delay(False, timedelta(seconds=s)) for s in (0, 24, 80, 7200)]
    assert delays == [timedelta(seconds=s) for s in (3, 3, 10, 300)]


def spec(**fields: object) -> RayServiceSpec:
    cluster = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}}}
    return RayServiceSpec.model_validate({"rayClusterConfig": cluster, **fields})


@pytest.mark.parametrize(
    ("given", "kind", "incremental"),
    [
        pytest.param(spec(), Upgrade.NEW_CLUSTER, False, id="unset-is-new-cluster"),
        pytest.param(spec(upgradeStrategy={}), Upgrade.NEW_CLUSTER, False, id="empty-strategy"),
        pytest.param(spec(upgradeStrategy={"type": "None"}), Upgrade.NONE, False, id="none"),
        pytest.param(
            spec(upgradeStrategy={"type": "NewClusterWithIncrementalUpgrade"}),
            Upgrade.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE,
            True,
            id="incremental",
        ),
    ],
)
def test_upgrade_type(given: RayServiceSpec, kind: Upgrade, incremental: bool) -> None:
    assert d.upgrade_type(given) == kind
    assert d.is_incremental(given) == incremental


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        pytest.param(spec(), Upgrade.NONE, id="unset-is-none"),
        pytest.param(spec(upgradeStrategy={}), Upgrade.NONE, id="empty-strategy-is-none"),
        pytest.param(
            spec(upgradeStrategy={"type": "NewCluster"}), Upgrade.NEW_CLUSTER, id="spec-wins"
        ),
    ],
)
def test_enable_zero_downtime_false_only_changes_an_unset_type(
    given: RayServiceSpec, kind: Upgrade
) -> None:
    assert d.upgrade_type(given, zero_downtime=False) == kind


@pytest.mark.parametrize(
    ("seconds", "expected"), [(None, 60), (0, 0), (5, 5), (-1, 0)], ids=["default", "0", "5", "neg"]
)
def test_deletion_delay(seconds: int | None, expected: int) -> None:
    given = spec(rayClusterDeletionDelaySeconds=seconds)
    assert d.deletion_delay(given) == timedelta(seconds=expected)


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        pytest.param(view("old", "old"), True, id="prefix-matches"),
        pytest.param(view("g", "g"), False, id="equal-hash-is-no-append"),
        pytest.param(view("old", ""), False, id="fewer-groups-in-goal"),
        pytest.param(view("old", "other"), False, id="other-change"),
    ],
)
def test_appends_worker_groups(cluster: ClusterView, expected: bool) -> None:
    assert d.appends_worker_groups(cluster, "g") == expected


def _ready(status: str, reason: str) -> list[Condition]:
    return [Condition(type="Ready", status=status, reason=reason, last_transition_time=NOW)]


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param(None, False, id="none"),
        pytest.param(_ready("False", "Initializing"), False, id="initializing"),
        pytest.param(_ready("False", "InitializingTimeout"), True, id="timed-out"),
        pytest.param(_ready("True", "InitializingTimeout"), False, id="odd-true"),
    ],
)
def test_timed_out(conditions: list[Condition] | None, expected: bool) -> None:
    assert d.timed_out(conditions) == expected


@pytest.mark.parametrize(
    ("status", "reason", "annotation", "expected"),
    [
        pytest.param("False", "Initializing", "", None, id="no-timeout"),
        pytest.param("True", "NonZeroServeEndpoints", "1m", None, id="ready"),
        pytest.param("False", "ZeroServeEndpoints", "1m", None, id="was-ready-once"),
        pytest.param("False", "Initializing", "90", NOW + timedelta(seconds=90), id="seconds"),
    ],
)
def test_initializing_deadline_only_while_initializing(
    status: str, reason: str, annotation: str, expected: datetime | None
) -> None:
    annotations = {"ray.io/initializing-timeout": annotation} if annotation else {}
    assert d.initializing_deadline(annotations, _ready(status, reason)) == expected


def _cond(kind: str, status: str) -> Condition:
    return Condition(type=kind, status=status, reason="r", last_transition_time=NOW)


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [
        pytest.param([], d.SuspendPhase.NONE, id="none"),
        pytest.param([_cond("Suspending", "True")], d.SuspendPhase.SUSPENDING, id="suspending"),
        pytest.param(
            [_cond("Suspending", "False"), _cond("Suspended", "True")],
            d.SuspendPhase.SUSPENDED,
            id="suspended",
        ),
        pytest.param([_cond("Suspended", "False")], d.SuspendPhase.NONE, id="resumed"),
    ],
)
def test_suspend_phase(conditions: list[Condition], phase: d.SuspendPhase) -> None:
    assert d.suspend_phase(conditions) == phase


@pytest.mark.parametrize(
    ("goal", "expected"),
    [("active", True), ("pending", False), ("third", True)],
    ids=["back-to-active", "on-track", "third-spec"],
)
def test_rollback_wanted_follows_kuberays_three_cases(goal: str, expected: bool) -> None:
    """reconcileRollbackState: goal = active or a third spec rolls back; = pending resumes."""
    assert d.rollback_wanted(goal, "pending") == expected


def _rc(kind: str, status: str = "True", current: bool = True, reason: str = "") -> RouteCondition:
    return RouteCondition(type=kind, status=status, current=current, reason=reason)


ACCEPTED_PROGRAMMED = [_rc("Accepted"), _rc("Programmed")]
ACCEPTED_RESOLVED = [_rc("Accepted"), _rc("ResolvedRefs")]


@pytest.mark.parametrize(
    ("gateway", "route", "expected"),
    [
        pytest.param(
            [],
            [],
            "Gateway Accepted is not reported; Gateway Programmed is not reported; "
            "HTTPRoute Accepted is not reported; HTTPRoute ResolvedRefs is not reported",
            id="no-controller-waits",
        ),
        pytest.param(ACCEPTED_PROGRAMMED, ACCEPTED_RESOLVED, None, id="all-true"),
        pytest.param(
            ACCEPTED_PROGRAMMED,
            [],
            "HTTPRoute Accepted is not reported; HTTPRoute ResolvedRefs is not reported",
            id="route-parent-not-reported",
        ),
        pytest.param(
            [_rc("Accepted")],
            ACCEPTED_RESOLVED,
            "Gateway Programmed is not reported",
            id="programmed-missing",
        ),
        pytest.param(
            [_rc("Accepted"), _rc("Programmed", "False", reason="AddressNotAssigned")],
            ACCEPTED_RESOLVED,
            "Gateway Programmed is False (AddressNotAssigned)",
            id="gateway-not-programmed",
        ),
        pytest.param(
            [_rc("Accepted", "Unknown", reason="Pending"), _rc("Programmed", "Unknown")],
            ACCEPTED_RESOLVED,
            "Gateway Accepted is Unknown (Pending); Gateway Programmed is Unknown",
            id="no-controller-yet",
        ),
        pytest.param(
            ACCEPTED_PROGRAMMED,
            [_rc("Accepted"), _rc("ResolvedRefs", "False", reason="BackendNotFound")],
            "HTTPRoute ResolvedRefs is False (BackendNotFound)",
            id="route-refs-unresolved",
        ),
        pytest.param(
            ACCEPTED_PROGRAMMED,
            [_rc("Accepted", current=False), _rc("ResolvedRefs")],
            "HTTPRoute Accepted is True for an older generation",
            id="route-weights-not-taken-up-yet",
        ),
        pytest.param(
            [*ACCEPTED_PROGRAMMED, _rc("ListenersNotValid", "False")],
            [*ACCEPTED_RESOLVED, _rc("PartiallyInvalid", "True")],
            None,
            id="other-conditions-ignored",
        ),
    ],
)
def test_traffic_gate(
    gateway: list[RouteCondition], route: list[RouteCondition], expected: str | None
) -> None:
    """KubeRay's IsGatewayReady / IsHTTPRouteReady: each condition reported and True (S14)."""
    reported = GatewayRouteStatus(gateway=gateway, route=route)
    assert traffic_gate(reported) == expected
