"""Record the canonical workflow histories that the replay test keeps replaying.

    python -m tests.workflows.record_histories [scenario ...]

Each scenario runs a workflow on the time-skipping server against the in-memory cluster of
the workflow tests, to completion, and writes its history under `tests/workflows/histories/`.
Re-record only on purpose: a history that no longer replays means running workflows would
break, and the change needs `workflow.patched()` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import temporalio
from temporalio.client import Client, WorkflowFailureError, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.raycronjob.contract import FiringInput, FiringResult
from activities.raycronjob.schedules import described
from crds.enums import JobStatus
from crds.refs import ObjectRef
from kuberay_temporal.binaries import temporal_cli
from tests.eventually import eventually
from tests.reference import REPO_ROOT
from tests.time_skipping import start_time_skipping
from tests.workflows.raycluster.fake_cluster import FakeCluster
from tests.workflows.raycluster.test_workflow import SPEC
from worker.running import RAY_JOB_NEWS, strict_sandbox_runner
from worker.search_attributes import ALL_KEYS
from workflows import messages
from workflows.raycluster.state import RayClusterInput
from workflows.raycluster.workflow import RayClusterWorkflow
from workflows.raycronjob.firing import RayCronJobFiringWorkflow
from workflows.raycronjob.state import RayCronJobInput
from workflows.raycronjob.workflow import RayCronJobWorkflow
from workflows.rayjob.state import RayJobInput
from workflows.rayjob.workflow import RayJobWorkflow
from workflows.rayservice.state import RayServiceInput
from workflows.rayservice.upgrade_child import RayServiceUpgradeWorkflow
from workflows.rayservice.workflow import RayServiceWorkflow

HISTORIES = Path(__file__).parent / "histories"
Scenario = Callable[[Client], Awaitable[WorkflowHistory]]


async def raycluster_lifecycle(
    client: Client, patches: str | None = None, read_news: bool = False, quiet_resume: bool = False
) -> WorkflowHistory:
    """Create, become ready, scale up and down, suspend, resume, delete.

    With `read_news`, each read reflects pods up to version 7, and once ready the workflow
    hears of a pod change at version 7: news it has read, which wakes no pass. With
    `quiet_resume`, the suspended pods go without a word and the resume comes before the
    workflow has seen them go.
    """
    cluster = FakeCluster("lifecycle", dict(SPEC))
    cluster.pods_seen = 7 if read_news else 0
    queue = f"record-{uuid.uuid4()}"
    ref = ObjectRef(kind="RayCluster", namespace="default", name="lifecycle", uid="uid-1")
    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayClusterWorkflow],
        activities=cluster.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayClusterWorkflow.run,
            RayClusterInput(ref=ref, patches=patches),
            id=ref.workflow_id,
            task_queue=queue,
        )

        async def settle() -> None:
            cluster.finish_terminating()
            cluster.make_ready()
            await handle.signal(messages.OWNED_CHANGED, messages.OwnedChanged(kinds=["Pod"]))

        async def edit(**fields: object) -> None:
            cluster.set_group(0, **fields)
            await handle.signal(
                messages.SPEC_CHANGED, messages.SpecChanged(generation=cluster.generation)
            )

        await eventually(lambda: len(cluster.live()) == 3)
        await settle()
        await eventually(lambda: cluster.status and cluster.status.state == "ready")
        if read_news:
            news = messages.OwnedChanged(kinds=["Pod"], versions={"Pod": 7})
            await handle.signal(messages.OWNED_CHANGED, news)
        await edit(replicas=3)
        await eventually(lambda: len(cluster.live("worker")) == 3)
        await settle()
        await edit(replicas=1)
        await eventually(lambda: len(cluster.live("worker")) == 1)
        await settle()
        await handle.signal(messages.SUSPEND, messages.UserRequest(reason="record"))
        await eventually(lambda: cluster.live() == [])
        if quiet_resume:
            cluster.finish_terminating()
        else:
            await settle()
            await eventually(lambda: cluster.status and cluster.status.state == "suspended")
        await handle.signal(messages.RESUME, messages.UserRequest(reason="record"))
        await eventually(lambda: len(cluster.live()) == 2)
        cluster.exists = False
        await handle.signal(messages.DELETED, messages.Deleted(gone=True))
        await handle.result()
        return await handle.fetch_history()


async def rayjob_lifecycle(client: Client, patches: str | None = None) -> WorkflowHistory:
    """K8sJobMode: first attempt fails and is retried, second succeeds, cleanup, CR deleted."""
    from tests.workflows.rayjob.fake_world import FakeJobWorld
    from tests.workflows.rayjob.test_workflow import job_spec

    world = FakeJobWorld("train", job_spec(backoffLimit=1, shutdownAfterJobFinishes=True))
    queue = f"record-{uuid.uuid4()}"
    ref = ObjectRef(kind="RayJob", namespace="default", name="train", uid="uid-2")
    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayJobWorkflow],
        activities=world.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayJobWorkflow.run,
            RayJobInput(ref=ref, patches=patches),
            id=ref.workflow_id,
            task_queue=queue,
        )
        owned = messages.OwnedChanged(kinds=["RayCluster"])

        async def workflow_in(*states: str) -> bool:
            # Asked of the workflow, not the fake world: a query is answered between workflow
            # tasks, so the next signal never lands in a task still deciding (the world runs
            # ahead of the history, and a task a signal overtakes is refused and run again).
            progress = await handle.query(messages.PROGRESS, result_type=messages.Progress)
            return progress.state in states

        for attempt, outcome in enumerate((JobStatus.FAILED, JobStatus.SUCCEEDED), start=1):
            await eventually(
                lambda a=attempt: (
                    len(world.created_clusters) == a
                    and world.live_clusters() == world.created_clusters[-1:]
                )
            )
            world.make_ready()
            await handle.signal(messages.OWNED_CHANGED, owned)
            await eventually(lambda: world.state == "Running" and world.submitter is not None)
            await eventually(lambda: workflow_in("Running"))
            world.finish(outcome, datetime.now(UTC))  # as the watch of running Ray jobs says
            await handle.signal(messages.OWNED_CHANGED, RAY_JOB_NEWS)
            await eventually(lambda: workflow_in("Retrying", "New", "Initializing", "Complete"))
        await eventually(lambda: world.state == "Complete" and not world.live_clusters())
        await eventually(lambda: workflow_in("Complete"))
        world.deleting = True
        await handle.signal(messages.DELETED, messages.Deleted(gone=False))
        await handle.result()
        return await handle.fetch_history()


async def rayservice_lifecycle(client: Client) -> WorkflowHistory:
    """First deploy, a blue-green upgrade, the old cluster's delayed deletion, CR deletion."""
    from tests.workflows.rayservice.fake_world import FakeServiceWorld
    from tests.workflows.rayservice.test_workflow import SPEC as SERVICE_SPEC

    world = FakeServiceWorld("lifecycle", SERVICE_SPEC)
    queue = f"record-{uuid.uuid4()}"
    ref = ObjectRef(kind="RayService", namespace="default", name="lifecycle", uid="uid-3")
    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayServiceWorkflow, RayServiceUpgradeWorkflow],
        activities=world.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayServiceWorkflow.run, RayServiceInput(ref=ref), id=ref.workflow_id, task_queue=queue
        )
        old = await eventually(
            lambda: world.active() if world.serving() == world.active() else None
        )
        world.edit_cluster(rayVersion="2.50.0")
        await handle.signal(messages.SPEC_CHANGED, messages.SpecChanged(generation=2))
        await eventually(lambda: world.active() not in (None, old))
        world.deleted_at = datetime.now(UTC)
        await handle.signal(messages.DELETED, messages.Deleted(gone=False))
        await handle.result()
        return await handle.fetch_history()


async def raycronjob_lifecycle(client: Client) -> WorkflowHistory:
    """Schedule created, a firing, suspended, resumed (the newest missed ticks made up, the
    older ones skipped with a Warning), invalid, deleted.

    On a dev server: the time-skipping server has no Schedules.
    """
    from tests.workflows.raycronjob.fake_cron import CronWorld

    world = CronWorld()
    queue = f"record-{uuid.uuid4()}"
    ref = ObjectRef(kind="RayCronJob", namespace="default", name="nightly", uid="uid-4")
    schedule = client.get_schedule_handle(ref.workflow_id)

    async def edit(**fields: object) -> None:
        for key, value in fields.items():
            setattr(world, key, value)
        world.generation += 1
        await handle.signal(
            messages.SPEC_CHANGED, messages.SpecChanged(generation=world.generation)
        )

    async def paused(wanted: bool) -> bool:
        found = await described(schedule)  # None: not created yet
        return found is not None and found.schedule.state.paused == wanted

    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayCronJobWorkflow, RayCronJobFiringWorkflow],
        activities=world.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayCronJobWorkflow.run, RayCronJobInput(ref=ref), id=ref.workflow_id, task_queue=queue
        )
        await eventually(lambda: paused(False))
        await schedule.trigger()
        await eventually(lambda: world.fired)
        await edit(suspend=True)
        await eventually(lambda: paused(True))
        world.last_schedule_time = datetime.now(UTC) - timedelta(hours=3)
        await edit(suspend=False)
        await eventually(lambda: paused(False))
        await eventually(lambda: world.events[-1:] == ["SkippedMissedTicks"])
        await edit(wanted=None, violations=["spec.schedule: invalid cron schedule"])
        await eventually(lambda: world.events[-1:] == ["InvalidRayCronJobSpec"])
        world.exists = False
        await handle.signal(messages.DELETED, messages.Deleted(gone=True))
        await handle.result()
        return await handle.fetch_history()


async def raycronjob_firing_refused(client: Client) -> WorkflowHistory:
    """A firing whose RayJob the API server refuses: a Warning on the RayCronJob, given up."""
    from tests.workflows.raycronjob.test_firing import QUOTA, REF, Creation

    creation = Creation([FiringResult(rayjob="cron-29000000", refused=QUOTA)])
    queue = f"record-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=queue,
        workflows=[RayCronJobFiringWorkflow],
        activities=creation.activities(),
        workflow_runner=strict_sandbox_runner(),
    ):
        handle = await client.start_workflow(
            RayCronJobFiringWorkflow.run,
            FiringInput(ref=REF),
            id="raycronjob-firing/ns/cron/u-2026-12-05T01:30:00Z",
            task_queue=queue,
        )
        with contextlib.suppress(WorkflowFailureError):
            await handle.result()
        return await handle.fetch_history()


DEV_SERVER_SCENARIOS = {"raycronjob_lifecycle": raycronjob_lifecycle}
"""Recorded on a dev server, which has Schedules."""

SCENARIOS = {
    "raycluster_lifecycle": raycluster_lifecycle,
    # The same lifecycle once each pass read locally (patch `raycluster-local-read`); the
    # first one keeps the path of workflows started before it.
    "raycluster_lifecycle_local_read": raycluster_lifecycle,
    # And once its writes were local too (`raycluster-local-writes`).
    "raycluster_lifecycle_local_writes": raycluster_lifecycle,
    # And once one marker stood for both (`raycluster-patches-through-local-writes`).
    "raycluster_lifecycle_one_marker": raycluster_lifecycle,
    # And once a wait kept the running resync timer (`raycluster-steady-resync-timer`, under
    # `raycluster-patches-through-steady-timer`).
    "raycluster_lifecycle_steady_timer": raycluster_lifecycle,
    # And once a long run with nothing under way went on in a new run
    # (`raycluster-settled-new-run`, under `raycluster-patches-through-settled-run`).
    "raycluster_lifecycle_settled_run": raycluster_lifecycle,
    # And once started, as the bridge starts it, to follow those patches without a marker.
    "raycluster_lifecycle_input_patches": partial(
        raycluster_lifecycle, patches="raycluster-patches-through-settled-run"
    ),
    # And once a wait replaced a timer that would bring a pass with nothing due
    # (`raycluster-resync-replaces-an-early-timer`).
    "raycluster_lifecycle_early_timer": partial(
        raycluster_lifecycle, patches="raycluster-patches-through-early-timer"
    ),
    # And once the pass creating pods counted them in its status
    # (`raycluster-status-counts-created-pods`).
    "raycluster_lifecycle_created_pods": partial(
        raycluster_lifecycle, patches="raycluster-patches-through-created-pods"
    ),
    # And once news of pods a pass had read woke no pass (no patch: runs before it recorded
    # no read version, so every news counts there).
    "raycluster_lifecycle_read_news": partial(
        raycluster_lifecycle,
        patches="raycluster-patches-through-created-pods",
        read_news=True,
    ),
    # And once a resume that came while the pods terminated finished suspending and started
    # at once (`raycluster-suspend-steps-at-once`).
    "raycluster_lifecycle_suspend_steps": partial(
        raycluster_lifecycle,
        patches=messages.COVERING_PATCHES["RayCluster"],
        read_news=True,
        quiet_resume=True,
    ),
    # Recorded again whenever the RayJob workflow changes (until a first release no run outside
    # the tests exists to keep replaying); once as a test starts it (one patch marker), once as
    # the bridge does (the patches in its input, no marker).
    "rayjob_lifecycle": rayjob_lifecycle,
    "rayjob_lifecycle_input_patches": partial(
        rayjob_lifecycle, patches=messages.COVERING_PATCHES["RayJob"]
    ),
    "rayservice_lifecycle": rayservice_lifecycle,
    "raycronjob_firing_refused": raycronjob_firing_refused,
}


def without_paths(text: str) -> str:
    """A history's JSON without the machine's paths its failures' stack traces name.

    A failure records where in the code it was raised; only the part inside the checkout or
    the installed packages says anything, and the rest is the recording machine's layout.
    """
    for prefix in (str(Path(temporalio.__file__).parents[1]), str(REPO_ROOT)):
        text = text.replace(prefix + "/", "")
    return text


async def main() -> None:
    only = set(sys.argv[1:]) or set(SCENARIOS) | set(DEV_SERVER_SCENARIOS)
    env = await start_time_skipping()
    try:
        await _record(env.client, SCENARIOS, only)
    finally:
        await env.shutdown()
    if only & set(DEV_SERVER_SCENARIOS):
        dev = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_cli()),
            port=None,
            search_attributes=ALL_KEYS,
            data_converter=pydantic_data_converter,
        )
        try:
            await _record(dev.client, DEV_SERVER_SCENARIOS, only)
        finally:
            await dev.shutdown()


async def _record(client: Client, scenarios: dict[str, Scenario], only: set[str]) -> None:
    for name, scenario in scenarios.items():
        if name in only:
            history = await scenario(client)
            (HISTORIES / f"{name}.json").write_text(without_paths(history.to_json()))
            print(f"recorded {name}: {len(history.events)} events")


if __name__ == "__main__":
    asyncio.run(main())
