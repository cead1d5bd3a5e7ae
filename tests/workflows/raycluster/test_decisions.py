"""Every decision path of RayCluster pod reconciliation, as table tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.contract import PodView
from activities.raycluster.contract import PodCreation, PodDeletion
from workflows.raycluster.decisions import (
    EXPECTATION_TIMEOUT,
    MAX_RETRY_DELAY,
    expectations_after,
    next_suspend_phase,
    plan_pods,
    prune_expectations,
    retry_delay,
    unhealthy_reason,
)
from workflows.raycluster.plans import Expectation, PodPlan, SuspendPhase

from .helpers import facts, head, namer, spec, worker

NOW = datetime(2026, 1, 1, tzinfo=UTC)
S = SuspendPhase


@pytest.mark.parametrize(
    ("phase", "suspend", "pods", "expected"),
    [
        pytest.param(S.NONE, False, 3, S.NONE, id="running"),
        pytest.param(S.NONE, True, 3, S.SUSPENDING, id="suspend-requested"),
        pytest.param(S.SUSPENDING, True, 2, S.SUSPENDING, id="still-deleting"),
        pytest.param(S.SUSPENDING, False, 2, S.SUSPENDING, id="atomic-despite-flip-back"),
        pytest.param(S.SUSPENDING, True, 0, S.SUSPENDED, id="all-gone"),
        pytest.param(S.SUSPENDED, True, 0, S.SUSPENDED, id="stays-suspended"),
        pytest.param(S.SUSPENDED, False, 0, S.NONE, id="resumed"),
    ],
)
def test_suspend_sequence(phase: S, suspend: bool, pods: int, expected: S) -> None:
    assert next_suspend_phase(phase, suspend, pods) == expected


@pytest.mark.parametrize(
    ("pod", "deleted"),
    [
        pytest.param(PodView(name="p", phase="Failed"), True, id="failed"),
        pytest.param(PodView(name="p", phase="Succeeded"), True, id="succeeded"),
        pytest.param(
            PodView(
                name="p", phase="Running", ray_container_terminated=True, restart_policy="Never"
            ),
            True,
            id="terminated-never-restarts",
        ),
        pytest.param(
            PodView(
                name="p", phase="Running", ray_container_terminated=True, restart_policy="Always"
            ),
            False,
            id="terminated-kubelet-restarts",
        ),
        pytest.param(PodView(name="p", phase="Pending"), False, id="pending"),
    ],
)
def test_unhealthy_rule(pod: PodView, deleted: bool) -> None:
    assert (unhealthy_reason(pod) is not None) == deleted


def test_new_cluster_creates_head_and_workers() -> None:
    plan = plan_pods(facts(spec({"replicas": 2})), [], {}, NOW, namer())
    assert [(c.name, c.head, c.replica_index) for c in plan.creations] == [
        ("c-head-00000", True, None),
        ("c-g-worker-00001", False, 0),
        ("c-g-worker-00002", False, 1),
    ]
    assert plan.deletions == [] and plan.stopped is None


def test_replicas_are_clamped_to_min_and_max() -> None:
    low = plan_pods(facts(spec({"replicas": 0, "minReplicas": 2})), [head()], {}, NOW, namer())
    high = plan_pods(facts(spec({"replicas": 9, "maxReplicas": 1})), [head()], {}, NOW, namer())
    assert len(low.creations) == 2 and len(high.creations) == 1


def test_steady_cluster_needs_nothing() -> None:
    pods = [head(), worker("w1", replica_index=0)]
    plan = plan_pods(facts(spec({"replicas": 1})), pods, {}, NOW, namer())
    assert plan.empty


def test_scale_up_uses_free_replica_indices() -> None:
    pods = [head(), worker("w1", replica_index=1)]
    plan = plan_pods(facts(spec({"replicas": 3})), pods, {}, NOW, namer())
    assert [c.replica_index for c in plan.creations] == [0, 2]


def test_scale_down_without_autoscaler_deletes_the_surplus() -> None:
    pods = [head(), worker("w1"), worker("w2"), worker("w3")]
    plan = plan_pods(facts(spec({"replicas": 1})), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["w1", "w2"]


def test_scale_down_with_autoscaler_waits_for_workers_to_delete() -> None:
    cluster = spec({"replicas": 1}, enableInTreeAutoscaling=True)
    plan = plan_pods(facts(cluster), [head(), worker("w1"), worker("w2")], {}, NOW, namer())
    assert plan.empty


def test_workers_to_delete_removes_exactly_those_and_replaces_below_desired() -> None:
    group = {"replicas": 2, "scaleStrategy": {"workersToDelete": ["w2", "gone"]}}
    pods = [head(), worker("w1", replica_index=0), worker("w2", replica_index=1)]
    plan = plan_pods(facts(spec(group)), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["w2"]
    assert [(c.name, c.replica_index) for c in plan.creations] == [("c-g-worker-00000", 1)]


def test_workers_to_delete_with_lower_replicas_is_a_pure_scale_down() -> None:
    group = {"replicas": 1, "scaleStrategy": {"workersToDelete": ["w2"]}}
    pods = [head(), worker("w1"), worker("w2")]
    plan = plan_pods(facts(spec(group), spec_hash="h"), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["w2"] and plan.creations == []


def test_unhealthy_worker_is_deleted_and_the_pass_stops() -> None:
    pods = [head(), worker("w1", phase="Failed"), worker("x", group="other")]
    cluster = spec({"replicas": 1}, {"groupName": "other", "replicas": 3})
    plan = plan_pods(facts(cluster), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["w1"]
    assert plan.creations == [] and "unhealthy" in (plan.stopped or "")


def test_terminating_workers_do_not_count() -> None:
    pods = [head(), worker("w1", terminating=True)]
    plan = plan_pods(facts(spec({"replicas": 1})), pods, {}, NOW, namer())
    assert len(plan.creations) == 1 and plan.deletions == []


def test_suspended_group_loses_its_pods() -> None:
    pods = [head(), worker("w1"), worker("w2")]
    plan = plan_pods(facts(spec({"replicas": 2, "suspend": True})), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["w1", "w2"] and plan.creations == []


def test_missing_head_is_recreated() -> None:
    plan = plan_pods(facts(spec({"replicas": 1})), [worker("w1")], {}, NOW, namer())
    assert [c.name for c in plan.creations if c.head] == ["c-head-00000"]


def test_a_deterministic_head_name_is_used_and_draws_no_random_suffix() -> None:
    """ENABLE_DETERMINISTIC_HEAD_POD_NAME: the snapshot's fixed name, the RNG left untouched."""
    cluster = facts(spec({"replicas": 1}), head_name="c-head")
    plan = plan_pods(cluster, [], {}, NOW, namer())
    assert [(c.name, c.head) for c in plan.creations] == [
        ("c-head", True),
        ("c-g-worker-00000", False),
    ]


def test_a_deterministic_head_name_waits_for_the_old_head_to_be_gone() -> None:
    cluster = facts(spec(), head_name="c-head")
    waiting = plan_pods(cluster, [head("c-head", terminating=True)], {}, NOW, namer())
    assert waiting.creations == []
    again = plan_pods(cluster, [], {}, NOW, namer())
    assert [c.name for c in again.creations] == ["c-head"]


def test_provisioned_sidecar_cluster_head_is_not_recreated() -> None:
    cluster = facts(spec(), provisioned=True, skip_head_restart=True)
    plan = plan_pods(cluster, [], {}, NOW, namer())
    assert plan.creations == [] and "disable-provisioned-head-restart" in plan.waiting[0]


def test_failed_head_is_deleted_first() -> None:
    plan = plan_pods(facts(spec({"replicas": 1})), [head(phase="Failed")], {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["c-head-aaaaa"] and plan.creations == []
    assert plan.stopped


def test_terminating_head_is_waited_for() -> None:
    plan = plan_pods(facts(spec()), [head(terminating=True)], {}, NOW, namer())
    assert plan.empty and "terminating" in plan.waiting[0]


def test_two_heads_stop_the_pass() -> None:
    plan = plan_pods(facts(spec()), [head("a"), head("b")], {}, NOW, namer())
    assert plan.empty and plan.stopped == "2 head pods found (a, b); delete the extra ones"


@pytest.mark.parametrize(
    ("phase", "pods", "delete_all"),
    [
        pytest.param(S.SUSPENDING, [head()], True, id="suspending-deletes-all"),
        pytest.param(S.SUSPENDING, [], False, id="suspending-nothing-left"),
        pytest.param(
            S.SUSPENDING, [head(terminating=True)], False, id="suspending-already-deleted"
        ),
        pytest.param(S.SUSPENDED, [], False, id="suspended-creates-nothing"),
    ],
)
def test_suspend_phases(phase: S, pods: list[PodView], delete_all: bool) -> None:
    plan = plan_pods(facts(spec({"replicas": 1}), suspend_phase=phase), pods, {}, NOW, namer())
    assert (plan.delete_all_reason is not None) == delete_all and plan.creations == []


@pytest.mark.parametrize(
    ("strategy", "stamped", "delete_all"),
    [
        pytest.param("Recreate", "old", True, id="recreate-on-new-hash"),
        pytest.param("Recreate", "h1", False, id="recreate-same-hash"),
        pytest.param("Recreate", "", False, id="recreate-unstamped-head"),
        pytest.param("None", "old", False, id="none-never-recreates"),
    ],
)
def test_recreate_upgrade(strategy: str, stamped: str, delete_all: bool) -> None:
    cluster = spec({"replicas": 1}, upgradeStrategy={"type": strategy})
    pods = [head(recreate_hash=stamped), worker("w1")]
    plan = plan_pods(facts(cluster), pods, {}, NOW, namer())
    assert (plan.delete_all_reason is not None) == delete_all


def test_unmet_expectation_holds_the_group_back() -> None:
    exp = {"g": Expectation(creates=["c-g-worker-x"], since=NOW)}
    plan = plan_pods(facts(spec({"replicas": 2})), [head()], exp, NOW, namer())
    assert plan.creations == [] and "waiting" in plan.waiting[0]


def test_expired_expectation_is_dropped() -> None:
    exp = {"g": Expectation(creates=["c-g-worker-x"], since=NOW)}
    later = NOW + EXPECTATION_TIMEOUT + timedelta(seconds=1)
    plan = plan_pods(facts(spec({"replicas": 2})), [head()], exp, later, namer())
    assert len(plan.creations) == 2


def test_met_delete_expectation_lets_the_group_scale() -> None:
    exp = {"g": Expectation(deletes=["w0"], since=NOW)}
    pods = [head(), worker("w0", terminating=True)]
    plan = plan_pods(facts(spec({"replicas": 1})), pods, exp, NOW, namer())
    assert len(plan.creations) == 1


def test_multi_host_group_creates_whole_replicas() -> None:
    plan = plan_pods(facts(spec({"replicas": 2, "numOfHosts": 2})), [head()], {}, NOW, namer())
    made = [(c.replica_index, c.host_index) for c in plan.creations]
    assert made == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len({c.replica_name for c in plan.creations}) == 2


def test_multi_host_incomplete_replica_is_rebuilt() -> None:
    pods = [
        head(),
        worker("a", replica_index=0),
        worker("b", replica_index=1),
        worker("c", replica_index=1),
    ]
    plan = plan_pods(facts(spec({"replicas": 2, "numOfHosts": 2})), pods, {}, NOW, namer())
    assert [d.name for d in plan.deletions] == ["a"]
    assert [(c.replica_index, c.host_index) for c in plan.creations] == [(0, 0), (0, 1)]


def test_prune_expectations_keeps_only_unmet_ones() -> None:
    exps = {
        "headgroup": Expectation(creates=["c-head-aaaaa"], since=NOW),
        "g": Expectation(creates=["w9"], since=NOW),
        "old": Expectation(creates=["x"], since=NOW - EXPECTATION_TIMEOUT * 2),
    }
    kept = prune_expectations(exps, [head()], NOW)
    assert set(kept) == {"g"}


def test_a_group_awaits_only_the_creates_and_deletes_the_api_accepted() -> None:
    plan = PodPlan(
        creations=[PodCreation(name=n, group="g") for n in ("w1", "w2")]
        + [PodCreation(name="h", group="headgroup", head=True)],
        deletions=[PodDeletion(name=n, group="g", reason="scale down") for n in ("w0", "w9")],
    )
    awaited = expectations_after(plan, created=["w1", "h"], deleted=["w9"], now=NOW)
    assert awaited == {
        "g": Expectation(creates=["w1"], deletes=["w9"], since=NOW),
        "headgroup": Expectation(creates=["h"], since=NOW),
    }
    assert expectations_after(plan, created=[], deleted=[], now=NOW) == {}  # none went through


def test_a_failed_apply_is_retried_after_a_doubling_delay_with_a_cap() -> None:
    delays = [retry_delay(n).total_seconds() for n in range(9)]
    assert delays == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert retry_delay(10_000) == MAX_RETRY_DELAY
