"""Temporal history events and billable actions per RayJob lifecycle.

Runs one HTTPMode RayJob lifecycle (New → Running → Complete → cluster deleted) for a Ray job
of each given duration on the time-skipping test server against the in-memory `FakeJobWorld`,
whose job ends once its duration has passed on the server's clock (see `RayLikeWorld`), and
prints, per duration, the events and actions over every run of the workflow, counted from the
histories as `benchmarks.scale` counts them (`scale_report.count_actions`), the longest run's
history and the questions asked of Ray. The figure that matters: the longest run stays bounded
whatever the job's duration (continue-as-new); the totals grow by a question every few minutes
of a job that runs on, since no activity stays open while it does.

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
from datetime import datetime, timedelta

from temporalio import activity
from temporalio.api.history.v1 import HistoryEvent
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
    """`FakeJobWorld` whose Ray job ends `job_seconds` of workflow time after Ray first knew it.

    The test server's clock moves while the workflow sleeps on its timers, which is all a
    running job costs it: no activity stays open, and each question is answered at once.
    """

    job_seconds: float = 0.0
    env: WorkflowEnvironment | None = None
    """Whose clock the job runs by: a local activity is told the machine's time, not it."""
    asks: int = 0
    started: datetime | None = None

    @activity.defn(name=contract.ASK_RAY_JOB.name)
    async def ask(self, params: contract.AskRayJobInput) -> contract.RayJobView:
        self.asks += 1
        assert self.env is not None
        now = await self.env.get_current_time()
        view = await FakeJobWorld.ask(self, params)
        if not view.found or view.status.is_terminal:
            return view
        self.started = self.started or now
        if now < self.started + timedelta(seconds=self.job_seconds):
            return view
        self.finish(JobStatus.SUCCEEDED, self.started + timedelta(seconds=self.job_seconds))
        return await FakeJobWorld.ask(self, params)


async def lifecycle(
    env: WorkflowEnvironment, seconds: float
) -> tuple[Counter[str], list[list[HistoryEvent]]]:
    """One RayJob whose Ray job runs `seconds`: the counts over every run of its workflow, and
    the runs' events."""
    queue = f"bench-{uuid.uuid4()}"
    world = RayLikeWorld(
        "bench",
        job_spec(submissionMode="HTTPMode", shutdownAfterJobFinishes=True),
        job_seconds=seconds,
        env=env,
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
        # In HTTPMode nothing in Kubernetes changes when the Ray job ends: a question to Ray
        # sees it. The clock moves only by request; between questions the workflow sleeps on
        # its poll timers (no watch of running jobs here to nudge it sooner).
        await eventually(lambda: skip_until(env, world, "Complete"), within=300, message="Complete")
        await eventually(lambda: not world.live_clusters(), message="cluster deleted")
        runs = await run_histories(env, handle)
        counts = count_history(runs)
        counts["asks"] = world.asks
        await handle.terminate("benchmark done")
    return counts, runs


async def skip_until(env: WorkflowEnvironment, world: RayLikeWorld, state: str) -> bool:
    """Let the workflow's timers fire; whether the RayJob reached `state`."""
    if world.state != state:
        await env.sleep(timedelta(seconds=300))
    return world.state == state


async def run_histories(
    env: WorkflowEnvironment, handle: WorkflowHandle[RayJobWorkflow, str]
) -> list[list[HistoryEvent]]:
    """The events of each run of the workflow, first to last (continue-as-new followed)."""
    runs: list[list[HistoryEvent]] = []
    run_id: str | None = handle.first_execution_run_id
    while run_id:
        run = env.client.get_workflow_handle(handle.id, run_id=run_id)
        runs.append([event async for event in run.fetch_history_events()])
        run_id = None
        for event in runs[-1]:
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                attributes = event.workflow_execution_continued_as_new_event_attributes
                run_id = attributes.new_execution_run_id
    return runs


def count_history(runs: list[list[HistoryEvent]]) -> Counter[str]:
    """Events and actions over the chain of runs."""
    counts: Counter[str] = Counter()
    for events in runs:
        counts["runs"] += 1
        kinds = [
            (
                event_kind(
                    event.WhichOneof("attributes") or "",
                    event.marker_recorded_event_attributes.marker_name,
                ),
                0,
            )
            for event in events
        ]
        counts.update(count_actions(kinds))
        counts["longest run"] = max(counts["longest run"], len(events))
    return counts


async def main(durations: list[float]) -> None:
    env = await start_time_skipping()
    try:
        columns = ["events", "actions", *ACTION_COLUMNS, "runs", "longest run", "asks"]
        print(f"{'Ray job duration':>18} " + " ".join(f"{c:>10}" for c in columns))
        for seconds in durations:
            counts, _ = await lifecycle(env, seconds)
            counts["actions"] = actions(counts)
            shown = " ".join(f"{counts[c]:>10}" for c in columns)
            print(f"{timedelta(seconds=seconds)!s:>18} {shown}", flush=True)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main([float(a) for a in sys.argv[1:]] or [10.0, 36_000.0]))
