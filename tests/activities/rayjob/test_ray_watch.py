"""The worker's watch of running Ray jobs: which RayJobs it asks about, and when it nudges.

The RayJobs and their clusters live in devcluster and reach the watch through the worker's own
copies (`activities.registry.watching`); the dashboard is scripted as in `test_ray_effects`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from temporalio.testing import ActivityEnvironment

from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.errors import KubeUnavailable
from activities.rayjob.contract import RayJobView
from activities.rayjob.ray_answers import INTERVAL, RayAnswers
from activities.rayjob.ray_effects import RayJobActivities
from activities.rayjob.ray_watch import RayJobWatch, RunningJob, running_job
from activities.registry import Copies, watching
from crds.enums import JobStatus
from crds.raycluster import RayCluster
from crds.refs import ObjectRef
from runtime.settings import Settings
from tests.activities.counting import Calls
from tests.activities.rayjob.test_ray_effects import (
    Dashboard,
    answer,
    ask_input,
    cluster_of,
    job,
    make_rayjob,
    refused,
)
from tests.eventually import eventually
from worker.running import configured_activities, dashboards


def stored(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": "j", "uid": "u-1", **meta},
        "status": {
            "jobDeploymentStatus": "Running",
            "jobId": "job-x-1",
            "rayClusterName": "j-c",
            **status,
        },
    }


# --- which RayJobs --------------------------------------------------------------------------


def test_a_running_job_is_watched_with_what_its_status_says_of_ray() -> None:
    watched = running_job(stored({"jobStatus": "RUNNING"}))
    assert watched is not None
    assert watched.ref == ObjectRef(kind="RayJob", namespace="default", name="j", uid="u-1")
    assert (watched.cluster_name, watched.job_id) == ("j-c", "job-x-1")
    assert watched.seen == RayJobView(found=True, status=JobStatus.RUNNING)


def test_a_job_ray_has_not_answered_for_is_seen_as_not_found_and_an_outage_as_unreachable() -> None:
    fresh = running_job(stored({}))
    assert fresh is not None and fresh.seen == RayJobView(found=False)
    failing = running_job(
        stored({"jobStatus": "RUNNING", "jobStatusCheckFailureStartTime": "2026-12-07T00:00:00Z"})
    )
    assert failing is not None and not failing.seen.reachable


def test_a_status_ray_does_not_know_counts_as_pending() -> None:
    watched = running_job(stored({"jobStatus": "NEWER_THAN_US"}))
    assert watched is not None and watched.seen.status == JobStatus.PENDING


@pytest.mark.parametrize(
    "obj",
    [
        stored({"jobDeploymentStatus": "Initializing"}),
        stored({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}),
        stored({"jobStatus": "SUCCEEDED"}),  # Ray is done; the submitter may not be
        stored({"jobId": ""}),
        stored({"rayClusterName": None}),
        stored({"jobId": ["not", "a", "name"]}),
        stored({"jobStatus": "RUNNING"}, deletionTimestamp="2026-12-07T00:00:00Z"),
        {"metadata": {"namespace": "default", "name": "j", "uid": "u-1"}},
    ],
    ids=["starting", "complete", "ray-done", "no-job-id", "no-cluster", "odd", "deleting", "new"],
)
def test_nothing_to_ask_ray_about(obj: dict[str, Any]) -> None:
    assert running_job(obj) is None


# --- rounds ---------------------------------------------------------------------------------


class Nudges:
    """The watch's nudges; fails the first `failing` of them."""

    def __init__(self, failing: int = 0) -> None:
        self.refs: list[ObjectRef] = []
        self.failing = failing

    async def __call__(self, ref: ObjectRef) -> None:
        if self.failing:
            self.failing -= 1
            raise RuntimeError("the frontend is away")
        self.refs.append(ref)


async def running_rayjob(client: KubeClient, job_status: str = "RUNNING") -> ObjectRef:
    """A RayJob whose status says Running on its cluster, as its workflow writes it."""
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    status = {
        "jobDeploymentStatus": "Running",
        "jobId": "job-x-1",
        "rayClusterName": cluster_of(ref),
        "jobStatus": job_status,
    }
    await client.patch(kube.RAYJOBS, ref.namespace, ref.name, {"status": status}, sub="status")
    return ref


@asynccontextmanager
async def watch_of(
    client: KubeClient, dashboard: Dashboard, nudges: Nudges
) -> AsyncIterator[tuple[RayJobWatch, Copies]]:
    async with watching(client) as copies:
        assert copies is not None
        connector = DashboardConnector(
            client, DashboardAccess.PROXY, httpx.MockTransport(dashboard), copies.services
        )
        watch = RayJobWatch(connector, copies.rayjobs, copies.clusters, nudges)
        async with connector.pooled():
            yield watch, copies


async def in_the_copy(copies: Copies, ref: ObjectRef) -> None:
    async def seen() -> bool:
        watched = copies.rayjobs.summaries()
        return any(isinstance(job, RunningJob) and job.ref == ref for job in watched) and bool(
            copies.services.labelled(ref.namespace, cluster_of(ref))
        )

    await eventually(seen, message="the running RayJob and its head Service in the copies")


async def test_a_job_that_ends_nudges_its_workflow_once(client: KubeClient) -> None:
    ref = await running_rayjob(client)
    path = "GET /api/jobs/job-x-1"
    dashboard = Dashboard(**{path: [answer(200, job("RUNNING")), answer(200, job("SUCCEEDED"))]})
    nudges = Nudges()
    async with watch_of(client, dashboard, nudges) as (watch, copies):
        await in_the_copy(copies, ref)
        assert await watch.round() == 0  # Ray says what the status says
        assert await watch.round() == 1  # Ray says the job ended
        assert await watch.round() == 0  # and has said so already
    assert nudges.refs == [ref]
    assert dashboard.calls("GET") == 3


async def test_a_first_answer_and_an_outage_are_news(client: KubeClient) -> None:
    ref = await running_rayjob(client, job_status="")
    path = "GET /api/jobs/job-x-1"
    dashboard = Dashboard(**{path: [answer(200, job("PENDING")), refused]})
    nudges = Nudges()
    async with watch_of(client, dashboard, nudges) as (watch, copies):
        await in_the_copy(copies, ref)
        assert await watch.round() == 1  # the status has no answer from Ray yet
        assert await watch.round() == 1  # the dashboard stopped answering
        assert await watch.round() == 0
    assert nudges.refs == [ref, ref]


async def test_a_nudge_that_failed_is_sent_again_next_round(client: KubeClient) -> None:
    ref = await running_rayjob(client)
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("SUCCEEDED"))]})
    nudges = Nudges(failing=1)
    async with watch_of(client, dashboard, nudges) as (watch, copies):
        await in_the_copy(copies, ref)
        assert await watch.round() == 0
        assert await watch.round() == 1
    assert nudges.refs == [ref]


async def test_rounds_read_nothing_from_the_api_server(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every running job every 3 s: the RayJob, its cluster and head Service come from the
    worker's copies, so the only requests are the dashboard calls themselves."""
    ref = await running_rayjob(client)
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("RUNNING"))]})
    nudges = Nudges()
    async with watch_of(client, dashboard, nudges) as (watch, copies):
        await in_the_copy(copies, ref)
        await eventually(lambda: copies.clusters.get(ref.namespace, cluster_of(ref)) is not None)
        gets, lists = (
            Calls(client, "get_or_none", monkeypatch),
            Calls(client, "list_all", monkeypatch),
        )
        for _ in range(3):
            assert await watch.round() == 0
        assert (gets.resources, lists.resources) == ([], [])
    assert dashboard.calls("GET") == 3


async def test_a_job_whose_cluster_the_copy_lacks_is_left_to_its_workflow(
    client: KubeClient,
) -> None:
    ref = await running_rayjob(client)
    status = {"rayClusterName": "nowhere"}
    await client.patch(kube.RAYJOBS, ref.namespace, ref.name, {"status": status}, sub="status")
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("SUCCEEDED"))]})
    nudges = Nudges()
    async with watch_of(client, dashboard, nudges) as (watch, copies):

        async def renamed() -> bool:
            watched = copies.rayjobs.summaries()
            return any(
                isinstance(job, RunningJob) and job.cluster_name == "nowhere" for job in watched
            )

        await eventually(renamed, message="the RayJob naming no cluster in the copy")
        assert await watch.round() == 0
    assert dashboard.requests == [] and nudges.refs == []


async def test_one_job_that_cannot_be_asked_about_spoils_no_other(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = await running_rayjob(client), await running_rayjob(client)
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("SUCCEEDED"))]})
    nudges = Nudges()
    async with watch_of(client, dashboard, nudges) as (watch, copies):
        await in_the_copy(copies, good)
        await in_the_copy(copies, bad)
        connector = watch._connector
        real = connector.open

        def opening(cluster: RayCluster) -> Any:
            if cluster.name == cluster_of(bad):
                raise KubeUnavailable("GET secrets: connection reset")
            return real(cluster)

        monkeypatch.setattr(connector, "open", opening)
        assert await watch.round() == 1
    assert nudges.refs == [good]


async def test_the_activities_and_the_watch_share_one_road_to_dashboards(
    client: KubeClient,
) -> None:
    """One HTTP pool and one cache of Ray tokens for the worker (`worker.running.dashboards`):
    a token the watch read serves the next submission, and connections are kept for both."""
    settings = Settings()
    async with watching(client) as copies, dashboards(client, settings, copies) as connector:
        assert connector is not None and copies is not None
        activities = configured_activities(client, settings, None, copies, connector)
        holders = [getattr(fn, "__self__", None) for fn in activities]
        roads = {id(holder._connector) for holder in holders if hasattr(holder, "_connector")}
        assert roads == {id(connector)}
        assert len([h for h in holders if hasattr(h, "_connector")]) > 2  # RayJob and Serve
        assert connector._pool is not None  # kept for as long as the worker runs
    assert connector._pool is None


async def test_the_ask_after_the_watchs_news_takes_the_watchs_answer(client: KubeClient) -> None:
    """The watch's nudge made the workflow ask Ray what the watch had just heard: a second
    call per change. A found answer younger than a round serves the ask; an older one, and a
    "not found" (it may be from before the submission), are asked again."""
    ref = await running_rayjob(client)
    path = "GET /api/jobs/job-x-1"
    dashboard = Dashboard(**{path: [answer(200, job("SUCCEEDED")), answer(200, job("SUCCEEDED"))]})
    now = [100.0]
    answers = RayAnswers(clock=lambda: now[0])
    nudges = Nudges()
    async with watching(client) as copies:
        assert copies is not None
        transport = httpx.MockTransport(dashboard)
        connector = DashboardConnector(client, DashboardAccess.PROXY, transport, copies.services)
        watch = RayJobWatch(connector, copies.rayjobs, copies.clusters, nudges, answers)
        asking = RayJobActivities(client, connector, copies.rayjobs, copies.clusters, answers)
        async with connector.pooled():
            await in_the_copy(copies, ref)
            assert await watch.round() == 1  # Ray says the job ended
            now[0] += INTERVAL - 0.1
            taken = await ActivityEnvironment().run(asking.ask, ask_input(ref))
            assert taken.status == JobStatus.SUCCEEDED and dashboard.calls("GET") == 1
            now[0] += 0.2
            asked = await ActivityEnvironment().run(asking.ask, ask_input(ref))
            assert asked.status == JobStatus.SUCCEEDED and dashboard.calls("GET") == 2
    asked = (ref.uid, cluster_of(ref), "job-x-1")
    answers.keep(asked, view(JobStatus.RUNNING))
    # Only an answer from the cluster the workflow asks: the status the watch read may name
    # another (anyone allowed to write the status could).
    assert answers.fresh((ref.uid, "another-cluster", "job-x-1")) is None
    assert answers.fresh(asked) == view(JobStatus.RUNNING)
    answers.keep(asked, RayJobView(found=False))
    assert answers.fresh(asked) is None


def view(status: JobStatus) -> RayJobView:
    return RayJobView(found=True, status=status)
