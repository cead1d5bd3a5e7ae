"""The RayJob's Ray activities (submit, wait, stop) with the dashboard behind `httpx.MockTransport`.

The RayJob and its cluster live in devcluster (real API semantics); only the Ray dashboard is
scripted, because the paths under test are Ray's failure answers (refused connections, 500s,
404s, a duplicate submission), which a real head gives only by accident. The happy paths run
against a real head in `tests/e2e/test_rayjob_real.py`.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
from collections.abc import Callable
from typing import Any, cast

import httpx
import pytest

from activities.builders import DEFAULT_OPTIONS
from activities.dashboard.access import DashboardAccess, DashboardConnector
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.informer import Informer
from activities.rayjob import contract
from activities.rayjob.kube_effects import JobActivities
from activities.rayjob.ray_effects import RayJobActivities
from crds.enums import JobStatus
from crds.refs import ObjectRef
from tests.activities.counting import Calls
from tests.activities.head_services import make_alias_service, make_head_service
from tests.activities.kube.test_informer import QuietApi, running
from tests.activities.rayjob.test_kube_effects import CLUSTER_SPEC, run
from tests.activities.rayjob.test_kube_effects import make_rayjob as make_bare_rayjob
from tests.eventually import eventually

DUPLICATE = (
    "Traceback (most recent call last):\n"
    "ValueError: Job with submission_id job-x-1 already exists. Please use a different "
    "submission_id."
)
Answer = Callable[[httpx.Request], httpx.Response]


def job(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "SUBMISSION",
        "job_id": None,
        "submission_id": "job-x-1",
        "status": status,
        "message": f"Job is {status.lower()}",
        "start_time": 1_700_000_000_000,
        "end_time": 1_700_000_060_000 if status in {"SUCCEEDED", "FAILED", "STOPPED"} else None,
        "entrypoint": "python x.py",
        **extra,
    }


class Dashboard:
    """A scripted dashboard: each request takes the next answer of its path (the last repeats)."""

    def __init__(self, **answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = f"{request.method} {request.url.path.split('/proxy', 1)[-1]}"
        script = self.answers.get(key)
        if not script:
            return httpx.Response(404, text="not scripted")
        return script.pop(0)(request) if len(script) > 1 else script[0](request)

    def calls(self, method: str) -> int:
        return sum(r.method == method for r in self.requests)


def answer(status: int, body: Any = None, text: str | None = None) -> Answer:
    def respond(request: httpx.Request) -> httpx.Response:
        if text is not None:
            return httpx.Response(status, text=text)
        return httpx.Response(status, json=body)

    return respond


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


async def make_rayjob(client: KubeClient, **spec: Any) -> ObjectRef:
    """A RayJob with its attempt's RayCluster and that cluster's head Service."""
    ref = await make_bare_rayjob(client, **spec)
    create = contract.CreateClusterInput(
        ref=ref, cluster_name=cluster_of(ref), job_id="x", attempt=1
    )
    await run(JobActivities(client, DEFAULT_OPTIONS).create_cluster, create)
    await make_head_service(client, ref.namespace, cluster_of(ref))
    return ref


def cluster_of(ref: ObjectRef) -> str:
    """The name of the RayCluster `make_rayjob` made for the RayJob."""
    return f"{ref.name}-c"


def activities(client: KubeClient, dashboard: Dashboard) -> RayJobActivities:
    transport = httpx.MockTransport(dashboard)
    return RayJobActivities(client, DashboardConnector(client, DashboardAccess.PROXY, transport))


def ask_input(ref: ObjectRef) -> contract.AskRayJobInput:
    return contract.AskRayJobInput(ref=ref, cluster_name=cluster_of(ref), job_id="job-x-1")


def submit_input(ref: ObjectRef, as_of: int = 0) -> contract.SubmitRayJobInput:
    """A submission; `as_of` 0 (no version known) reads the RayJob from the API server."""
    return contract.SubmitRayJobInput(
        ref=ref, cluster_name=cluster_of(ref), job_id="job-x-1", as_of=as_of
    )


# --- submit -----------------------------------------------------------------------------------


async def test_submit_posts_the_attempts_submission_id(client: KubeClient) -> None:
    ref = await make_rayjob(client, submissionMode="HTTPMode", metadata={"team": "a"})
    dashboard = Dashboard(**{"POST /api/jobs/": [answer(200, {"submission_id": "job-x-1"})]})
    params = submit_input(ref)
    result = await run(activities(client, dashboard).submit, params)
    assert (result.submitted, result.duplicate) == (True, False)
    (request,) = dashboard.requests
    sent = json.loads(request.content)
    assert sent["submission_id"] == "job-x-1" and sent["entrypoint"] == "python x.py"
    assert sent["metadata"] == {"team": "a"}


async def test_a_duplicate_submission_is_success_not_a_second_job(client: KubeClient) -> None:
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    dashboard = Dashboard(**{"POST /api/jobs/": [answer(500, text=DUPLICATE)]})
    params = submit_input(ref)
    result = await run(activities(client, dashboard).submit, params)
    assert (result.submitted, result.duplicate) == (True, True)
    assert dashboard.calls("POST") == 1


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        pytest.param(refused, "connection refused", id="refused"),
        pytest.param(answer(503, text="Service Unavailable"), "503", id="503-proxy"),
        pytest.param(answer(500, text="No available agent to submit job"), "agent", id="500"),
        pytest.param(answer(400, text="TypeError: bad runtime_env"), "runtime_env", id="400"),
    ],
)
async def test_submission_failures_are_data_not_exceptions(
    client: KubeClient, reply: Answer, fragment: str
) -> None:
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    dashboard = Dashboard(**{"POST /api/jobs/": [reply]})
    params = submit_input(ref)
    result = await run(activities(client, dashboard).submit, params)
    assert not result.submitted and fragment in result.error


async def test_submit_for_a_recreated_rayjob_sends_nothing(client: KubeClient) -> None:
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    stale = ref.model_copy(update={"uid": "another-uid"})
    dashboard = Dashboard()
    params = submit_input(stale)
    result = await run(activities(client, dashboard).submit, params)
    assert not result.submitted and "no longer exists" in result.error
    assert dashboard.requests == []


# --- ask --------------------------------------------------------------------------------------


async def test_an_ask_returns_rays_answer_at_once(client: KubeClient) -> None:
    """One question, one answer: nothing stays open while the job runs."""
    ref = await make_rayjob(client)
    path = "GET /api/jobs/job-x-1"
    dashboard = Dashboard(**{path: [answer(200, job("RUNNING")), answer(200, job("SUCCEEDED"))]})
    view = await run(activities(client, dashboard).ask, ask_input(ref))
    assert view.found and view.status == JobStatus.RUNNING
    assert dashboard.calls("GET") == 1
    view = await run(activities(client, dashboard).ask, ask_input(ref))
    assert view.status == JobStatus.SUCCEEDED and view.end_time_ms


async def test_asks_and_submissions_read_the_rayjob_from_the_copy(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ray is asked again and again while a job runs: that needs only the cluster's name (and
    its token Secret's), which the worker's copy has. A submission takes the spec from the copy
    too, as KubeRay's from its cache, once the copy has reached the version the workflow
    decided on; from the API server while it is behind."""
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    stored = await client.get(kube.RAYJOBS, "default", ref.name)
    rayjobs = Informer(cast(KubeClient, QuietApi([stored], {None: "5"})), kube.RAYJOBS, "x", "")
    dashboard = Dashboard(
        **{
            "GET /api/jobs/job-x-1": [answer(200, job("SUCCEEDED"))],
            "POST /api/jobs/": [answer(200, {"submission_id": "job-x-1"})],
        }
    )
    transport = httpx.MockTransport(dashboard)
    connector = DashboardConnector(client, DashboardAccess.PROXY, transport)
    acts = RayJobActivities(client, connector, rayjobs=rayjobs)
    gets = Calls(client, "get_or_none", monkeypatch)
    async with running(rayjobs):
        assert await eventually(lambda: rayjobs.whole)
        view = await run(acts.ask, ask_input(ref))
        assert view.status == JobStatus.SUCCEEDED and gets.count("rayjobs") == 0
        assert (await run(acts.submit, submit_input(ref, as_of=5))).submitted
        assert gets.count("rayjobs") == 0
        assert (await run(acts.submit, submit_input(ref, as_of=6))).submitted  # copy behind
        assert gets.count("rayjobs") == 1
    assert dashboard.calls("POST") == 2


async def test_an_ask_reports_an_unreachable_dashboard(client: KubeClient) -> None:
    ref = await make_rayjob(client)
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [refused]})
    view = await run(activities(client, dashboard).ask, ask_input(ref))
    assert not view.reachable and "refused" in view.error


async def test_an_ask_reports_a_job_ray_does_not_know(client: KubeClient) -> None:
    ref = await make_rayjob(client)
    not_found = answer(404, text="Job job-x-1 does not exist")
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [not_found]})
    view = await run(activities(client, dashboard).ask, ask_input(ref))
    assert view.reachable and not view.found


# --- stop -------------------------------------------------------------------------------------


async def test_stop_posts_stop(client: KubeClient) -> None:
    ref = await make_rayjob(client)
    dashboard = Dashboard(
        **{
            "POST /api/jobs/job-x-1/stop": [answer(200, {"stopped": True})],
            "GET /api/jobs/job-x-1": [answer(200, job("STOPPED"))],
        }
    )
    params = contract.StopRayJobInput(ref=ref, cluster_name=cluster_of(ref), job_id="job-x-1")
    await run(activities(client, dashboard).stop, params)
    assert dashboard.calls("POST") == 1


async def test_stop_of_a_job_ray_does_not_know_is_not_an_error(client: KubeClient) -> None:
    """The finalizer goes anyway, as in KubeRay, when there is nothing to stop."""
    ref = await make_rayjob(client)
    not_found = answer(404, text="Job job-x-1 does not exist")
    dashboard = Dashboard(
        **{"POST /api/jobs/job-x-1/stop": [not_found], "GET /api/jobs/job-x-1": [not_found]}
    )
    params = contract.StopRayJobInput(ref=ref, cluster_name=cluster_of(ref), job_id="job-x-1")
    await run(activities(client, dashboard).stop, params)
    assert dashboard.calls("POST") == 1


# --- the connector ------------------------------------------------------------------------------


async def test_dashboard_calls_build_their_tls_settings_once(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenSSL 3 takes 15-20 ms of CPU per context; a worker makes thousands of calls."""
    built: list[object] = []
    original = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(args or kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    ref = await make_rayjob(client, submissionMode="HTTPMode")
    dashboard = Dashboard(**{"POST /api/jobs/": [answer(200, {"submission_id": "job-x-1"})]})
    rayjob = activities(client, dashboard)
    params = submit_input(ref)
    for _ in range(3):
        assert (await run(rayjob.submit, params)).submitted

    assert dashboard.calls("POST") == 3
    assert len(built) == 1


async def test_a_ray_token_is_read_from_its_secret_once_in_a_while(
    client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch of running Ray jobs asks every cluster every 3 s: reading the token's Secret
    each time would be most of the worker's requests to the API server."""
    spec = copy.deepcopy(CLUSTER_SPEC) | {"authOptions": {"mode": "token", "secretName": "tok"}}
    ref = await make_rayjob(client, rayClusterSpec=spec)
    token = base64.b64encode(b"s3cret-token").decode()
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok"}}
    await client.create(kube.SECRETS, "default", secret | {"data": {"auth_token": token}})
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("RUNNING"))]})
    acts = activities(client, dashboard)
    gets = Calls(client, "get_or_none", monkeypatch)
    for _ in range(3):
        assert (await run(acts.ask, ask_input(ref))).status == JobStatus.RUNNING
    assert gets.count("secrets") == 1
    sent = {request.headers.get("x-ray-authorization") for request in dashboard.requests}
    assert sent == {"Bearer s3cret-token"}


# --- where the dashboard is -------------------------------------------------------------------


async def test_a_status_from_before_leads_no_call_anywhere(client: KubeClient) -> None:
    """A status written by anyone before the workflow ran (a RayJob taken over, a workflow
    started again) names an address and a cluster of its choosing: neither is followed."""
    ref = await make_bare_rayjob(client, submissionMode="HTTPMode")
    forged = {"dashboardURL": "evil.example:80/#", "rayClusterName": "nowhere"}
    await client.patch(kube.RAYJOBS, "default", ref.name, {"status": forged}, sub="status")
    dashboard = Dashboard(**{"GET /api/jobs/job-x-1": [answer(200, job("RUNNING"))]})
    acts = activities(client, dashboard)
    named = contract.AskRayJobInput(ref=ref, cluster_name="nowhere", job_id="job-x-1")
    view = await run(acts.ask, named)
    assert not view.reachable and view.error == "RayCluster nowhere does not exist"
    submitted = await run(acts.submit, submit_input(ref).model_copy(update={"cluster_name": ""}))
    assert not submitted.submitted and "(none named)" in submitted.error
    assert dashboard.requests == []


async def test_a_head_service_made_before_the_cluster_gets_no_call(client: KubeClient) -> None:
    """The RayJob's own namespace, the cluster's head Service's name, another namespace's Ray."""
    ref = await make_bare_rayjob(client, submissionMode="HTTPMode")
    name = cluster_of(ref)
    await make_alias_service(client, "default", f"{name}-head-svc")
    create = contract.CreateClusterInput(ref=ref, cluster_name=name, job_id="x", attempt=1)
    await run(JobActivities(client, DEFAULT_OPTIONS).create_cluster, create)
    dashboard = Dashboard(**{"POST /api/jobs/": [answer(200, {"submission_id": "job-x-1"})]})
    result = await run(activities(client, dashboard).submit, submit_input(ref))
    assert not result.submitted and "not owned by RayCluster" in result.error
    view = await run(activities(client, dashboard).ask, ask_input(ref))
    assert not view.reachable and "not owned by RayCluster" in view.error
    assert dashboard.requests == []
