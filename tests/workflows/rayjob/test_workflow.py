"""The RayJob workflow on the time-skipping server, against `FakeJobWorld`.

Time only moves when a test says so (`env.sleep`): the workflow paces its Ray polls and its
deadlines with durable timers, so each test skips exactly the time it means to.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.rayjob.contract import JobOperatorOptions
from crds.enums import JobStatus
from crds.feature_gates import parse_feature_gates
from tests.eventually import eventually
from tests.history_scan import activity_calls, patch_markers
from tests.workflows.harness import EntityHarness
from worker.running import strict_sandbox_runner
from workflows import messages
from workflows.rayjob.state import RayJobInput
from workflows.rayjob.workflow import RayJobWorkflow

from .fake_world import CREATED_VERSION, FakeJobWorld, RayRecord

IMAGE = "rayproject/ray:2.9.0"
CLUSTER: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": IMAGE}]}},
    },
    "workerGroupSpecs": [
        {
            "groupName": "g",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w", "image": IMAGE}]}},
        }
    ],
}
SPEC: dict[str, Any] = {"entrypoint": "python train.py", "rayClusterSpec": CLUSTER}
TICK = timedelta(seconds=121)
"""Longer than the workflow's longest pause between two quick polls of Ray."""
TASK_DONE = "workflow_task_completed_event_attributes"
SIGNALLED = "workflow_execution_signaled_event_attributes"


def job_spec(**fields: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    if fields.get("submissionMode") == "SidecarMode":
        spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = "Never"
    return {**spec, **fields}


class Harness(EntityHarness):
    kind, run, input_type = "RayJob", RayJobWorkflow.run, RayJobInput

    def __init__(self, env: WorkflowEnvironment, queue: str) -> None:
        super().__init__(env, "train", queue)
        self.world = FakeJobWorld("train", job_spec())

    def worker(self) -> Worker:
        return Worker(
            self.env.client,
            task_queue=self.queue,
            workflows=[RayJobWorkflow],
            activities=self.world.activities(),
            workflow_runner=strict_sandbox_runner(),
        )

    async def owned_changed(self) -> None:
        await self.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["RayCluster"]))

    async def spec_changed(self) -> None:
        await self.signal(
            messages.SPEC_CHANGED, messages.SpecChanged(generation=self.world.generation)
        )

    async def state(self, wanted: str, within: float = 10.0) -> None:
        await eventually(lambda: self.world.state == wanted, within=within, message=wanted)

    async def ready_and_running(self) -> str:
        """Wait for the cluster, make it ready, wait for Running; returns the job id."""
        world = self.world
        await eventually(lambda: world.live_clusters(), message="a RayCluster")
        world.make_ready()
        await self.owned_changed()
        await self.state("Running")
        assert world.status is not None and world.status.job_id
        return world.status.job_id

    async def events(self, kind: str) -> int:
        """How many events of `kind` (`timer_started_event_attributes`) the history holds."""
        assert self.handle is not None
        history = await self.handle.fetch_history()
        return sum(1 for e in history.events if e.HasField(kind))

    async def pass_after(self, nudge: Callable[[], Awaitable[None]]) -> None:
        """Send `nudge` (a signal) and wait until a workflow task that saw it is done.

        Not merely the next task: one already under way when the signal came (a follow-up of
        the last pass, a timer's) would end first, and the nudge's pass would not have run.
        """
        assert self.handle is not None
        handle = self.handle
        before = len((await handle.fetch_history()).events)
        await nudge()

        async def seen() -> bool:
            events = (await handle.fetch_history()).events[before:]
            signalled = next((i for i, e in enumerate(events) if e.HasField(SIGNALLED)), None)
            return signalled is not None and any(
                e.HasField(TASK_DONE) for e in events[signalled + 1 :]
            )

        await eventually(seen, message="the pass that saw the nudge")

    async def finish(self, status: JobStatus = JobStatus.SUCCEEDED) -> None:
        """The Ray job ends, and the worker's watch of running Ray jobs says so."""
        self.world.finish(status, await self.env.get_current_time())
        await self.ray_news()

    async def ray_news(self) -> None:
        await self.signal(
            messages.OWNED_CHANGED, messages.OwnedChanged(kinds=[messages.RAY_JOB_KIND])
        )


@pytest_asyncio.fixture
async def harness(env: WorkflowEnvironment, task_queue: str) -> AsyncIterator[Harness]:
    harness = Harness(env, task_queue)
    async with harness.worker():
        yield harness
        await harness.terminate()


@pytest.mark.parametrize("mode", ["K8sJobMode", "HTTPMode", "SidecarMode", "InteractiveMode"])
async def test_success_in_each_mode(harness: Harness, mode: str) -> None:
    world = harness.world
    world.spec = job_spec(submissionMode=mode, shutdownAfterJobFinishes=True)
    await harness.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    assert "ray.io/rayjob-finalizer" in world.finalizers
    assert world.status is not None and world.status.start_time is not None
    world.make_ready()
    await harness.owned_changed()
    if mode == "InteractiveMode":
        await harness.state("Waiting")
        world.edit(jobId="my-job")
        world.ray_jobs["my-job"] = RayRecord()  # the user's own `ray job submit`
        world.submissions.append("my-job")
        await harness.spec_changed()
    await harness.state("Running")
    await harness.env.sleep(TICK)
    await harness.finish()
    await harness.state("Complete")
    status = world.status
    assert status is not None and status.job_status == JobStatus.SUCCEEDED
    assert status.succeeded == 1 and status.failed == 0 and status.end_time is not None
    assert len(world.submissions) == 1
    if mode == "K8sJobMode":
        assert "CreatedRayJobSubmitter" in world.reasons()
    await eventually(lambda: world.live_clusters() == [], message="cluster deleted after TTL 0")
    progress = await harness.progress()
    assert progress.state == "Complete"
    # Each status write names the version the pass last read or wrote itself (the first
    # pass's finalizer), and no pass reads a cluster before it exists.
    assert world.stale_status_writes == 0 and world.unmade_cluster_reads == 0


@pytest.mark.parametrize("started_with", [None, messages.COVERING_PATCHES["RayJob"]])
async def test_no_activity_is_dispatched_so_a_running_job_holds_no_slot(
    harness: Harness, started_with: str | None
) -> None:
    """Kubernetes calls, the submission and each question to Ray run as local activities in
    the workflow task that decides them: nothing waits in a worker's activity slot while the
    job runs, however long it runs."""
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode", shutdownAfterJobFinishes=True)
    await harness.start(patches=started_with)
    await harness.ready_and_running()
    await harness.env.sleep(TICK)  # submitted, and waiting on Ray
    await harness.finish()
    await harness.state("Complete")
    await eventually(lambda: world.live_clusters() == [], message="cluster deleted after TTL 0")
    handle = harness.handle
    assert handle is not None
    expected = {
        "read_rayjob",
        "create_rayjob_cluster",
        "submit_ray_job",
        "ask_ray_job",
        "delete_attempt",
    }

    async def calls() -> tuple[list[str], list[str]] | None:
        # The deletion is done before the workflow task that did it is in the history.
        scheduled, local = activity_calls((await handle.fetch_history()).events)
        return (scheduled, local) if expected <= set(local) else None

    scheduled, _ = await eventually(calls, message="the deletion's marker")
    assert scheduled == [], scheduled
    # One patch marker stands for all the patches a new run takes (`workflows.patches`); none
    # when the input names them, as the bridge's does.
    history = await handle.fetch_history()
    markers = [] if started_with else [messages.COVERING_PATCHES["RayJob"]]
    assert patch_markers(history.events) == markers


async def test_a_finished_rayjob_costs_nothing_while_it_is_kept(harness: Harness) -> None:
    """No resync timer once nothing can change on its own: a kept Complete RayJob's history
    stays as it is for a week, and it still answers an edit and its deletion at once."""
    world = harness.world
    await harness.start()
    await harness.ready_and_running()
    await harness.finish()
    await harness.state("Complete")
    handle = harness.handle
    assert handle is not None
    await harness.env.sleep(TICK)  # the last quick poll timers fire
    await eventually(lambda: _settled(handle), message="the workflow to settle")
    before = await _history_length(handle)
    await harness.env.sleep(timedelta(days=7))
    assert await _history_length(handle) == before
    world.edit(entrypoint="python other.py")  # a later edit is looked at, not acted on
    await harness.spec_changed()
    await eventually(lambda: _longer(handle, before), message="a pass for the edit")
    world.deleting = True
    await harness.signal(messages.DELETED, messages.Deleted(gone=False))
    assert "is gone" in await handle.result()


async def _history_length(handle: WorkflowHandle[Any, Any]) -> int:
    return len([e async for e in handle.fetch_history_events()])


async def _longer(handle: WorkflowHandle[Any, Any], than: int) -> bool:
    return await _history_length(handle) > than


async def _settled(handle: WorkflowHandle[Any, Any]) -> bool:
    """The last workflow task has completed and nothing (activity, timer) is in flight."""
    described = await handle.describe()
    raw = described.raw_description
    return not raw.pending_activities and not raw.pending_workflow_task.ByteSize()


async def test_backoff_limit_one_makes_exactly_two_attempts(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(backoffLimit=1)
    await harness.start()
    first = await harness.ready_and_running()
    await harness.env.sleep(TICK)
    await harness.finish(JobStatus.FAILED)
    await eventually(lambda: len(world.created_clusters) == 2, message="a second cluster")
    second = await harness.ready_and_running()
    await harness.env.sleep(TICK)
    await harness.finish(JobStatus.FAILED)
    await harness.state("Failed")
    assert first != second and world.submissions == [first, second]
    assert len(set(world.created_clusters)) == 2
    assert world.status is not None and world.status.failed == 2
    assert world.status.reason == "AppFailed"
    await harness.env.sleep(TICK)
    assert len(world.created_clusters) == 2


async def test_active_deadline_fails_without_retry(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(activeDeadlineSeconds=600, backoffLimit=2)
    await harness.start()
    await harness.ready_and_running()
    await harness.env.sleep(timedelta(seconds=601))
    await harness.state("Failed")
    assert world.status is not None and world.status.reason == "DeadlineExceeded"
    assert world.status.start_time and world.status.end_time
    elapsed = world.status.end_time - world.status.start_time
    assert timedelta(seconds=600) <= elapsed < timedelta(seconds=700)
    await harness.env.sleep(TICK)
    assert len(world.created_clusters) == 1


async def test_pre_running_deadline_is_retried(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(preRunningDeadlineSeconds=30, backoffLimit=1)
    await harness.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    await harness.env.sleep(timedelta(seconds=31))
    await eventually(lambda: len(world.created_clusters) == 2, message="a retry")
    await harness.env.sleep(timedelta(seconds=31))
    await harness.state("Failed")
    assert world.status is not None
    assert world.status.reason == "PreRunningDeadlineExceeded" and world.status.failed == 2


async def test_suspend_then_resume_starts_a_new_attempt(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(shutdownAfterJobFinishes=True)
    await harness.start()
    first = await harness.ready_and_running()
    await harness.signal(messages.SUSPEND, messages.UserRequest(reason="test"))
    await harness.state("Suspended")
    assert world.spec["suspend"] is True and world.live_clusters() == []
    assert world.submitter is None and world.status is not None and not world.status.job_id
    await harness.signal(messages.RESUME, messages.UserRequest(reason="test"))
    second = await harness.ready_and_running()
    assert second != first and len(world.created_clusters) == 2
    # Only the teardown waits for a deleted cluster's pods: other passes do not count them.
    counted = {status for status, count in world.left_pods_counted if count}
    assert counted == {"Suspending"}
    assert any(status == "Running" for status, _ in world.left_pods_counted)


async def test_signals_typed_in_the_ui_suspend_resume_or_are_refused(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(shutdownAfterJobFinishes=True)
    await harness.start()
    await harness.ready_and_running()
    await harness.send_as_typed(messages.SUSPEND)
    await harness.state("Suspended")
    await harness.send_as_typed(messages.RESUME, {"reason": 5})
    await harness.send_as_typed(messages.RESUME, {}, {})
    await eventually(lambda: world.reasons().count("InvalidSignal") == 2)
    assert world.spec["suspend"] is True
    await harness.send_as_typed(messages.RESUME, None)
    await harness.ready_and_running()
    assert await harness.task_failures() == 0


async def test_created_suspended_never_creates_a_cluster(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(suspend=True, shutdownAfterJobFinishes=True)
    await harness.start()
    await harness.state("Suspended")
    await harness.env.sleep(TICK)
    assert world.created_clusters == []


async def test_invalid_rayjob_creates_nothing(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(suspend=True)  # suspend needs shutdownAfterJobFinishes
    await harness.start()
    await harness.state("ValidationFailed")
    assert world.status is not None and "spec.suspend" in (world.status.message or "")
    assert world.reasons() == ["InvalidRayJobSpec"] and world.created_clusters == []


async def test_deletion_rules_without_their_feature_gate_are_refused(harness: Harness) -> None:
    world = harness.world
    world.gates = parse_feature_gates("RayJobDeletionPolicy=false")
    world.spec = job_spec(deletionStrategy={"deletionRules": []})
    await harness.start()
    await harness.state("ValidationFailed")
    assert world.status is not None
    assert "RayJobDeletionPolicy feature gate must be enabled" in (world.status.message or "")
    assert world.reasons() == ["InvalidRayJobSpec"] and world.created_clusters == []


async def test_an_out_of_range_ttl_is_refused_not_a_failed_task(harness: Harness) -> None:
    # Accepted, it would run and finish, and its deletion time would lie past the year 9999.
    world = harness.world
    world.spec = job_spec(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10**18)
    await harness.start()
    await harness.state("ValidationFailed")
    assert world.status is not None
    assert "spec.ttlSecondsAfterFinished" in (world.status.message or "")
    assert "int32" in (world.status.message or "")
    assert world.created_clusters == []


async def test_deletion_rules_fire_in_order_at_their_ttls(harness: Harness) -> None:
    world = harness.world
    rules = [
        ("DeleteWorkers", 15),
        ("DeleteCluster", 35),
        ("DeleteSelf", 55),
    ]
    world.spec = job_spec(
        deletionStrategy={
            "deletionRules": [
                {"policy": p, "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": t}}
                for p, t in rules
            ]
        }
    )
    await harness.start()
    await harness.ready_and_running()
    await harness.finish()
    await harness.state("Complete")
    world.gc_on_delete = False
    cluster = world.current()
    assert cluster is not None and not cluster.workers_suspended
    await harness.env.sleep(timedelta(seconds=16))
    await eventually(lambda: cluster.workers_suspended, message="workers suspended at 15 s")
    assert not cluster.deleting
    await harness.env.sleep(timedelta(seconds=20))
    await eventually(lambda: cluster.deleting, message="cluster deleted at 35 s")
    assert not world.deleted_self
    await harness.env.sleep(timedelta(seconds=20))
    await eventually(lambda: world.deleted_self, message="RayJob deleted at 55 s")
    assert harness.handle is not None
    assert "is gone" in await harness.handle.result()
    assert not world.finalizers


async def test_shutdown_after_finish_waits_for_ttl(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=100)
    await harness.start()
    await harness.ready_and_running()
    await harness.finish()
    await harness.state("Complete")
    assert world.live_clusters()
    await harness.env.sleep(timedelta(seconds=50))
    assert world.live_clusters()
    await harness.env.sleep(timedelta(seconds=60))
    await eventually(lambda: world.live_clusters() == [], message="cluster gone after TTL")
    assert world.submitter is not None  # kept for its logs


async def test_delete_rayjob_cr_after_job_finishes_deletes_the_rayjob(harness: Harness) -> None:
    """DELETE_RAYJOB_CR_AFTER_JOB_FINISHES (J16): shutdown deletes the RayJob, not the cluster."""
    world = harness.world
    world.options = JobOperatorOptions(delete_rayjob_cr_after_job_finishes=True)
    world.spec = job_spec(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=100)
    await harness.start()
    await harness.ready_and_running()
    await harness.finish()
    await harness.state("Complete")
    await harness.env.sleep(timedelta(seconds=50))
    assert not world.deleted_self and world.live_clusters()
    await harness.env.sleep(timedelta(seconds=60))
    await eventually(lambda: world.deleted_self, message="RayJob deleted after the TTL")
    assert harness.handle is not None
    assert "is gone" in await harness.handle.result()
    # The cluster and the submitter went with the RayJob (cascade), not by a cluster delete.
    assert "DeletedRayCluster" not in world.reasons()
    assert not world.exists and not world.clusters and world.submitter is None


async def test_a_shortened_status_check_timeout_fails_the_job_sooner(harness: Harness) -> None:
    """RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS=30 (J13): 30 s of an unreachable dashboard fail it."""
    world = harness.world
    world.options = JobOperatorOptions(status_check_timeout_seconds=30)
    await harness.start()
    await harness.ready_and_running()
    world.dashboard_up = False
    await harness.owned_changed()
    await eventually(
        lambda: world.status is not None and world.status.job_status_check_failure_start_time,
        message="the failure clock started",
    )
    await harness.env.sleep(timedelta(seconds=20))
    assert world.state == "Running"
    await harness.env.sleep(timedelta(seconds=15))
    await harness.state("Failed")
    status = world.status
    assert status is not None and status.reason == "JobStatusCheckTimeoutExceeded"
    assert status.message and "exceeded timeout of 30s" in status.message
    since, end = status.job_status_check_failure_start_time, status.end_time
    assert since is not None and end is not None
    assert timedelta(seconds=30) <= end - since < timedelta(seconds=40)
    await harness.env.sleep(TICK)
    assert len(world.created_clusters) == 1  # not retried


async def test_cr_deleted_mid_run_stops_the_job(harness: Harness) -> None:
    world = harness.world
    await harness.start()
    job_id = await harness.ready_and_running()
    world.deleting = True
    await harness.signal(messages.DELETED, messages.Deleted(gone=False))
    assert harness.handle is not None
    assert "is gone" in await harness.handle.result()
    assert world.stopped == [job_id] and not world.finalizers


async def test_http_resubmits_when_ray_lost_the_job(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode")
    await harness.start()
    job_id = await harness.ready_and_running()
    await harness.env.sleep(TICK)
    world.ray_jobs.clear()  # the head restarted without GCS fault tolerance
    await harness.env.sleep(TICK)
    await eventually(lambda: world.submissions == [job_id, job_id], message="a re-submission")
    assert world.state == "Running"


async def test_http_submission_refused_is_retried_within_seconds(harness: Harness) -> None:
    """Regression: a dashboard that refused the first submission (Ready head, dashboard not
    listening yet) was asked again only at the 5-minute resync."""
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode")
    world.dashboard_up = False
    await harness.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    world.make_ready()
    await harness.owned_changed()
    await eventually(lambda: world.refused, message="a refused submission")
    world.dashboard_up = True
    started = await harness.env.get_current_time()
    await harness.env.sleep(timedelta(seconds=10))
    assert world.submissions == [world.status.job_id if world.status else ""]
    assert await harness.env.get_current_time() - started < timedelta(minutes=1)


async def test_continue_as_new_keeps_deadlines(harness: Harness) -> None:
    world = harness.world
    world.spec = job_spec(activeDeadlineSeconds=600)
    handle = await harness.start(max_history_events=60)
    await harness.ready_and_running()
    for _ in range(6):
        await harness.env.sleep(TICK)
    described = await handle.describe()
    assert described.run_id != handle.first_execution_run_id
    await harness.env.sleep(timedelta(seconds=600))
    await harness.state("Failed")
    assert world.status is not None and world.status.reason == "DeadlineExceeded"
    assert world.status.start_time and world.status.end_time
    elapsed = world.status.end_time - world.status.start_time
    assert timedelta(seconds=600) <= elapsed < timedelta(seconds=700)


async def test_submitted_exactly_once_across_a_worker_restart(
    local_env: WorkflowEnvironment, task_queue: str
) -> None:
    """A new worker replays the history and carries on: Ray sees one submission.

    On the real dev server, not the time-skipping one: a stopped worker leaves its long polls
    (and its sticky queue) behind on the Java test server, which hands the next activity or
    workflow task to that dead poll and refuses to skip time while the task sits scheduled,
    so `env.sleep` hangs in real time until its RPC times out (30 s). The dev server drops a
    stopped worker's polls at once, and nothing here needs time skipped: the signal of the
    finished job wakes the workflow.
    """
    harness = Harness(local_env, task_queue)
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode")
    async with harness.worker():
        await harness.start()
        await harness.ready_and_running()
        await eventually(lambda: world.submissions, message="a submission")
    async with harness.worker():
        await harness.finish()
        await harness.state("Complete", within=30)
        assert harness.handle is not None
        await harness.handle.terminate("test finished")
    assert len(world.submissions) == 1


async def test_a_submitter_finished_before_its_signal_is_checked_with_ray_first(
    harness: Harness,
) -> None:
    """A pass the poll timer starts may read a finished submitter before the bridge's signal.

    Ray's last answer is then "not found" from before the submission; deciding on it would
    fail a job that succeeded ("Submitter completed but Ray job not found"). Found by the
    e2e on devcluster's Ray simulator, whose jobs finish within one poll gap.
    """
    world = harness.world
    await harness.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    assert world.status is not None and world.status.job_id
    job_id = world.status.job_id
    # Held back: the fake submitter's `ray job submit` skips a known id, and Ray answers
    # "not found" for it until the test puts the record in.
    world.ray_jobs[job_id] = None  # type: ignore[assignment]
    world.make_ready()
    await harness.owned_changed()

    async def asked_in_vain() -> bool:
        return any("to be submitted" in w for w in (await harness.progress()).waiting_for)

    await eventually(asked_in_vain, message="Ray asked before the submission")
    # The submitter submits, the job succeeds and the submitter ends; no signal yet.
    world.ray_jobs[job_id] = RayRecord()
    world.submissions.append(job_id)
    world.finish(JobStatus.SUCCEEDED, await harness.env.get_current_time())
    await harness.env.sleep(TICK)
    await harness.state("Complete")
    assert world.status is not None and world.status.job_status == JobStatus.SUCCEEDED


async def test_nudges_while_the_cluster_provisions_share_one_timer(harness: Harness) -> None:
    """Each pass's wait kept a timer of its own (started, then cancelled by the next nudge)."""
    world = harness.world
    await harness.start()
    await eventually(lambda: world.live_clusters(), message="a RayCluster")
    for _ in range(3):  # the cluster's status changes while it provisions: a pass each
        await harness.pass_after(harness.owned_changed)
    assert await harness.events("timer_started_event_attributes") == 1


async def test_a_burst_of_changes_asks_ray_once_and_its_news_always(harness: Harness) -> None:
    """A change of the cluster or its pods moments after Ray answered asks nothing more (each
    was a question to the dashboard: 4.4 a job where KubeRay asks 3.0); the worker's watch
    saying Ray's answer changed always asks, and so does a change once `POLL_GAP` has passed."""
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode")
    await harness.start()
    await harness.ready_and_running()
    await eventually(lambda: world.submissions and world.asks >= 2, message="the first answer")

    async def asks_after(nudge: Callable[[], Awaitable[None]]) -> int:
        """The questions to Ray the nudged pass asked."""
        asked = world.asks
        await harness.pass_after(nudge)
        return world.asks - asked

    assert await asks_after(harness.owned_changed) == 0  # the cluster's status, moments later
    assert await asks_after(harness.ray_news) == 1
    await harness.env.sleep(timedelta(seconds=3.5))
    assert await asks_after(harness.owned_changed) == 1


async def test_ray_is_first_asked_about_a_submitted_job_a_requeue_later(harness: Harness) -> None:
    """Asked at once, Ray said PENDING: a question and a status write for that alone. KubeRay
    asks at its next reconcile (its 3 s requeue), or at the watch's news, which ours heeds."""
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode")
    await harness.start()
    await harness.ready_and_running()

    await eventually(lambda: world.submissions, message="the job submitted")
    asked = world.asks

    async def submitted_and_settled() -> bool:
        waiting = (await harness.progress()).waiting_for
        return world.asks > asked or any("first status" in w for w in waiting)

    await eventually(submitted_and_settled, message="the submission's pass done")
    assert world.asks == asked
    await harness.env.sleep(timedelta(seconds=3.5))
    await eventually(lambda: world.asks == asked + 1, message="the first answer")


async def test_a_pass_reads_the_cluster_as_new_as_the_newest_cluster_news(
    harness: Harness,
) -> None:
    """The worker's copy of RayClusters must not hide the change that woke the workflow."""
    world = harness.world
    await harness.start()
    await harness.state("Initializing")
    change = messages.OwnedChanged(kinds=["RayCluster"], versions={"RayCluster": 12})
    await harness.signal(messages.OWNED_CHANGED, change)
    await eventually(lambda: world.clusters_read_as_of[-1] == 12, message="a pass as of 12")
    reads = len(world.clusters_read_as_of)
    older = messages.OwnedChanged(kinds=["RayCluster"], versions={"RayCluster": 5})
    await harness.signal(messages.OWNED_CHANGED, older)  # arriving later, it lowers nothing
    await eventually(lambda: len(world.clusters_read_as_of) > reads, message="another pass")
    assert set(world.clusters_read_as_of[reads:]) == {12}
    assert world.clusters_read_as_of[0] == 0


async def test_a_pass_reads_the_rayjob_as_new_as_its_own_writes_and_the_news(
    harness: Harness,
) -> None:
    """The worker's copy of RayJobs must not hide the workflow's own last write (its first
    pass adds the finalizer, then reads again) nor the change a signal brought."""
    world = harness.world
    await harness.start()
    await eventually(lambda: len(world.read_as_of) >= 2, message="the second pass")
    assert world.read_as_of[0] == 0  # nothing written or heard yet: the read goes live
    assert world.read_as_of[1] >= 101  # after the finalizer's write
    await harness.signal(messages.SPEC_CHANGED, messages.SpecChanged(generation=1, version=10**6))
    await eventually(lambda: world.read_as_of[-1] == 10**6, message="a pass as of the news")


async def test_reads_and_deletions_wait_for_the_copy_to_have_seen_the_created_cluster(
    harness: Harness,
) -> None:
    """A copy that lacks the cluster says it is gone only once it has seen the cluster made."""
    world = harness.world
    world.spec = job_spec(submissionMode="HTTPMode", shutdownAfterJobFinishes=True)
    await harness.start()
    await eventually(lambda: world.created_clusters, message="the cluster created")
    reads = len(world.clusters_read_as_of)
    await harness.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["RayCluster"]))
    await eventually(lambda: len(world.clusters_read_as_of) > reads, message="a pass")
    assert world.clusters_read_as_of[-1] == CREATED_VERSION
    await harness.ready_and_running()
    await harness.env.sleep(TICK)
    await harness.finish()
    await harness.state("Complete")
    await eventually(lambda: world.deletes_as_of, message="the attempt deleted")
    assert set(world.deletes_as_of) == {CREATED_VERSION}
