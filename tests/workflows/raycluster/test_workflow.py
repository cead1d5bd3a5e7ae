"""The RayCluster workflow on the time-skipping server.

Kubernetes is replaced at the activity boundary by `FakeCluster`.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowExecutionDescription, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from crds.feature_gates import parse_feature_gates
from tests.eventually import eventually, when
from tests.history_scan import activity_calls, patch_markers
from tests.workflows.harness import EntityHarness
from worker.running import strict_sandbox_runner
from workflows import messages
from workflows.raycluster.decisions import MAX_POD_CHANGES
from workflows.raycluster.state import RayClusterInput
from workflows.raycluster.workflow import RayClusterWorkflow

from .fake_cluster import FakeCluster

SPEC: dict[str, Any] = {
    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "h"}]}}},
    "workerGroupSpecs": [
        {
            "groupName": "g",
            "replicas": 2,
            "minReplicas": 0,
            "maxReplicas": 5,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w"}]}},
        }
    ],
}


class Harness(EntityHarness):
    kind, run, input_type = "RayCluster", RayClusterWorkflow.run, RayClusterInput

    def __init__(self, env: WorkflowEnvironment, cluster: FakeCluster, queue: str) -> None:
        super().__init__(env, cluster.name, queue)
        self.cluster = cluster

    async def pods_settle(self) -> None:
        """Make the created pods ready and tell the workflow, as the bridge would."""
        self.cluster.finish_terminating()
        self.cluster.make_ready()
        await self.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))


@pytest_asyncio.fixture
async def harness(env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Harness]:
    cluster = FakeCluster(f"c{uuid.uuid4().hex[:6]}", dict(SPEC))
    async with Worker(
        env.client,
        task_queue=task_queue,
        workflows=[RayClusterWorkflow],
        activities=cluster.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        harness = Harness(env, cluster, task_queue)
        yield harness
        await harness.terminate()


async def test_new_cluster_becomes_ready(harness: Harness) -> None:
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    assert cluster.head_service is not None
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready", message="ready")
    progress = await harness.progress()
    assert progress.state == "ready"
    assert any("created" in d for d in progress.last_decisions)


async def test_a_deterministic_head_name_is_kept_across_a_head_restart(harness: Harness) -> None:
    """ENABLE_DETERMINISTIC_HEAD_POD_NAME: `<cluster>-head`, recreated under the same name."""
    cluster = harness.cluster
    cluster.head_name = f"{cluster.name}-head"
    await harness.start()
    await eventually(lambda: cluster.live("head") == [cluster.head_name], message="the head")
    await harness.pods_settle()
    # The pass that sees the pods as created must run before the head disappears.
    await eventually(lambda: cluster.status and cluster.status.state == "ready", message="ready")
    del cluster.pods[cluster.head_name]  # the head pod was deleted by someone
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))
    await eventually(lambda: cluster.live("head") == [cluster.head_name], message="recreated")
    assert cluster.created.count(cluster.head_name) == 2


async def test_scale_up_and_down_by_spec(harness: Harness) -> None:
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live("worker")) == 2)
    await harness.pods_settle()
    cluster.set_group(0, replicas=4)
    await harness.signal(messages.SPEC_CHANGED, messages.SpecChanged(generation=cluster.generation))
    await eventually(lambda: len(cluster.live("worker")) == 4, message="4 workers")
    await harness.pods_settle()
    cluster.set_group(0, replicas=1)
    await harness.signal(messages.SPEC_CHANGED, messages.SpecChanged(generation=cluster.generation))
    await eventually(lambda: len(cluster.live("worker")) == 1, message="1 worker")


async def test_workers_to_delete_removes_that_pod(harness: Harness) -> None:
    cluster = harness.cluster
    await harness.start()
    workers = await eventually(
        lambda: cluster.live("worker") if len(cluster.live("worker")) == 2 else None
    )
    await harness.pods_settle()
    victim = workers[0]
    cluster.set_group(0, replicas=1, scaleStrategy={"workersToDelete": [victim]})
    await harness.signal(messages.SPEC_CHANGED, messages.SpecChanged(generation=cluster.generation))
    await eventually(lambda: cluster.live("worker") == [workers[1]], message="only the survivor")


async def test_suspend_and_resume_signals_write_the_spec(harness: Harness) -> None:
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3)
    await harness.pods_settle()
    await harness.signal(messages.SUSPEND, messages.UserRequest(reason="test"))
    await eventually(lambda: cluster.spec.get("suspend") is True, message="spec.suspend")
    await eventually(lambda: cluster.live() == [], message="all pods deleted")
    await harness.pods_settle()
    await eventually(
        lambda: cluster.status and cluster.status.state == "suspended", message="suspended"
    )
    await harness.signal(messages.RESUME, messages.UserRequest(reason="test"))
    await eventually(lambda: len(cluster.live()) == 3, message="pods back after resume")


async def test_a_resume_while_the_pods_terminate_starts_them_again(harness: Harness) -> None:
    """Regression (real-Ray e2e): a resume read with the suspended pods just gone finished the
    suspend (Suspending → Suspended) and then waited for news to start again. Nothing was
    left to change, so the cluster sat suspended until the 300 s resync."""
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready", message="ready")
    await harness.signal(messages.SUSPEND, messages.UserRequest(reason="test"))
    await eventually(lambda: cluster.live() == [], message="the pods terminating")
    cluster.finish_terminating()  # gone, and the news of it not yet delivered
    await harness.signal(messages.RESUME, messages.UserRequest(reason="test"))
    await eventually(lambda: len(cluster.live()) == 3, message="the pods created again")
    assert cluster.spec.get("suspend") is False


async def test_signals_typed_in_the_ui_suspend_resume_or_are_refused(harness: Harness) -> None:
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3)
    await harness.pods_settle()
    await harness.send_as_typed(messages.SUSPEND)  # "Send a Signal" with an empty input
    await eventually(lambda: cluster.spec.get("suspend") is True, message="spec.suspend")
    await eventually(lambda: cluster.live() == [], message="all pods deleted")
    await harness.pods_settle()
    await harness.send_as_typed(messages.RESUME, "please")
    await harness.send_as_typed(messages.RESUME, {"reson": "typo"})

    def invalid() -> list[Any] | None:
        found = [e for e in cluster.events if e.reason == "InvalidSignal"]
        return found if len(found) == 2 else None

    refused = await eventually(invalid, message="two refusals")
    assert all(e.type == "Warning" and "signal resume refused" in e.message for e in refused)
    assert "please" not in refused[0].message
    assert cluster.spec.get("suspend") is True
    await harness.send_as_typed(messages.RESUME, {})
    await eventually(lambda: len(cluster.live()) == 3, message="pods back after resume")
    assert await harness.task_failures() == 0


async def test_invalid_spec_creates_nothing_and_says_why(harness: Harness) -> None:
    cluster = harness.cluster
    cluster.set_group(0, minReplicas=3, maxReplicas=1)
    await harness.start()
    event = await eventually(lambda: cluster.events[0] if cluster.events else None)
    assert event.reason == "InvalidRayClusterSpec" and event.type == "Warning"
    assert "spec.workerGroupSpecs[0].minReplicas" in event.message
    assert cluster.created == []


async def test_a_field_behind_a_gate_that_is_off_is_refused_with_kuberays_message(
    harness: Harness,
) -> None:
    cluster = harness.cluster
    cluster.spec["networkPolicy"] = {}
    await harness.start()
    event = await eventually(lambda: cluster.events[0] if cluster.events else None)
    assert event.reason == "InvalidRayClusterSpec" and event.type == "Warning"
    assert "spec.networkPolicy: requires the RayClusterNetworkPolicy feature gate" in event.message
    assert cluster.created == []
    # The worker restarted with the gate on: the next pass builds the cluster.
    cluster.gates = parse_feature_gates("RayClusterNetworkPolicy=true")
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")


async def test_a_group_larger_than_a_pass_is_created_pass_after_pass_unprompted(
    harness: Harness,
) -> None:
    """Each pass creates at most `MAX_POD_CHANGES` pods and makes the next pass due itself:
    no pod event (the bridge sends none for a creation) and no resync is needed for the rest."""
    cluster = harness.cluster
    wanted = 2 * MAX_POD_CHANGES + 50
    cluster.set_group(0, replicas=wanted, maxReplicas=wanted)
    await harness.start()
    await eventually(lambda: len(cluster.live("worker")) == wanted, message="every worker")
    assert cluster.batches[:3] == [MAX_POD_CHANGES, MAX_POD_CHANGES, 51], cluster.batches
    assert len(set(cluster.created)) == wanted + 1  # each pod once, the head too


async def test_resync_repairs_a_silent_change(harness: Harness, env: WorkflowEnvironment) -> None:
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3)
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready")
    lost = cluster.live("worker")[0]
    del cluster.pods[lost]  # no signal: the bridge missed it
    await env.sleep(timedelta(seconds=301))
    await eventually(lambda: len(cluster.live("worker")) == 2, message="replacement after resync")


async def test_gone_cr_ends_the_workflow(harness: Harness) -> None:
    handle = await harness.start()
    await eventually(lambda: len(harness.cluster.live()) == 3)
    harness.cluster.exists = False
    await harness.signal(messages.DELETED, messages.Deleted(gone=True))
    assert "is gone" in await handle.result()


async def test_continue_as_new_keeps_state(harness: Harness) -> None:
    cluster = harness.cluster
    handle = await harness.start(max_history_events=40)
    await eventually(lambda: len(cluster.live()) == 3)
    for _ in range(4):
        await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready")

    async def nudged_until_continued() -> bool:
        # Each nudge is a pass; how many fill 40 events depends on what a pass records. A
        # nudge only once the last pass is done: a run continues when nothing is pending.
        if await _continued(handle):
            return True
        if not (await handle.describe()).raw_description.pending_workflow_task.ByteSize():
            await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged())
        return False

    assert await eventually(nudged_until_continued, within=30, message="a continued run")
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged())
    progress = await harness.progress()
    assert progress.state == "ready" and len(cluster.created) == 3


async def test_a_long_settled_run_goes_on_in_a_new_run(harness: Harness) -> None:
    """A ready cluster's run continues as new past `settled_history_events`; a busy one does not."""
    cluster = harness.cluster
    cluster.fail_creates = True
    handle = await harness.start(settled_history_events=25)
    # Its pods refused, retrying: passes pile up history, but the run is not settled.
    for _ in range(6):
        await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged())
    described = await eventually(
        lambda: when(handle.describe(), lambda d: _history_length(d) > 25), message="history"
    )
    assert described.run_id == handle.first_execution_run_id
    assert not await _continued(handle)
    cluster.fail_creates = False
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged())
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready", message="ready")
    assert await eventually(lambda: _continued(handle), message="a new run once ready")
    # The new run keeps the state: it creates nothing, and its short history keeps it going.
    second = (await handle.describe()).run_id
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged())
    progress = await harness.progress()
    assert progress.state == "ready" and len(cluster.created) == 3
    assert progress.last_decisions and (await handle.describe()).run_id == second
    # The new run is told its worker's newest patches in its input: no marker for them.
    new_run = harness.env.client.get_workflow_handle(handle.id, run_id=second)
    assert patch_markers((await new_run.fetch_history()).events) == []


def _history_length(described: WorkflowExecutionDescription) -> int:
    return described.raw_description.workflow_execution_info.history_length


async def _continued(handle: WorkflowHandle[Any, Any]) -> bool:
    described = await handle.describe()
    return described.run_id != handle.first_execution_run_id or False


@pytest.mark.parametrize("fail", [True])
async def test_failed_create_sets_replica_failure(harness: Harness, fail: bool) -> None:
    cluster = harness.cluster
    cluster.fail_creates = fail
    await harness.start()
    status = await eventually(lambda: cluster.status, message="a status write")
    conditions = {c.type: c for c in status.conditions or []}
    assert conditions["ReplicaFailure"].reason == "FailedCreateWorkerPod"


async def test_a_refused_create_is_tried_again_without_a_change(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    """A refusal that passes (no `default` ServiceAccount yet) ends without any signal."""
    cluster = harness.cluster
    cluster.fail_creates = True
    await harness.start()
    await eventually(lambda: cluster.status, message="the failure written")
    progress = await harness.progress()
    assert any("a retry in 1s" in line for line in progress.waiting_for), progress
    cluster.fail_creates = False  # nothing tells the workflow
    await env.sleep(timedelta(seconds=10))  # well short of the 300 s resync
    await eventually(lambda: len(cluster.live()) == 3, message="the pods created on a retry")


async def test_a_write_refused_again_and_again_goes_on_as_a_scheduled_activity(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    """Regression: a refused local write retried inside its workflow task without end, shown
    nowhere as pending and holding the worker's shutdown (a revoked rule, a real API server)."""
    cluster = harness.cluster
    cluster.refuse_services = True
    handle = await harness.start()

    async def pending_refusal() -> list[str]:
        pending = (await handle.describe()).raw_description.pending_activities
        return [p.last_failure.message for p in pending if "403" in p.last_failure.message]

    (refusal,) = await eventually(pending_refusal, message="the refusal, pending")
    assert 'cannot create resource "services"' in refusal
    assert cluster.head_service is None and not cluster.live()
    cluster.refuse_services = False  # the rule given back: the server's next retry succeeds
    await env.sleep(timedelta(seconds=30))
    await eventually(lambda: len(cluster.live()) == 3, message="the pods after the Service")
    assert cluster.head_service is not None


FT = {
    "gcsFaultToleranceOptions": {"redisAddress": "redis:6379", "redisPassword": {"value": "s3cret"}}
}


async def test_redis_cleanup_runs_before_the_finalizer_goes(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, **FT}
    handle = await harness.start()
    await eventually(lambda: cluster.finalizers and len(cluster.live()) == 3, message="finalizer")
    cluster.delete(await env.get_current_time())
    await harness.signal(messages.DELETED, messages.Deleted(gone=False))
    await eventually(lambda: cluster.live() == [], message="pods deleted first")
    assert cluster.cleanup_job is None  # not while the head may still write to Redis
    await harness.pods_settle()
    await eventually(lambda: cluster.cleanup_job == "running", message="the cleanup Job")
    cluster.cleanup_job = "Complete"
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Job"]))
    assert "is gone" in await handle.result()
    assert not cluster.exists and not any(
        e.reason == "ForceDeletedStuckCluster" for e in cluster.events
    )


async def test_redis_cleanup_off_adds_no_finalizer_and_runs_no_job(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    """ENABLE_GCS_FT_REDIS_CLEANUP=false: the CR deletes at once, Redis is left to the user."""
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, **FT}
    cluster.redis_cleanup = False
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="pods")
    assert not cluster.finalizers
    cluster.delete(await env.get_current_time())
    assert not cluster.exists
    await harness.signal(messages.DELETED, messages.Deleted(gone=True))
    assert "is gone" in await handle.result()
    assert cluster.cleanup_job is None


async def test_a_left_over_finalizer_goes_without_a_job_when_cleanup_is_off(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    """The finalizer was added before the operator turned the cleanup off."""
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, **FT}
    handle = await harness.start()
    await eventually(lambda: cluster.finalizers and len(cluster.live()) == 3, message="finalizer")
    cluster.redis_cleanup = False  # the worker restarted with the variable set
    cluster.delete(await env.get_current_time())
    await harness.signal(messages.DELETED, messages.Deleted(gone=False))
    assert "is gone" in await handle.result()
    assert cluster.cleanup_job is None and not cluster.exists


async def test_a_stuck_cleanup_is_force_removed_after_the_timeout(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, **FT}
    handle = await harness.start()
    await eventually(lambda: cluster.finalizers and len(cluster.live()) == 3)
    cluster.delete(await env.get_current_time())
    await harness.signal(messages.DELETED, messages.Deleted(gone=False))
    await eventually(lambda: cluster.live() == [])
    await harness.pods_settle()
    await eventually(lambda: cluster.cleanup_job == "running")
    assert "is gone" in await handle.result()  # time skips to the 300 s deadline
    (event,) = [e for e in cluster.events if e.reason == "ForceDeletedStuckCluster"]
    assert event.type == "Warning" and not cluster.exists


async def test_the_redis_password_never_enters_the_history(harness: Harness) -> None:
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, **FT}
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 3)
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready")
    history = await handle.fetch_history()
    assert "s3cret" not in history.to_json()


async def test_each_pass_runs_in_one_workflow_task(harness: Harness) -> None:
    """A pass's read and writes are local activities: markers in the history, no activity
    task (no dispatch through the server, no workflow task for each result)."""
    cluster = harness.cluster
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")

    async def local_activities() -> list[str]:
        # The pods exist before the workflow task that created them is in the history.
        scheduled, local = activity_calls((await handle.fetch_history()).events)
        assert scheduled == []
        return local

    names = await eventually(local_activities, message="the first pass's markers")
    history = await handle.fetch_history()
    assert patch_markers(history.events) == [messages.COVERING_PATCHES["RayCluster"]]
    assert names[:2] == ["read_raycluster", "apply_raycluster"], names


async def test_a_run_started_with_its_covering_patch_records_no_marker(harness: Harness) -> None:
    """Told its kind's newest covering patch in the input (as the bridge starts it), a run
    follows every patch it stands for (local calls) without a marker or an upsert for it."""
    cluster = harness.cluster
    handle = await harness.start(patches=messages.COVERING_PATCHES["RayCluster"])
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    history = await eventually(
        lambda: when(handle.fetch_history(), lambda h: activity_calls(h.events)[1]),
        message="the first pass's markers",
    )
    scheduled, local = activity_calls(history.events)
    assert scheduled == [] and local[:2] == ["read_raycluster", "apply_raycluster"], local
    assert patch_markers(history.events) == []
    upserts = [
        e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
        for e in history.events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
    ]
    assert not any("TemporalChangeVersion" in fields for fields in upserts), upserts


async def test_a_run_started_with_an_unknown_covering_patch_waits_for_a_worker_that_knows_it(
    harness: Harness,
) -> None:
    """A bridge newer than the worker: the worker fails the workflow task (Temporal offers it
    again) instead of guessing at behaviour it does not have, and acts on nothing."""
    handle = await harness.start(patches="raycluster-patches-through-a-later-release")
    assert await eventually(harness.task_failures, message="a failed workflow task") >= 1
    failures = [
        e.workflow_task_failed_event_attributes.failure.message
        async for e in handle.fetch_history_events()
        if e.HasField("workflow_task_failed_event_attributes")
    ]
    assert "raycluster-patches-through-a-later-release" in failures[0]
    assert "does not know" in failures[0]
    assert harness.cluster.created == []


async def test_passes_share_one_resync_timer_that_is_never_late(
    harness: Harness, env: WorkflowEnvironment
) -> None:
    """A wait keeps the running timer while it fires soon enough: not a timer per pass. Once
    nothing is awaited, a short resync still running is replaced by the long one at once:
    left running, it fired 15 s later for a pass with nothing to do. The long one is kept by a
    pass a while later too (replaced, it would cost a timer per pass)."""
    cluster = harness.cluster
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    for _ in range(3):  # three more passes, each after a nudge
        await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "ready", message="ready")
    await harness.signal(messages.SUSPEND, messages.UserRequest(reason="test"))
    await eventually(lambda: cluster.live() == [], message="pods being deleted")
    await harness.pods_settle()
    await eventually(lambda: cluster.status and cluster.status.state == "suspended")

    async def timers() -> dict[str, list[str]]:
        events = (await handle.fetch_history()).events
        seen: dict[str, list[str]] = {}
        for e in events:
            if e.HasField(_STARTED):
                seen.setdefault("started", []).append(e.user_metadata.summary.data.decode())
            elif e.HasField("timer_fired_event_attributes"):
                seen.setdefault("fired", []).append("")
            elif e.HasField("timer_canceled_event_attributes"):
                seen.setdefault("canceled", []).append("")
        return seen

    seen = await eventually(lambda: when(timers(), lambda t: len(t.get("started", [])) == 3))
    first, deleting, suspended = seen["started"]
    assert "waiting for a change (resync after 300s)" in first  # kept by the passes to ready
    assert "waiting for pods (resync after 15s)" in deleting  # earlier: replaced
    assert "waiting for a change (resync after 300s)" in suspended  # replaced once suspended
    assert len(seen["canceled"]) == 2 and "fired" not in seen, seen
    await env.sleep(timedelta(seconds=70))  # past the pod resync: no pass, no timer
    assert await timers() == seen
    reads = await _reads(handle)
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))
    await eventually(lambda: when(_reads(handle), lambda n: n > reads), message="the pass")
    assert await timers() == seen  # a pass 70 s into the 300 s wait keeps its timer


async def _reads(handle: WorkflowHandle[Any, Any]) -> int:
    _, local = activity_calls((await handle.fetch_history()).events)
    return local.count("read_raycluster")


_STARTED = "timer_started_event_attributes"


async def test_a_pass_due_at_the_start_arms_no_timer_first(harness: Harness) -> None:
    """Regression: the first wait, with its pass already due, armed a timer before the pass
    (its local calls let the timer start); only the wait after the pass needs one."""
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, "workerGroupSpecs": []}
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 1, message="the head")

    async def order() -> list[str]:
        events = (await handle.fetch_history()).events
        kinds = [e.WhichOneof("attributes") for e in events]
        return [k for k in kinds if k in (_STARTED, _MARKER)] if _STARTED in kinds else []

    seen = await eventually(order, message="the wait after the first pass")
    assert seen[-1] == _STARTED and seen.count(_STARTED) == 1, seen


_MARKER = "marker_recorded_event_attributes"


async def test_the_pass_that_creates_the_head_writes_its_name(harness: Harness) -> None:
    """Regression: a head-only cluster waited the 300 s resync after creating its head. The
    bridge does not signal a pod's creation and a pod no scheduler takes never changes, so the
    head's name reached the status only then (KubeRay's pod watch writes it at once). The
    creating pass counts the pods it created, as KubeRay's reconcile woken by them does."""
    cluster = harness.cluster
    cluster.spec = {**cluster.spec, "workerGroupSpecs": []}
    handle = await harness.start()
    await eventually(lambda: len(cluster.live()) == 1, message="the head")
    (head,) = cluster.live()
    status = await eventually(lambda: cluster.status, message="the first status")
    assert status.head is not None and status.head.pod_name == head
    assert (await harness.progress()).waiting_for == []

    async def timers() -> list[str]:
        events = (await handle.fetch_history()).events
        return [e.user_metadata.summary.data.decode() for e in events if e.HasField(_STARTED)]

    (first,) = await eventually(timers, message="the wait after the first pass")
    assert "resync after 300s" in first, first  # nothing of its own to look at soon


async def test_the_pass_that_creates_the_head_service_names_it_while_pods_wait(
    harness: Harness,
) -> None:
    """Regression: a cluster whose pods no node takes (GPUs, TPUs, a gang scheduler) never
    showed its head Service: the pass that created it wrote the status from its read, before
    the create, and no pod change woke another. KubeRay v1.7.0's reconcile, woken by the
    Service's creation, writes `status.endpoints` and `head.serviceName` at once."""
    cluster = harness.cluster
    await harness.start()
    status = await eventually(lambda: cluster.status, message="the first status")
    assert all(cluster.pods[name].phase == "Pending" for name in cluster.live())
    assert status.head is not None and status.head.service_name == f"{cluster.name}-head-svc"
    assert status.endpoints == {"dashboard": "8265"}


async def test_a_pass_reads_pods_as_new_as_the_newest_pod_news(harness: Harness) -> None:
    """The worker's pod cache must not hide the very event that woke the workflow."""
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: len(cluster.live()) == 3, message="head and 2 workers")
    for version in (12, 5):  # an older version arriving later lowers nothing
        reads = len(cluster.pods_read_as_of)
        change = messages.OwnedChanged(kinds=["Pod"], versions={"Pod": version})
        await harness.signal(messages.OWNED_CHANGED, change)
        await eventually(lambda n=reads: len(cluster.pods_read_as_of) > n, message="a pass")
    assert cluster.pods_read_as_of[0] == 0 and cluster.pods_read_as_of[-2:] == [12, 12]


async def test_news_of_pods_a_pass_has_read_wakes_no_pass(harness: Harness) -> None:
    """Regression (scale benchmark): the bridge's watch runs behind the worker's copy, so the
    pass one pod change woke had often read the next change already, and its news brought a
    pass with nothing new to read: a workflow task of local calls more per RayCluster."""
    cluster = harness.cluster
    cluster.pods_seen = 40
    handle = await harness.start()
    await eventually(lambda: cluster.status_writes >= 1, message="the first pass")
    reads = len(cluster.pods_read_as_of)
    read = messages.OwnedChanged(kinds=["Pod"], versions={"Pod": 40})
    await harness.signal(messages.OWNED_CHANGED, read)

    async def handled() -> bool:
        kinds = [e.WhichOneof("attributes") for e in (await handle.fetch_history()).events]
        if _SIGNALED not in kinds:  # the time-skipping server can show it a moment later
            return False
        signalled = len(kinds) - 1 - kinds[::-1].index(_SIGNALED)
        return _TASK_COMPLETED in kinds[signalled:]

    await eventually(handled, message="the workflow task after the news")
    # A pass runs its read inside the workflow task the news wakes: none ran.
    assert len(cluster.pods_read_as_of) == reads
    for news in (
        messages.OwnedChanged(kinds=["Pod"], versions={"Pod": 41}),  # newer than read
        messages.OwnedChanged(kinds=["Pod"]),  # no version: cannot tell, so it counts
        messages.OwnedChanged(kinds=["Job"], versions={"Job": 3}),  # not a pod
    ):
        await harness.signal(messages.OWNED_CHANGED, news)
        await eventually(lambda n=reads: len(cluster.pods_read_as_of) > n, message=str(news))
        reads = len(cluster.pods_read_as_of)
    assert cluster.pods_read_as_of[-3] == 41


_SIGNALED = "workflow_execution_signaled_event_attributes"
_TASK_COMPLETED = "workflow_task_completed_event_attributes"


async def test_a_pass_reads_the_raycluster_as_new_as_its_writes_and_the_news(
    harness: Harness,
) -> None:
    """The worker's copy of the RayCluster must not hide the workflow's own last write, nor
    the change the bridge reported."""
    cluster = harness.cluster
    await harness.start()
    await eventually(lambda: cluster.status_writes >= 1, message="the first status write")
    assert cluster.read_as_of[0] == 0  # nothing written or heard of yet: read live
    written = cluster.version
    reads = len(cluster.read_as_of)
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))
    await eventually(lambda: len(cluster.read_as_of) > reads, message="a pass")
    assert cluster.read_as_of[-1] >= written
    reads = len(cluster.read_as_of)
    news = messages.SpecChanged(generation=1, resync=True, version=10**6)  # a label changed
    await harness.signal(messages.SPEC_CHANGED, news)
    await eventually(lambda: len(cluster.read_as_of) > reads, message="a pass as of the news")
    assert cluster.read_as_of[-1] == 10**6
