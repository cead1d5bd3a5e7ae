"""Build the worker from the registries and the settings, and run it until told to stop.

Both the `worker` command and `kuberay-temporal dev` run the same worker; building it in
one place keeps the workflow runner and the shutdown behaviour identical.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.dashboard.access import DashboardConnector
from activities.kube.client import KubeClient
from activities.kuberay_metrics import KubeRayMetrics
from activities.rayjob.ray_watch import RayJobWatch
from activities.registry import Copies, build_activities, dashboard_connector
from crds.refs import ObjectRef
from runtime.settings import Settings
from workflows import messages
from workflows.registry import WORKFLOWS

# Modules that are deterministic and side-effect free, so the tests' sandbox may share
# them with the host instead of re-importing them for every workflow run: pydantic (slow to
# import, and its model classes must be the host's for the data converter) and our CRD
# models.
_PASSTHROUGH_MODULES = (
    "pydantic",
    "crds",
    "activities.raycluster.contract",
    "activities.kube.vocabulary",
    "activities.contract",
)

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

logger = logging.getLogger(__name__)


def build_workflow_runner() -> WorkflowRunner:
    """The worker's workflow runner: no sandbox at run time.

    The sandbox guards a workflow's determinism by running it in a restricted copy of its
    modules; that guard costs on every activation (each payload asks the sandboxed instance for
    its serialization context through `exec`): 22% of the worker's CPU with 200 RayClusters
    (11.2 against 8.7 CPU s; all ready 17.7 against 14.6 s). Our workflow modules hold no state
    of their own (constants and classes), so runs share nothing through them. The guard stays
    where code changes: the workflow tests and the history recorder run every workflow in
    `strict_sandbox_runner`, so a `datetime.now()` or an I/O call in a workflow fails a test,
    and the recorded histories replay under both runners.
    """
    return UnsandboxedWorkflowRunner()


def strict_sandbox_runner() -> SandboxedWorkflowRunner:
    """The sandbox as it is by default: each run re-imports the workflow modules.

    Their own calls of `datetime.now`, `random` and the like then fail the run.
    """
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*_PASSTHROUGH_MODULES)
    )


def configured_activities(
    kube: KubeClient | None,
    settings: Settings,
    metrics: KubeRayMetrics | None,
    copies: Copies | None,
    connector: DashboardConnector | None = None,
) -> list[Callable[..., Any]]:
    """The activities `settings` describe.

    They read pods and Services from `copies` and call dashboards through `connector` (None:
    a connector of their own).
    """
    return build_activities(
        kube,
        settings.build_options(),
        dashboard_access=settings.dashboard_access,
        metrics=metrics,
        job_options=settings.job_options(),
        copies=copies,
        connector=connector,
    )


def build_worker(
    client: Client, settings: Settings, activities: Sequence[Callable[..., Any]] = ()
) -> Worker:
    """Return a worker for every registered workflow and activity.

    Args:
        client: Connected client, with the pydantic data converter.
        settings: Task queue, cache size, capacity and graceful shutdown timeout.
        activities: The activity callables (see `activities.registry.build_activities`).

    Returns:
        A worker that has not been started; run it with `async with worker:`.
    """
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=WORKFLOWS,
        activities=list(activities),
        workflow_runner=build_workflow_runner(),
        max_cached_workflows=settings.max_cached_workflows,
        max_concurrent_workflow_tasks=settings.max_concurrent_workflow_tasks,
        max_concurrent_activities=settings.max_concurrent_activities,
        max_concurrent_local_activities=settings.max_concurrent_local_activities,
        max_concurrent_workflow_task_polls=settings.max_concurrent_workflow_task_polls,
        max_concurrent_activity_task_polls=settings.max_concurrent_activity_task_polls,
        graceful_shutdown_timeout=settings.graceful_shutdown_timeout,
    )


RAY_JOB_NEWS = messages.OwnedChanged(kinds=[messages.RAY_JOB_KIND])
"""What the watch of running Ray jobs signals: Ray's answer about the job changed."""


@asynccontextmanager
async def dashboards(
    kube: KubeClient | None, settings: Settings, copies: Copies | None
) -> AsyncIterator[DashboardConnector | None]:
    """The worker's one road to dashboards, with one HTTP pool, while it runs.

    The activities and the watch of running Ray jobs share it: their calls reuse the same
    connections and a Ray token read for one serves the other. None without the Kubernetes
    API (no activity calls a dashboard then).
    """
    if kube is None:
        yield None
        return
    connector = dashboard_connector(kube, settings.dashboard_access, copies)
    async with connector.pooled():
        yield connector


@asynccontextmanager
async def watching_ray_jobs(
    client: Client, connector: DashboardConnector | None, copies: Copies | None
) -> AsyncIterator[RayJobWatch | None]:
    """The worker's watch of running Ray jobs (`activities.rayjob.ray_watch`), while it runs.

    None without a road to dashboards or the worker's copies: workflows then ask Ray on their
    own timers only.
    """
    if connector is None or copies is None:
        yield None
        return

    async def nudge(ref: ObjectRef) -> None:
        try:
            await client.get_workflow_handle(ref.workflow_id).signal(
                messages.OWNED_CHANGED, RAY_JOB_NEWS
            )
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            # The CR's workflow has ended: its status is stale, and nobody waits on the job.

    watch = RayJobWatch(connector, copies.rayjobs, copies.clusters, nudge, copies.answers)
    task = asyncio.create_task(watch.run(), name="watch of running Ray jobs")
    try:
        yield watch
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@contextmanager
def stop_on_signals() -> Iterator[asyncio.Event]:
    """Yield an event that the first SIGINT or SIGTERM sets.

    The handlers stay installed for the whole block, so a second Ctrl-C during a graceful
    shutdown is reported instead of raising KeyboardInterrupt half-way through it. Must
    be used inside a running event loop.

    Yields:
        The event to wait on.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def request_stop(signum: signal.Signals) -> None:
        if stop.is_set():
            logger.warning("received %s again; still shutting down", signum.name)
        stop.set()

    for signum in _STOP_SIGNALS:
        loop.add_signal_handler(signum, request_stop, signum)
    try:
        yield stop
    finally:
        for signum in _STOP_SIGNALS:
            loop.remove_signal_handler(signum)
