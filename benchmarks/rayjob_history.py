"""Temporal history events and billable actions per RayJob lifecycle.

Runs one HTTPMode RayJob lifecycle (New → Running → Complete → cluster deleted) for a Ray job
of each given duration on the time-skipping test server against the in-memory `FakeJobWorld`,
whose `wait_ray_job` answers as the real, blocking activity would (see `RayLikeWorld`), and
prints, per duration, the history length and the actions counted from the history as
`benchmarks.scale` counts them (`scale_report.count_actions`). The figure that matters: the columns
should not grow with the job's duration.

    python -m benchmarks.rayjob_history            # a 10-second and a 10-hour job
    python -m benchmarks.rayjob_history 60 3600    # other durations, in seconds

The latency from the Ray job's end to `Complete` on the CR is measured on the real local stack
by `tests/e2e/test_rayjob_real.py::test_http_mode_and_end_to_complete_latency` (printed with
`pytest -s`).
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.rayjob import contract
from benchmarks.scale_report import ACTION_COLUMNS, actions, count_actions, event_kind
from crds.enums import JobStatus
from crds.refs import ObjectRef
from tests.eventually import eventually
from tests.time_skipping import start_time_skipping
from tests.workflows.rayjob.fake_world import FakeJobWorld
from tests.workflows.rayjob.test_workflow import job_spec
from worker.running import build_workflow_runner
from workflows import messages
from workflows.rayjob.state import RayJobInput
from workflows.rayjob.workflow import RayJobWorkflow


@dataclass
class RayLikeWorld(FakeJobWorld):
    """`FakeJobWorld` whose wait answers as the real, blocking one would.

    The test server does not move its clock while an activity runs, so a wait cannot block
    for hours here. Each wait instead accounts for the time it would have blocked: it returns
    at once on a change; otherwise it consumes the job's remaining duration up to its bound
    (or the workflow's next deadline) and returns what the real wait returns at that moment:
    the job's end when it falls inside, else an unchanged view.
    """

    job_seconds: float = 0.0
    elapsed: float = 0.0
    waits: int = 0

    @activity.defn(name=contract.WAIT_RAY_JOB.name)
    async def wait(self, params: contract.WaitRayJobInput) -> contract.RayJobView:
        self.waits += 1
        view = await FakeJobWorld.wait(self, params)  # heartbeats, reads the job table
        if not view.same_as(params.known) or not view.found or view.status.is_terminal:
            return view
        now = activity.info().current_attempt_scheduled_time
        span = float(params.max_wait_seconds)
        if params.return_by is not None:
            span = min(span, (params.return_by - now).total_seconds())
        self.elapsed += max(0.0, min(span, self.job_seconds - self.elapsed))
        if self.elapsed < self.job_seconds:
            return view  # the bound came first
        self.finish(JobStatus.SUCCEEDED, now + timedelta(seconds=span))
        return await FakeJobWorld.wait(self, params)


async def lifecycle(env: WorkflowEnvironment, seconds: float) -> Counter[str]:
    """One RayJob whose Ray job runs `seconds`; the counts over every run of its workflow."""
    queue = f"bench-{uuid.uuid4()}"
    world = RayLikeWorld(
        "bench",
        job_spec(submissionMode="HTTPMode", shutdownAfterJobFinishes=True),
        job_seconds=seconds,
    )
    ref = ObjectRef(kind="RayJob", namespace="default", name="bench", uid=str(uuid.uuid4()))
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[RayJobWorkflow],
        activities=world.activities(),
        workflow_runner=build_workflow_runner(),
    ):
        handle: WorkflowHandle[RayJobWorkflow, str] = await env.client.start_workflow(
            RayJobWorkflow.run,
            RayJobInput(ref=ref, patches=messages.COVERING_PATCHES["RayJob"]),  # as the bridge
            id=ref.workflow_id,
            task_queue=queue,
        )
        nudge = messages.OwnedChanged(kinds=["RayCluster"])
        await eventually(lambda: world.live_clusters(), message="a RayCluster")
        world.make_ready()
        await handle.signal(messages.OWNED_CHANGED, nudge)
        await eventually(lambda: world.state == "Running", message="Running")
        # In HTTPMode nothing in Kubernetes changes when the Ray job ends: the wait sees it.
        # The clock moves only by request; between waits the workflow sleeps on poll timers.
        await eventually(lambda: skip_until(env, world, "Complete"), within=60, message="Complete")
        await eventually(lambda: not world.live_clusters(), message="cluster deleted")
        counts = await count_history(env, handle)
        counts["waits"] = world.waits
        await handle.terminate("benchmark done")
    return counts


async def skip_until(env: WorkflowEnvironment, world: RayLikeWorld, state: str) -> bool:
    """Let the workflow's timers fire; whether the RayJob reached `state`."""
    if world.state != state:
        await env.sleep(timedelta(seconds=30))
    return world.state == state


async def count_history(
    env: WorkflowEnvironment, handle: WorkflowHandle[RayJobWorkflow, str]
) -> Counter[str]:
    """Events and actions over the chain of runs (continue-as-new included)."""
    counts: Counter[str] = Counter()
    run_id: str | None = handle.first_execution_run_id
    while run_id:
        run = env.client.get_workflow_handle(handle.id, run_id=run_id)
        run_id = None
        events = []
        async for event in run.fetch_history_events():
            marker = event.marker_recorded_event_attributes.marker_name
            events.append((event_kind(event.WhichOneof("attributes") or "", marker), 0))
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                run_id = (
                    event.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                )
        counts.update(count_actions(events))
    return counts


async def main(durations: list[float]) -> None:
    env = await start_time_skipping()
    try:
        columns = ["events", "actions", *ACTION_COLUMNS, "waits"]
        print(f"{'Ray job duration':>18} " + " ".join(f"{c:>10}" for c in columns))
        for seconds in durations:
            counts = await lifecycle(env, seconds)
            counts["actions"] = actions(counts)
            shown = " ".join(f"{counts[c]:>10}" for c in columns)
            print(f"{timedelta(seconds=seconds)!s:>18} {shown}", flush=True)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main([float(a) for a in sys.argv[1:]] or [10.0, 36_000.0]))
