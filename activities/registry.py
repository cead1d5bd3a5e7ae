"""Every activity the worker registers, bound to the clients it needs.

Activities that talk to an external system are methods of a class built with its client
(so tests can inject fakes); this function builds those objects and returns their bound methods, so
the worker only has to pass the clients in.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.builders import DEFAULT_OPTIONS, BuildOptions
from activities.builders.names import without_last_applied
from activities.contract import pod_essentials
from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.kube.client import JSON, PODS, RAYCLUSTERS, RAYJOBS, SERVICES, KubeClient
from activities.kube.informer import Informer
from activities.kuberay_metrics import KubeRayMetrics
from activities.raycluster.kube_effects import ClusterActivities
from activities.raycluster.redis_cleanup import ClusterCleanupActivities
from activities.raycronjob.kube_effects import CronJobActivities
from activities.raycronjob.schedules import ScheduleActivities
from activities.rayjob.contract import JobOperatorOptions
from activities.rayjob.kube_effects import JobActivities
from activities.rayjob.ray_answers import RayAnswers
from activities.rayjob.ray_effects import RayJobActivities
from activities.rayjob.ray_watch import running_job
from activities.rayservice.kube_effects import ServiceActivities
from activities.rayservice.ray_effects import HeadLabeler, ServeActivities
from activities.rayservice.routes import RouteActivities
from crds.constants import LABEL_CLUSTER


@dataclass(frozen=True)
class Copies:
    """The worker's watched copies of what passes read.

    Ray pods, Ray clusters' Services, the RayClusters and the RayJobs.
    """

    pods: Informer
    services: Informer
    clusters: Informer
    rayjobs: Informer
    """Summarized by their running Ray jobs (`ray_watch.running_job`)."""
    answers: RayAnswers = field(default_factory=RayAnswers)
    """Ray's answers the watch of running Ray jobs got, which a workflow's ask may take."""


def build_activities(
    kube: KubeClient | None,
    options: BuildOptions = DEFAULT_OPTIONS,
    dashboard_access: str = DashboardAccess.PROXY,
    metrics: KubeRayMetrics | None = None,
    job_options: JobOperatorOptions | None = None,
    copies: Copies | None = None,
    connector: DashboardConnector | None = None,
) -> list[Callable[..., Any]]:
    """Return the activity callables to register on the worker.

    Args:
        kube: The Kubernetes API; None registers no Kubernetes activities (a worker that
            only runs the diagnostic workflow).
        options: Operator-wide switches for the object builders.
        dashboard_access: How RayJob and RayService activities reach a dashboard, `proxy`
            or `direct` (the worker setting `KUBERAY_TEMPORAL_DASHBOARD_ACCESS`).
        metrics: Where the status-writing activities record KubeRay's duration metrics;
            None records nothing (no metrics endpoint).
        job_options: KubeRay's RayJob switches, reported in every RayJob snapshot; None
            means KubeRay's defaults.
        copies: The worker's copies of pods and Services (`watching`); None reads them live.
        connector: How RayJob and RayService activities reach dashboards, shared with the
            watch of running Ray jobs (one HTTP pool, one cache of Ray tokens); None builds
            one from `dashboard_access` and `copies`.

    Returns:
        Functions decorated with `@activity.defn`.
    """
    if kube is None:
        return []
    pods, services, clusters, rayjobs, answers = (
        (copies.pods, copies.services, copies.clusters, copies.rayjobs, copies.answers)
        if copies
        else (None, None, None, None, None)
    )
    if connector is None:
        connector = dashboard_connector(kube, dashboard_access, copies)
    serve = ServeActivities(kube, connector)
    labeler = HeadLabeler(kube, serve)
    return [
        *ClusterActivities(kube, options, metrics, pods, services, clusters).activities(),
        *ClusterCleanupActivities(kube, options).activities(),
        *JobActivities(
            kube, options, metrics, job_options, services, clusters, rayjobs, pods
        ).activities(),
        *RayJobActivities(kube, connector, rayjobs, clusters, answers).activities(),
        # RayService; its Events go through ClusterActivities' `record_event` (same name).
        *ServiceActivities(kube, options).activities(),
        *serve.activities(),
        *labeler.activities(),
        *RouteActivities(kube, labeler, options).activities(),
        *CronJobActivities(kube, options.feature_gates).activities(),
        *ScheduleActivities().activities(),
    ]


def dashboard_connector(
    kube: KubeClient, dashboard_access: str, copies: Copies | None
) -> DashboardConnector:
    """How calls reach dashboards, finding head Services and pods in `copies` (None: live)."""
    services, pods = (copies.services, copies.pods) if copies else (None, None)
    return DashboardConnector(kube, DashboardAccess(dashboard_access), None, services, pods)


def rayjob_essentials(obj: JSON) -> JSON:
    """A RayJob as passes read it: less managedFields and kubectl's last-applied copy.

    That annotation repeats the whole manifest, pod templates and all; nothing a RayJob makes
    copies it. A RayCluster's copy keeps it: KubeRay copies it onto the head Ingress.
    """
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    if "annotations" in meta:
        meta["annotations"] = without_last_applied(meta["annotations"])
    return {**obj, "metadata": meta}


@contextlib.asynccontextmanager
async def watching(
    kube: KubeClient | None, namespaces: Sequence[str | None] = (None,)
) -> AsyncIterator[Copies | None]:
    """Copies of what is labelled with a cluster in `namespaces` (None: all), while it runs."""
    if kube is None:
        yield None
        return
    copies = Copies(
        pods=Informer(kube, PODS, LABEL_CLUSTER, namespaces=namespaces, keep=pod_essentials),
        services=Informer(kube, SERVICES, LABEL_CLUSTER, namespaces=namespaces),
        # Every RayCluster and RayJob (no label selects them all), indexed by a label
        # nobody reads.
        clusters=Informer(kube, RAYCLUSTERS, LABEL_CLUSTER, "", namespaces=namespaces),
        rayjobs=Informer(
            kube,
            RAYJOBS,
            LABEL_CLUSTER,
            "",
            namespaces=namespaces,
            keep=rayjob_essentials,
            summarize=running_job,
        ),
    )
    tasks = [
        asyncio.create_task(copies.pods.run(), name="pod informer"),
        asyncio.create_task(copies.services.run(), name="service informer"),
        asyncio.create_task(copies.clusters.run(), name="raycluster informer"),
        asyncio.create_task(copies.rayjobs.run(), name="rayjob informer"),
    ]
    try:
        yield copies
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def duration_series(metrics: KubeRayMetrics, copies: Copies | None) -> Callable[[], str]:
    """KubeRay's duration gauges per scrape, less the CRs `copies` saw go (none without)."""
    if copies is None:
        return metrics.collect
    return functools.partial(metrics.collect, copies.clusters, copies.rayjobs)
