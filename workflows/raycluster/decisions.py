"""RayCluster pod reconciliation as pure functions: KubeRay's `reconcilePods`.

KubeRay behaviours C3–C5, C16, C22 and C24 (docs/kuberay-parity.md). Given the spec, what the
API shows and what the workflow remembers, return a `PodPlan`. The order of the checks is
KubeRay's: suspend, Recreate upgrade, head, then each worker group (expectations, group
suspend, unhealthy pods, `workersToDelete`, scale up or down). Differences, on purpose: pods
that are already terminating are not counted as running workers (a replacement starts at once,
as a ReplicaSet would), and expectations survive restarts because they are workflow state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from activities.contract import PodView, is_head, is_worker
from activities.kube.vocabulary import PodPhase, RestartPolicy
from activities.raycluster.contract import PodCreation, PodDeletion
from crds import replicas
from crds.constants import HEAD_GROUP_VALUE
from crds.enums import RayClusterUpgradeType
from crds.raycluster import RayClusterSpec, WorkerGroupSpec
from workflows.raycluster.plans import Expectation, PodPlan, SuspendPhase

# An expectation that the API still contradicts after this long is dropped: the pod was
# created and removed by someone else in between, or the create failed after all.
EXPECTATION_TIMEOUT = timedelta(seconds=30)
MAX_RETRY_DELAY = timedelta(seconds=60)
"""The longest wait before a failed apply is tried again."""
MAX_POD_CHANGES = 100
"""Pods one pass creates, and pods it deletes, at most; the next pass, due at once, goes on.

KubeRay creates every missing pod of a group in one reconcile, one after the other; a pass
here first writes its plan into the workflow history, so a plan as large as `replicas` could
exhaust the worker. Like KubeRay's next reconcile, the next pass waits for the API to show
what this one did (the expectations). 100 keeps a pass's apply (a create and an Event each)
far within its timeout and its history entry to some tens of KiB. A multi-host replica is
never split (a replica that lacks a host is rebuilt whole): a pass makes at least one.
"""

NewName = Callable[[str], str]
"""Returns a fresh pod name for a prefix (the workflow draws the suffix from its seeded RNG)."""


class ClusterFacts(BaseModel):
    """Everything besides the pods that the pod decisions depend on."""

    model_config = ConfigDict(frozen=True)

    spec: RayClusterSpec
    spec_hash: str
    head_prefix: str
    worker_prefixes: dict[str, str]
    head_name: str = ""
    """A fixed head pod name (ENABLE_DETERMINISTIC_HEAD_POD_NAME); empty: a random suffix."""
    suspend_phase: SuspendPhase = SuspendPhase.NONE
    provisioned: bool = False
    skip_head_restart: bool = False


def retry_delay(failed_passes: int) -> timedelta:
    """How long to wait after `failed_passes` applies in a row failed: 1 s, doubling, capped.

    KubeRay returns the error and controller-runtime requeues the object with an exponential
    backoff; a pod create refused for a reason that passes (a namespace's `default`
    ServiceAccount not made yet, a quota freed) succeeds on a later pass without any change
    to the RayCluster that would wake the workflow.
    """
    if failed_passes <= 0:
        return timedelta(0)
    return min(timedelta(seconds=2 ** min(failed_passes - 1, 16)), MAX_RETRY_DELAY)


def next_suspend_phase(phase: SuspendPhase, suspend: bool, pod_count: int) -> SuspendPhase:
    """Advance KubeRay's suspend sequence; Suspending finishes even if `suspend` flips back."""
    if phase == SuspendPhase.SUSPENDING:
        return SuspendPhase.SUSPENDED if pod_count == 0 else phase
    if phase == SuspendPhase.SUSPENDED:
        return phase if suspend else SuspendPhase.NONE
    return SuspendPhase.SUSPENDING if suspend else SuspendPhase.NONE


def unhealthy_reason(pod: PodView) -> str | None:
    """Why KubeRay would delete this pod (row C4), or None when it is left alone."""
    if pod.phase in (PodPhase.FAILED, PodPhase.SUCCEEDED):
        return f"pod {pod.name} is {pod.phase}, a terminal phase; it will be replaced"
    if (
        pod.phase == PodPhase.RUNNING
        and pod.ray_container_terminated
        and pod.restart_policy == RestartPolicy.NEVER
    ):
        return (
            f"the Ray container of pod {pod.name} terminated and restartPolicy Never keeps it "
            "from restarting; it will be replaced"
        )
    return None


def expectation_met(expectation: Expectation | None, pods: list[PodView], now: datetime) -> bool:
    """Whether the API reflects every create and delete the group was last told to do."""
    if expectation is None or now - expectation.since > EXPECTATION_TIMEOUT:
        return True
    present = {p.name for p in pods if not p.terminating}
    return set(expectation.creates) <= present and not set(expectation.deletes) & present


def prune_expectations(
    expectations: dict[str, Expectation], pods: list[PodView], now: datetime
) -> dict[str, Expectation]:
    """Drop the expectations the API already reflects (or that timed out)."""
    kept = {}
    for group, expectation in expectations.items():
        if group == HEAD_GROUP_VALUE:
            members = [p for p in pods if is_head(p)]
        else:
            members = [p for p in pods if is_worker(p) and p.group == group]
        if not expectation_met(expectation, members, now):
            kept[group] = expectation
    return kept


def expectations_after(
    plan: PodPlan, created: list[str], deleted: list[str], now: datetime
) -> dict[str, Expectation]:
    """What each group now awaits: the creates and deletes of the plan the API accepted."""
    groups: dict[str, Expectation] = {}
    created_names, deleted_names = set(created), set(deleted)
    for creation in plan.creations:
        if creation.name in created_names:
            groups.setdefault(creation.group, Expectation(since=now)).creates.append(creation.name)
    for deletion in plan.deletions:
        if deletion.name in deleted_names:
            groups.setdefault(deletion.group, Expectation(since=now)).deletes.append(deletion.name)
    return groups


def recreate_needed(facts: ClusterFacts, heads: list[PodView]) -> bool:
    """Row C24: with `upgradeStrategy: Recreate`, a head stamped with another spec hash."""
    strategy = facts.spec.upgrade_strategy
    if strategy is None or strategy.type != RayClusterUpgradeType.RECREATE or not heads:
        return False
    stamped = heads[0].recreate_hash
    return bool(stamped) and stamped != facts.spec_hash


def plan_pods(
    facts: ClusterFacts,
    pods: list[PodView],
    expectations: dict[str, Expectation],
    now: datetime,
    new_name: NewName,
) -> PodPlan:
    """Decide this pass's pod changes."""
    plan = PodPlan()
    if facts.suspend_phase == SuspendPhase.SUSPENDING:
        if any(not p.terminating for p in pods):
            plan.delete_all_reason = "the RayCluster is being suspended"
        return plan
    if facts.suspend_phase == SuspendPhase.SUSPENDED:
        return plan
    heads = [p for p in pods if is_head(p)]
    if recreate_needed(facts, heads):
        plan.delete_all_reason = "the spec changed and upgradeStrategy is Recreate"
        return plan
    if not _plan_head(plan, facts, heads, expectations.get(HEAD_GROUP_VALUE), now, new_name):
        return plan
    workers: dict[str, list[PodView]] = {}
    for pod in pods:
        if is_worker(pod):
            workers.setdefault(pod.group, []).append(pod)
    for group in facts.spec.worker_group_specs or []:
        group_pods = workers.get(group.group_name, [])
        exp = expectations.get(group.group_name)
        if not expectation_met(exp, group_pods, now):
            plan.waiting.append(f"group {group.group_name}: waiting for earlier pod changes")
            continue
        prefix = facts.worker_prefixes[group.group_name]
        if not _plan_group(plan, group, group_pods, facts.spec, prefix, new_name):
            return plan
    return plan


def _plan_head(
    plan: PodPlan,
    facts: ClusterFacts,
    heads: list[PodView],
    expectation: Expectation | None,
    now: datetime,
    new_name: NewName,
) -> bool:
    """Head pod rules (C2, C22). Returns False when the pass must stop here."""
    if not expectation_met(expectation, heads, now):
        plan.waiting.append("head: waiting for earlier pod changes")
        return True
    if len(heads) > 1:
        names = ", ".join(sorted(p.name for p in heads))
        plan.stopped = f"{len(heads)} head pods found ({names}); delete the extra ones"
        return False
    if len(heads) == 1:
        reason = None if heads[0].terminating else unhealthy_reason(heads[0])
        if reason:
            plan.deletions.append(
                PodDeletion(name=heads[0].name, group=HEAD_GROUP_VALUE, reason=reason)
            )
            plan.stopped = reason
            return False
        if heads[0].terminating:
            plan.waiting.append(f"head: pod {heads[0].name} is terminating")
        return True
    if facts.provisioned and facts.skip_head_restart:
        plan.waiting.append("head: not recreated (ray.io/disable-provisioned-head-restart)")
        return True
    # A fixed name is safe to reuse: a head is created only once no head pod, not even a
    # terminating one, is left.
    name = facts.head_name or new_name(facts.head_prefix)
    plan.creations.append(PodCreation(name=name, group=HEAD_GROUP_VALUE, head=True))
    return True


def _plan_group(
    plan: PodPlan,
    group: WorkerGroupSpec,
    pods: list[PodView],
    spec: RayClusterSpec,
    prefix: str,
    new_name: NewName,
) -> bool:
    """One worker group (C3, C5, C16 per-group suspend). Returns False to stop the pass."""
    name = group.group_name
    live = sorted((p for p in pods if not p.terminating), key=lambda p: p.name)
    if group.suspend:
        _delete(
            plan, (PodDeletion(name=p.name, group=name, reason="group suspended") for p in live)
        )
        return True
    unhealthy = [(p, unhealthy_reason(p)) for p in live]
    bad = [PodDeletion(name=p.name, group=name, reason=r) for p, r in unhealthy if r]
    if bad:
        deleted = _delete(plan, bad)
        plan.stopped = f"deleted {deleted} unhealthy worker pod(s) of group {name}"
        return False
    doomed = set(group.scale_strategy.workers_to_delete or []) if group.scale_strategy else set()
    listed = "listed in scaleStrategy.workersToDelete"
    _delete(
        plan,
        (PodDeletion(name=p.name, group=name, reason=listed) for p in live if p.name in doomed),
    )
    running = [p for p in live if p.name not in doomed]
    if replicas.hosts(group) > 1:
        _scale_multi_host(plan, group, running, spec, prefix, new_name)
    else:
        _scale_single_host(plan, group, running, spec, prefix, new_name)
    return True


def _autoscaled(spec: RayClusterSpec) -> bool:
    return bool(spec.enable_in_tree_autoscaling)


def _scale_single_host(
    plan: PodPlan,
    group: WorkerGroupSpec,
    running: list[PodView],
    spec: RayClusterSpec,
    prefix: str,
    new_name: NewName,
) -> None:
    name, diff = group.group_name, replicas.desired_pods(group) - len(running)
    if diff > 0:
        count = min(diff, _room(plan))
        used: set[int] = {p.replica_index for p in running if p.replica_index is not None}
        for index in _free_indices(used, count):
            plan.creations.append(
                PodCreation(name=new_name(prefix), group=name, replica_index=index)
            )
        if count:
            plan.creating.append(f"group {name}: creating {count} worker pod(s)")
        _leave(plan, name, diff - count)
    elif diff < 0 and not _autoscaled(spec):
        # With the autoscaler on, only workersToDelete removes pods (the autoscaler chooses).
        reason = f"scaling group {name} down to {replicas.desired_pods(group)}"
        _delete(
            plan, (PodDeletion(name=p.name, group=name, reason=reason) for p in running[:-diff])
        )


def _scale_multi_host(
    plan: PodPlan,
    group: WorkerGroupSpec,
    running: list[PodView],
    spec: RayClusterSpec,
    prefix: str,
    new_name: NewName,
) -> None:
    """Multi-host groups scale by whole replicas; a replica missing a host is rebuilt."""
    hosts, name = replicas.hosts(group), group.group_name
    by_replica: dict[int | None, list[PodView]] = {}
    for pod in running:
        by_replica.setdefault(pod.replica_index, []).append(pod)
    complete = sorted(i for i, ps in by_replica.items() if i is not None and len(ps) == hosts)
    for index, members in by_replica.items():
        if index is None or len(members) != hosts:
            reason = f"replica {index} of group {name} is incomplete; it will be rebuilt"
            _delete(plan, (PodDeletion(name=p.name, group=name, reason=reason) for p in members))
    diff = replicas.desired_replicas(group) - len(complete)
    if diff > 0:
        # Whole replicas while the pass has room; at least one in a pass that has made none.
        count = min(diff, _room(plan) // hosts or int(not plan.creations))
        for index in _free_indices(set(complete), count):
            replica_name = new_name(f"{name}-")
            for host in range(hosts):
                plan.creations.append(
                    PodCreation(
                        name=new_name(prefix),
                        group=name,
                        replica_index=index,
                        replica_name=replica_name,
                        host_index=host,
                    )
                )
        _leave(plan, name, (diff - count) * hosts)
    elif diff < 0 and not _autoscaled(spec):
        reason = f"scaling group {name} down to {replicas.desired_replicas(group)} replicas"
        surplus = (pod for index in complete[diff:] for pod in by_replica[index])
        _delete(plan, (PodDeletion(name=p.name, group=name, reason=reason) for p in surplus))


def _room(plan: PodPlan) -> int:
    """How many more pods the pass may create."""
    return max(MAX_POD_CHANGES - len(plan.creations), 0)


def _leave(plan: PodPlan, group: str, count: int) -> None:
    """Note the pods of a group that the next passes create, if any."""
    if count > 0:
        plan.unfinished = True
        plan.waiting.append(f"group {group}: {count} more worker pod(s) to create")


def _delete(plan: PodPlan, deletions: Iterable[PodDeletion]) -> int:
    """Add deletions while the pass has room; returns how many (the rest go next pass)."""
    added = 0
    for deletion in deletions:
        if len(plan.deletions) >= MAX_POD_CHANGES:
            plan.unfinished = True
            break
        plan.deletions.append(deletion)
        added += 1
    return added


def _free_indices(used: set[int], count: int) -> list[int]:
    """The `count` smallest replica indices not in use (KubeRay's multi-host indexing)."""
    found: list[int] = []
    index = 0
    while len(found) < count:
        if index not in used:
            found.append(index)
        index += 1
    return found
