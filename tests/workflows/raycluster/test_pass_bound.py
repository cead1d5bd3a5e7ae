"""How many pod changes one pass plans: at most `MAX_POD_CHANGES`, the rest in later passes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from activities.contract import PodView
from crds.validation.sizes import MAX_WORKER_PODS
from workflows.raycluster.decisions import MAX_POD_CHANGES, plan_pods
from workflows.raycluster.plans import PodPlan

from .helpers import facts, head, namer, spec, worker

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LARGEST = {"replicas": MAX_WORKER_PODS}
"""The largest group validation accepts (maxReplicas at its default: no maximum)."""


def _made(plan: PodPlan) -> list[PodView]:
    """The plan's pods as the next pass reads them."""
    return [
        worker(c.name, group=c.group, replica_index=c.replica_index, phase="Pending")
        for c in plan.creations
    ]


def test_the_largest_group_gets_a_bounded_batch_and_says_what_is_left() -> None:
    plan = plan_pods(facts(spec(LARGEST)), [head()], {}, NOW, namer())
    assert len(plan.creations) == MAX_POD_CHANGES
    assert [c.replica_index for c in plan.creations] == list(range(MAX_POD_CHANGES))
    assert plan.unfinished
    assert plan.waiting == [
        f"group g: {MAX_WORKER_PODS - MAX_POD_CHANGES} more worker pod(s) to create"
    ]
    assert plan.creating == [f"group g: creating {MAX_POD_CHANGES} worker pod(s)"]


def test_the_next_pass_goes_on_with_the_next_indices() -> None:
    names = namer()  # the workflow's names go on from pass to pass
    first = plan_pods(facts(spec(LARGEST)), [head()], {}, NOW, names)
    pods = [head(), *_made(first)]
    second = plan_pods(facts(spec(LARGEST)), pods, {}, NOW, names)
    indices = [c.replica_index for c in second.creations]
    assert indices == list(range(MAX_POD_CHANGES, 2 * MAX_POD_CHANGES))
    assert not {c.name for c in second.creations} & {p.name for p in pods}


def test_the_last_batch_finishes_the_plan() -> None:
    group = {"replicas": MAX_POD_CHANGES + 5}
    first = plan_pods(facts(spec(group)), [head()], {}, NOW, namer())
    second = plan_pods(facts(spec(group)), [head(), *_made(first)], {}, NOW, namer())
    assert len(second.creations) == 5 and not second.unfinished and second.waiting == []


def test_groups_share_the_bound_in_spec_order() -> None:
    groups = [{"groupName": "a", "replicas": 70}, {"groupName": "b", "replicas": 70}]
    plan = plan_pods(facts(spec(*groups)), [], {}, NOW, namer())
    by_group = [c.group for c in plan.creations if not c.head]
    room = MAX_POD_CHANGES - 1  # the head is one of the pass's pods
    assert by_group == ["a"] * 70 + ["b"] * (room - 70)
    assert plan.waiting == [f"group b: {140 - room} more worker pod(s) to create"]


def test_a_multi_host_replica_is_never_split() -> None:
    """Whole replicas while the pass has room: two of 40 hosts, not a third cut at 20."""
    plan = plan_pods(facts(spec({"replicas": 3, "numOfHosts": 40})), [head()], {}, NOW, namer())
    assert len(plan.creations) == 80 and {c.replica_index for c in plan.creations} == {0, 1}
    assert plan.unfinished and plan.waiting == ["group g: 40 more worker pod(s) to create"]


def test_a_replica_larger_than_the_bound_gets_a_pass_of_its_own() -> None:
    hosts = MAX_POD_CHANGES + 50
    group = {"groupName": "tpu", "replicas": 2, "numOfHosts": hosts}
    alone = plan_pods(facts(spec(group)), [head()], {}, NOW, namer())
    assert len(alone.creations) == hosts and alone.unfinished
    # After other pods in the same pass, it waits for the next one rather than overflow it.
    after = plan_pods(facts(spec({"groupName": "a", "replicas": 1}, group)), [], {}, NOW, namer())
    assert [c.group for c in after.creations] == ["headgroup", "a"] and after.unfinished


def _live(count: int, **fields: Any) -> list[PodView]:
    return [head(), *(worker(f"w{i:05d}", replica_index=i, **fields) for i in range(count))]


def test_a_scale_down_deletes_a_bounded_batch() -> None:
    plan = plan_pods(facts(spec({"replicas": 0})), _live(250), {}, NOW, namer())
    assert len(plan.deletions) == MAX_POD_CHANGES and plan.unfinished


def test_a_suspended_group_loses_a_bounded_batch() -> None:
    plan = plan_pods(facts(spec({"replicas": 250, "suspend": True})), _live(250), {}, NOW, namer())
    assert len(plan.deletions) == MAX_POD_CHANGES and plan.unfinished


def test_unhealthy_pods_go_a_bounded_batch_at_a_time() -> None:
    pods = _live(250, phase="Failed")
    plan = plan_pods(facts(spec({"replicas": 250})), pods, {}, NOW, namer())
    assert len(plan.deletions) == MAX_POD_CHANGES and plan.unfinished
    assert plan.stopped == f"deleted {MAX_POD_CHANGES} unhealthy worker pod(s) of group g"


def test_a_plan_within_the_bound_is_finished() -> None:
    plan = plan_pods(facts(spec({"replicas": 3})), [head()], {}, NOW, namer())
    assert len(plan.creations) == 3 and not plan.unfinished
