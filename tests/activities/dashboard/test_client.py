"""The Ray dashboard client against `httpx.MockTransport`: every call, every failure.

Response bodies are trimmed copies of what Ray 2.60 really sends (see the real-Ray module for
the live check), unknown keys included.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from aiohttp import web

from activities.dashboard import client as rd
from activities.dashboard import errors, urls
from activities.dashboard.contract import JobInfo, JobSubmission, ServeStatus
from crds.messages import STATUS_MESSAGE_LIMIT

BASE = "http://demo-head-svc.ns.svc.cluster.local:8265"
TOKEN = "s3cr3t-T0ken-value-1234"

Handler = Callable[[httpx.Request], httpx.Response]

JOB = {
    "type": "SUBMISSION",
    "job_id": None,
    "submission_id": "rayjob-abcde",
    "driver_info": None,
    "status": "SUCCEEDED",
    "entrypoint": "python main.py",
    "message": "Job finished successfully.",
    "error_type": None,
    "start_time": 1700000000123,
    "end_time": 1700000005000,
    "metadata": {"team": "ml"},
    "runtime_env": {"env_vars": {"PASSWORD": "hunter2"}},
    "driver_agent_http_address": "http://192.0.2.2:45927",
    "driver_node_id": "afa68840ccc3",
    "driver_exit_code": 0,
}

DUPLICATE_BODY = """Traceback (most recent call last):
  File "/ray/dashboard/modules/job/job_head.py", line 419, in submit_job
    resp = await job_agent_client.submit_job_internal(submit_request)
RuntimeError: Request failed with status code 500: Traceback (most recent call last):
ValueError: Job with submission_id rayjob-abcde already exists. \
Please use a different submission_id.
."""

SERVE = {
    "controller_info": {"node_id": "afa6", "actor_name": "SERVE_CONTROLLER_ACTOR"},
    "proxy_location": "EveryNode",
    "http_options": {"host": "0.0.0.0", "port": 8000},
    "proxies": {"afa6": {"status": "HEALTHY"}},
    "deploy_mode": "MULTI_APP",
    "target_capacity": None,
    "applications": {
        "echo": {
            "name": "echo",
            "route_prefix": "/echo",
            "docs_path": None,
            "status": "RUNNING",
            "message": "",
            "last_deployed_time_s": 1795982496.13,
            "deployed_app_config": {"import_path": "echo_app:app"},
            "source": "declarative",
            "deployments": {
                "Echo": {
                    "name": "Echo",
                    "status": "HEALTHY",
                    "status_trigger": "CONFIG_UPDATE_COMPLETED",
                    "message": "",
                    "replicas": [{"state": "RUNNING", "pid": 29661}],
                }
            },
        }
    },
}


class Recorder:
    """A MockTransport handler that answers from a function and keeps every request."""

    def __init__(self, answer: Handler) -> None:
        self.answer = answer
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer(request)


def reply(status: int = 200, body: Any = None, text: str | None = None) -> Handler:
    def answer(request: httpx.Request) -> httpx.Response:
        if text is not None:
            return httpx.Response(status, text=text)
        return httpx.Response(status, json=body)

    return answer


def raising(exc: type[httpx.HTTPError]) -> Handler:
    def answer(request: httpx.Request) -> httpx.Response:
        raise exc("boom", request=request)

    return answer


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., tuple[rd.RayDashboardClient, Recorder]]]:
    pools: list[httpx.AsyncClient] = []

    def build(
        answer: Handler, *, token: str | None = None, base: str = BASE, timeout: float = 2.0
    ) -> tuple[rd.RayDashboardClient, Recorder]:
        recorder = Recorder(answer)
        pool = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
        pools.append(pool)
        return rd.RayDashboardClient(pool, base, auth_token=token, timeout=timeout), recorder

    yield build
    for pool in pools:
        await pool.aclose()


# --- submit_job -------------------------------------------------------------------------------


async def test_submit_sends_only_the_fields_given(make):
    client, rec = make(reply(200, {"job_id": "rayjob-abcde", "submission_id": "rayjob-abcde"}))
    submission = JobSubmission(
        entrypoint="python main.py",
        submission_id="rayjob-abcde",
        runtime_env={"pip": ["requests"]},
        metadata={"k": "v"},
        entrypoint_num_cpus=1.0,
        entrypoint_resources={"custom": 1.0},
    )
    result = await client.submit_job(submission)
    assert (result.submission_id, result.duplicate) == ("rayjob-abcde", False)
    (request,) = rec.requests
    assert (request.method, request.url.path) == ("POST", "/api/jobs/")
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {
        "entrypoint": "python main.py",
        "submission_id": "rayjob-abcde",
        "runtime_env": {"pip": ["requests"]},
        "metadata": {"k": "v"},
        "entrypoint_num_cpus": 1.0,
        "entrypoint_resources": {"custom": 1.0},
    }


async def test_duplicate_submission_is_success(make):
    client, _ = make(reply(500, text=DUPLICATE_BODY))
    result = await client.submit_job(JobSubmission(entrypoint="x", submission_id="rayjob-abcde"))
    assert (result.submission_id, result.duplicate) == ("rayjob-abcde", True)


@pytest.mark.parametrize(
    ("status", "text", "error"),
    [
        pytest.param(
            500, "No available agent to submit job", errors.DashboardUnavailable, id="500"
        ),
        pytest.param(400, "TypeError: missing 'entrypoint'", errors.DashboardRejected, id="400"),
        pytest.param(404, "Not Found", errors.DashboardRejected, id="404-no-jobs-api"),
    ],
)
async def test_submit_failures(make, status, text, error):
    client, _ = make(reply(status, text=text))
    with pytest.raises(error) as caught:
        await client.submit_job(JobSubmission(entrypoint="x", submission_id="j"))
    assert type(caught.value) is error
    assert caught.value.status == status
    assert text in str(caught.value)


# --- job_info -----------------------------------------------------------------------------------


async def test_job_info_reads_ray_260_payload(make):
    client, rec = make(reply(200, JOB))
    info = await client.job_info("rayjob-abcde")
    assert rec.requests[0].method == "GET"
    assert rec.requests[0].url.path == "/api/jobs/rayjob-abcde"
    assert info.submission_id == "rayjob-abcde"
    assert info.status == "SUCCEEDED"
    assert info.is_terminal
    assert info.message == "Job finished successfully."
    assert info.start_time == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert info.end_time == datetime(2023, 11, 14, 22, 13, 25, tzinfo=UTC)
    assert info.metadata == {"team": "ml"}
    assert info.driver_exit_code == 0
    # The runtime env (secrets in env_vars) is never carried into results.
    assert "hunter2" not in info.model_dump_json()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(0, None, id="zero-is-unset"),
        pytest.param(None, None, id="null-is-unset"),
        pytest.param(1, datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC), id="one-ms"),
        pytest.param(
            1795982384884, datetime(2026, 11, 29, 19, 59, 44, 884000, tzinfo=UTC), id="ray-2.60"
        ),
    ],
)
def test_job_timestamps(raw, expected):
    info = JobInfo.model_validate({**JOB, "start_time": raw, "end_time": raw})
    assert info.start_time == expected
    assert info.end_time == expected
    if expected is not None:
        assert info.start_time is not None and info.start_time.tzinfo is not None


def test_job_info_survives_a_payload_round_trip():
    info = JobInfo.model_validate(JOB)
    assert JobInfo.model_validate_json(info.model_dump_json()) == info


def test_a_job_message_of_any_size_is_clipped_to_a_status_message():
    # The Ray cluster, and so what its dashboard answers, belongs to the CR's owner.
    info = JobInfo.model_validate({**JOB, "message": "x" * 1_000_000})
    assert len(info.message.encode()) <= STATUS_MESSAGE_LIMIT
    assert info.message.startswith("xxx") and info.message.endswith("…")


@pytest.mark.parametrize(
    ("status", "terminal"),
    [
        pytest.param("PENDING", False, id="pending"),
        pytest.param("RUNNING", False, id="running"),
        pytest.param("STOPPED", True, id="stopped"),
        pytest.param("SUCCEEDED", True, id="succeeded"),
        pytest.param("FAILED", True, id="failed"),
        pytest.param("SOME_NEW_STATE", False, id="unknown-kept-open"),
    ],
)
def test_job_status_is_open(status, terminal):
    info = JobInfo.model_validate({**JOB, "status": status, "message": None, "metadata": None})
    assert (info.status, info.is_terminal, info.message, info.metadata) == (
        status,
        terminal,
        "",
        {},
    )


async def test_unknown_job_is_job_not_found(make):
    client, _ = make(reply(404, text="Job nope does not exist"))
    with pytest.raises(errors.JobNotFound) as caught:
        await client.job_info("nope")
    assert caught.value.status == 404
    assert "Job nope does not exist" in str(caught.value)
    assert isinstance(caught.value, errors.DashboardRejected)


async def test_missing_service_behind_the_proxy_is_not_a_missing_job(make):
    # The API server's own 404 (the head Service is gone) must not make HTTPMode re-submit.
    status = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
    client, _ = make(reply(404, status))
    with pytest.raises(errors.DashboardUnavailable):
        await client.job_info("rayjob-abcde")


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        pytest.param(reply(200, text="<html>502 from a proxy</html>"), "not JSON", id="html"),
        pytest.param(reply(200, text=""), "not JSON", id="empty"),
        pytest.param(reply(200, [JOB]), "unexpected shape", id="array"),
        pytest.param(reply(200, {**JOB, "status": None}), "status", id="null-status"),
        pytest.param(reply(200, {"submission_id": "x"}), "status", id="no-status"),
        pytest.param(reply(200, {**JOB, "start_time": "soon"}), "start_time", id="bad-time"),
    ],
)
async def test_job_info_bad_answers(make, answer, fragment):
    client, _ = make(answer)
    with pytest.raises(errors.DashboardBadResponse) as caught:
        await client.job_info("rayjob-abcde")
    assert fragment in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert isinstance(caught.value, errors.DashboardUnavailable)


async def test_submission_ids_cannot_escape_their_path(make):
    client, rec = make(reply(200, JOB))
    await client.job_info("a/../stop")
    assert rec.requests[0].url.raw_path == b"/api/jobs/a%2F..%2Fstop"


# --- transport and status failures, for every call ---------------------------------------------

CALLS = [
    pytest.param(
        lambda c: c.submit_job(JobSubmission(entrypoint="x", submission_id="j")), id="submit"
    ),
    pytest.param(lambda c: c.job_info("j"), id="info"),
    pytest.param(lambda c: c.list_jobs(), id="list"),
    pytest.param(lambda c: c.job_logs("j"), id="logs"),
    pytest.param(lambda c: c.stop_job("j"), id="stop"),
    pytest.param(lambda c: c.put_serve_applications({"applications": []}), id="put-serve"),
    pytest.param(lambda c: c.serve_applications(), id="serve-status"),
]

FAILURES = [
    pytest.param(raising(httpx.ConnectError), errors.DashboardUnavailable, 0, id="refused"),
    pytest.param(
        raising(httpx.ConnectTimeout), errors.DashboardUnavailable, 0, id="connect-timeout"
    ),
    pytest.param(raising(httpx.ReadTimeout), errors.DashboardUnavailable, 0, id="read-timeout"),
    pytest.param(raising(httpx.RemoteProtocolError), errors.DashboardUnavailable, 0, id="reset"),
    pytest.param(raising(httpx.UnsupportedProtocol), errors.DashboardError, 0, id="bad-scheme"),
    pytest.param(reply(502, text="Bad Gateway"), errors.DashboardUnavailable, 502, id="502"),
    pytest.param(reply(503, text="GCS may be down"), errors.DashboardUnavailable, 503, id="503"),
    pytest.param(reply(429, text="slow down"), errors.DashboardUnavailable, 429, id="429"),
    pytest.param(reply(401, text="Unauthorized"), errors.DashboardUnauthorized, 401, id="401"),
    pytest.param(reply(403, text="Forbidden"), errors.DashboardUnauthorized, 403, id="403"),
    pytest.param(reply(400, text="Invalid"), errors.DashboardRejected, 400, id="400"),
    pytest.param(reply(422, text="Invalid"), errors.DashboardRejected, 422, id="422"),
]


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(("answer", "error", "status"), FAILURES)
async def test_failures_become_dashboard_errors(make, call, answer, error, status):
    client, _ = make(answer)
    with pytest.raises(errors.DashboardError) as caught:
        await call(client)
    assert type(caught.value) is error
    assert caught.value.status == status
    if status == 0:
        assert isinstance(caught.value.__cause__, httpx.HTTPError)


async def test_timeouts_are_set_per_request(make):
    client, rec = make(reply(200, JOB), timeout=rd.PROXY_TIMEOUT)
    await client.job_info("j")
    assert rec.requests[0].extensions["timeout"] == dict.fromkeys(
        ("connect", "read", "write", "pool"), 10.0
    )


async def test_timeout_message_names_the_limit(make):
    client, _ = make(raising(httpx.ReadTimeout))
    with pytest.raises(
        errors.DashboardUnavailable, match=r"GET /api/jobs/j: no answer within 2.0s"
    ):
        await client.job_info("j")


# --- the API server's own refusals --------------------------------------------------------------

SERVICE_PROXY = urls.proxied_base_url("https://api:6443", "ns", "demo-head-svc")
POD_PROXY = urls.pod_proxied_base_url("https://api:6443", "ns", "demo-head-x7k2p", 8000)


def kube_status(code: int, reason: str, message: str) -> Handler:
    """The `Status` the API server sends for itself (Ray's own refusals are not one)."""
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    return reply(code, {**body, "reason": reason, "message": message})


def forbidden(resource: str, verb: str) -> Handler:
    return kube_status(
        403,
        "Forbidden",
        f'{resource.split("/")[0]} "demo-head-svc" is forbidden: User '
        f'"system:serviceaccount:kuberay-temporal:kuberay-temporal-worker" cannot {verb} '
        f'resource "{resource}" in API group "" in the namespace "ns"',
    )


@pytest.mark.parametrize(
    ("base", "call", "resource", "verb"),
    [
        pytest.param(SERVICE_PROXY, lambda c: c.job_info("j"), "services/proxy", "get", id="get"),
        pytest.param(
            SERVICE_PROXY,
            lambda c: c.submit_job(JobSubmission(entrypoint="x", submission_id="j")),
            "services/proxy",
            "create",
            id="submit",
        ),
        pytest.param(
            SERVICE_PROXY,
            lambda c: c.put_serve_applications({"applications": []}),
            "services/proxy",
            "update",
            id="put-serve",
        ),
        pytest.param(POD_PROXY, lambda c: c.job_info("j"), "pods/proxy", "get", id="pod"),
    ],
)
async def test_a_403_from_the_api_server_names_the_missing_rule_not_the_token(
    make, base, call, resource, verb
):
    client, _ = make(forbidden(resource, verb), token=TOKEN, base=base)
    with pytest.raises(errors.DashboardError) as caught:
        await call(client)
    assert type(caught.value) is errors.ProxyDenied
    assert isinstance(caught.value, errors.DashboardRejected)  # retrying will not grant the rule
    assert caught.value.status == 403
    message = str(caught.value)
    assert f"Kubernetes account may not {verb} {resource}" in message
    assert "missing RBAC rule, not a Ray token problem" in message
    assert f'cannot {verb} resource \\"{resource}\\"' not in message  # decoded, not raw JSON
    assert f'cannot {verb} resource "{resource}"' in message
    assert TOKEN not in message


async def test_a_401_from_the_api_server_is_about_kubernetes_credentials(make):
    client, _ = make(kube_status(401, "Unauthorized", "Unauthorized"), base=SERVICE_PROXY)
    with pytest.raises(errors.ProxyDenied, match="API server refused the worker's credentials"):
        await client.job_info("j")


@pytest.mark.parametrize("status", [401, 403])
async def test_rays_own_refusal_through_the_proxy_is_still_the_token(make, status):
    # The proxy passes Ray's answer through untouched: plain text, or JSON that is no Status.
    for answer in (reply(status, text="Unauthorized"), reply(status, {"error": "bad token"})):
        client, _ = make(answer, token=TOKEN, base=SERVICE_PROXY)
        with pytest.raises(errors.DashboardError) as caught:
            await client.job_info("j")
        assert type(caught.value) is errors.DashboardUnauthorized


# --- stop_job -----------------------------------------------------------------------------------


def stop_then_info(stopped: Any, status: str) -> Handler:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/stop"):
            return httpx.Response(200, json={"stopped": stopped})
        return httpx.Response(200, json={**JOB, "status": status})

    return answer


@pytest.mark.parametrize(
    ("stopped", "status", "expected", "requests"),
    [
        pytest.param(True, "RUNNING", True, 1, id="stopped"),
        pytest.param(False, "SUCCEEDED", False, 2, id="already-succeeded"),
        pytest.param(False, "FAILED", False, 2, id="already-failed"),
        pytest.param(False, "STOPPED", False, 2, id="already-stopped"),
    ],
)
async def test_stop(make, stopped, status, expected, requests):
    client, rec = make(stop_then_info(stopped, status))
    assert await client.stop_job("rayjob-abcde") is expected
    assert len(rec.requests) == requests
    assert (rec.requests[0].method, rec.requests[0].url.path) == (
        "POST",
        "/api/jobs/rayjob-abcde/stop",
    )
    assert rec.requests[0].content == b""


@pytest.mark.parametrize("status", ["PENDING", "RUNNING", "SOME_NEW_STATE"])
async def test_stop_refused_while_still_running(make, status):
    client, _ = make(stop_then_info(False, status))
    with pytest.raises(errors.JobNotStopped) as caught:
        await client.stop_job("rayjob-abcde")
    assert caught.value.job_status == status


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        pytest.param(reply(404, text="Job j does not exist"), errors.JobNotFound, id="404"),
        pytest.param(reply(200, {"stopped": "yes"}), errors.DashboardBadResponse, id="not-bool"),
        pytest.param(reply(200, {}), errors.DashboardBadResponse, id="missing"),
        pytest.param(reply(200, text="ok"), errors.DashboardBadResponse, id="not-json"),
    ],
)
async def test_stop_failures(make, answer, error):
    client, _ = make(answer)
    with pytest.raises(error):
        await client.stop_job("j")


# --- logs and list ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(reply(200, {"logs": "hi\n", "extra": 1}), "hi\n", id="logs"),
        pytest.param(reply(200, {"logs": ""}), "", id="pending-empty"),
        pytest.param(reply(404, text="Job j does not exist"), "", id="404-empty"),
    ],
)
async def test_job_logs(make, answer, expected):
    client, rec = make(answer)
    assert await client.job_logs("j") == expected
    assert rec.requests[0].url.path == "/api/jobs/j/logs"


@pytest.mark.parametrize("body", [{"logs": None}, {}, ["hi"]], ids=["null", "missing", "array"])
async def test_job_logs_bad_answers(make, body):
    client, _ = make(reply(200, body))
    with pytest.raises(errors.DashboardBadResponse):
        await client.job_logs("j")


async def test_list_jobs(make):
    driver = {**JOB, "type": "DRIVER", "submission_id": None, "job_id": "01000000"}
    client, rec = make(reply(200, [JOB, driver]))
    jobs = await client.list_jobs()
    assert [(j.type, j.submission_id, j.job_id) for j in jobs] == [
        ("SUBMISSION", "rayjob-abcde", None),
        ("DRIVER", None, "01000000"),
    ]
    assert rec.requests[0].url.path == "/api/jobs/"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(reply(200, []), [], id="empty"),
        pytest.param(reply(404, text="Not Found"), [], id="404-none"),
    ],
)
async def test_list_jobs_empty(make, answer, expected):
    client, _ = make(answer)
    assert await client.list_jobs() == expected


@pytest.mark.parametrize("body", [{"jobs": []}, [{"no": "status"}]], ids=["object", "bad-entry"])
async def test_list_jobs_bad_answers(make, body):
    client, _ = make(reply(200, body))
    with pytest.raises(errors.DashboardBadResponse):
        await client.list_jobs()


# --- Serve ----------------------------------------------------------------------------------------

SERVE_CONFIG = {
    "http_options": {"host": "0.0.0.0", "port": 8000},
    "applications": [{"name": "echo", "route_prefix": "/echo", "import_path": "echo_app:app"}],
}


@pytest.mark.parametrize(
    ("config", "capacity", "sent"),
    [
        pytest.param(SERVE_CONFIG, None, SERVE_CONFIG, id="plain"),
        pytest.param(SERVE_CONFIG, 20, {**SERVE_CONFIG, "target_capacity": 20}, id="capacity"),
        pytest.param(
            {**SERVE_CONFIG, "target_capacity": 50},
            0,
            {**SERVE_CONFIG, "target_capacity": 0},
            id="capacity-replaced",
        ),
    ],
)
async def test_put_serve_applications(make, config, capacity, sent):
    client, rec = make(reply(200, text=""))
    await client.put_serve_applications(config, capacity)
    (request,) = rec.requests
    assert (request.method, request.url.path) == ("PUT", "/api/serve/applications/")
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == sent
    assert "target_capacity" not in SERVE_CONFIG  # the caller's dict is left alone


SERVE_VALIDATION_ERROR = """1 validation error for ServeDeploySchema
applications
  Value error, Application names must be nonempty. [type=value_error, \
input_value=[{'name': '', 'runtime_env': {'env_vars': {'PASSWORD': 'hunter2'}}}], input_type=list]
    For further information visit https://errors.pydantic.dev/2.14/v/value_error"""


async def test_put_serve_validation_error_is_rejected(make):
    client, _ = make(reply(400, text=SERVE_VALIDATION_ERROR))
    with pytest.raises(errors.DashboardRejected) as caught:
        await client.put_serve_applications(SERVE_CONFIG)
    # The reason survives; the config Ray echoes back (env vars and all) does not.
    assert "Application names must be nonempty" in str(caught.value)
    assert "hunter2" not in str(caught.value)


async def test_serve_applications_reads_ray_260_payload(make):
    client, rec = make(reply(200, SERVE))
    status = await client.serve_applications()
    (request,) = rec.requests
    assert request.url.path == "/api/serve/applications/"
    assert dict(request.url.params) == {"api_type": "declarative"}
    app = status.applications["echo"]
    assert (app.name, app.status, app.message, app.route_prefix) == ("echo", "RUNNING", "", "/echo")
    deployment = app.deployments["Echo"]
    assert (deployment.name, deployment.status, deployment.message) == ("Echo", "HEALTHY", "")
    assert status.deploy_mode == "MULTI_APP"
    assert status.all_running


@pytest.mark.parametrize(
    ("applications", "names", "running"),
    [
        pytest.param({}, [], False, id="none-is-not-ready"),
        pytest.param(None, [], False, id="null"),
        pytest.param({"": {"status": "RUNNING"}}, ["default"], True, id="unnamed-is-default"),
        pytest.param(
            {"a": {"name": "a", "status": "RUNNING"}, "b": {"name": "b", "status": "DEPLOYING"}},
            ["a", "b"],
            False,
            id="one-deploying",
        ),
        pytest.param(
            {"a": {"name": "a", "status": "SOMETHING_NEWER", "message": None, "deployments": None}},
            ["a"],
            False,
            id="unknown-status-kept",
        ),
    ],
)
def test_serve_status_shapes(applications, names, running):
    status = ServeStatus.model_validate({"applications": applications, "unknown": 1})
    assert sorted(status.applications) == names
    assert [a.name for a in status.applications.values()] == names
    assert status.all_running is running


@pytest.mark.parametrize(
    "body",
    [
        {"applications": {"a": {"name": "a"}}},
        {"applications": {"a": {"status": "RUNNING", "deployments": {"D": {"name": "D"}}}}},
        {"applications": ["a"]},
    ],
    ids=["app-without-status", "deployment-without-status", "list"],
)
async def test_serve_status_bad_answers(make, body):
    client, _ = make(reply(200, body))
    with pytest.raises(errors.DashboardBadResponse):
        await client.serve_applications()


@pytest.mark.parametrize(
    ("answer", "healthy"),
    [
        pytest.param(reply(200, text="success"), True, id="200"),
        pytest.param(reply(503, text="This node is being drained."), False, id="503"),
        pytest.param(reply(404, text="Not Found"), False, id="404"),
        pytest.param(raising(httpx.ConnectError), False, id="refused"),
        pytest.param(raising(httpx.ReadTimeout), False, id="timeout"),
    ],
)
async def test_serve_proxy_health(make, answer, healthy):
    client, rec = make(answer, token=TOKEN)
    assert await client.serve_proxy_healthy("http://10.0.0.5:8000/") is healthy
    (request,) = rec.requests
    assert str(request.url) == "http://10.0.0.5:8000/-/healthz"
    # The Serve proxy is not the dashboard: it gets no dashboard token.
    assert rd.AUTH_HEADER not in request.headers


@pytest.mark.parametrize(
    ("answer", "healthy"),
    [
        pytest.param(reply(200, text="success"), True, id="success"),
        pytest.param(reply(200, text="starting"), False, id="other-body"),
        pytest.param(reply(503, text="Health check failed"), False, id="503"),
        pytest.param(raising(httpx.ConnectError), False, id="refused"),
    ],
)
async def test_gcs_health(make, answer, healthy):
    client, rec = make(answer)
    assert await client.gcs_healthy() is healthy
    assert rec.requests[0].url.path == "/api/gcs_healthz"


# --- auth ---------------------------------------------------------------------------------------


ALL_CALLS = [
    *CALLS,
    pytest.param(lambda c: c.gcs_healthy(), id="gcs-health"),
]


@pytest.mark.parametrize("call", ALL_CALLS)
async def test_auth_header_on_every_dashboard_call(make, call):
    client, rec = make(reply(200, JOB), token=TOKEN)
    # The canned answer does not fit every call; only the header matters here.
    with contextlib.suppress(errors.DashboardError):
        await call(client)
    assert rec.requests
    assert all(r.headers[rd.AUTH_HEADER] == f"Bearer {TOKEN}" for r in rec.requests)


@pytest.mark.parametrize("call", ALL_CALLS)
async def test_no_auth_header_without_token(make, call):
    client, rec = make(reply(200, JOB))
    with contextlib.suppress(errors.DashboardError):
        await call(client)
    assert all(rd.AUTH_HEADER not in r.headers for r in rec.requests)


def echo_headers(status: int) -> Handler:
    # A worst-case server: it echoes the request headers into its error body.
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, text=f"rejected {dict(request.headers)}")

    return answer


def raising_with_header(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"cannot send {request.headers[rd.AUTH_HEADER]}", request=request)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(echo_headers(401), id="401-echo"),
        pytest.param(echo_headers(500), id="500-echo"),
        pytest.param(echo_headers(200), id="200-echo"),
        pytest.param(raising_with_header, id="transport-echo"),
        pytest.param(raising(httpx.ReadTimeout), id="timeout"),
    ],
)
async def test_token_never_leaks(make, call, answer, caplog):
    caplog.set_level(logging.DEBUG)
    client, _ = make(answer, token=TOKEN)
    try:
        await call(client)
    except errors.DashboardError as err:
        assert TOKEN not in str(err)
        assert TOKEN not in repr(err)
    assert TOKEN not in repr(client)
    assert TOKEN not in caplog.text


async def test_token_absent_from_a_real_connection_failure_traceback(caplog):
    # The whole chain, httpx's own exceptions included, as a log handler would print it.
    caplog.set_level(logging.DEBUG)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the request: connection refused
    async with httpx.AsyncClient() as pool:
        client = rd.RayDashboardClient(pool, f"http://127.0.0.1:{port}", auth_token=TOKEN)
        with pytest.raises(errors.DashboardUnavailable) as caught:
            await client.job_info("j")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert TOKEN not in "".join(traceback.format_exception(caught.value))
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    "token",
    ["", "has space", "new\nline", "tab\there", "ünïcode"],
    ids=["empty", "space", "newline", "tab", "non-ascii"],
)
def test_unusable_token_is_refused_without_echo(token):
    with pytest.raises(ValueError) as caught:
        rd.RayDashboardClient(httpx.AsyncClient(), BASE, auth_token=token)
    assert not token or token not in str(caught.value)


# --- URLs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param(urls.pod_base_url("10.244.0.7", 8265), "http://10.244.0.7:8265", id="direct"),
        pytest.param(urls.pod_base_url("fd00::7", 9999), "http://[fd00::7]:9999", id="direct-ipv6"),
        pytest.param(
            urls.proxied_base_url("https://127.0.0.1:6443/", "ns", "demo-head-svc"),
            "https://127.0.0.1:6443/api/v1/namespaces/ns/services/demo-head-svc:dashboard/proxy",
            id="service-proxy",
        ),
        pytest.param(
            urls.proxied_base_url("https://api", "ns", "rs-serve-svc", "serve"),
            "https://api/api/v1/namespaces/ns/services/rs-serve-svc:serve/proxy",
            id="service-proxy-serve",
        ),
        pytest.param(
            urls.pod_proxied_base_url("https://api", "ns", "demo-head-x7k2p", 8000),
            "https://api/api/v1/namespaces/ns/pods/demo-head-x7k2p:8000/proxy",
            id="pod-proxy",
        ),
    ],
)
def test_base_urls(url, expected):
    assert url == expected


@pytest.mark.parametrize("suffix", ["", "/"], ids=["bare", "trailing-slash"])
async def test_proxied_base_keeps_its_path(make, suffix):
    base = urls.proxied_base_url("https://api:6443", "ns", "demo-head-svc") + suffix
    client, rec = make(reply(200, JOB), base=base)
    await client.job_info("j")
    assert str(rec.requests[0].url) == (
        "https://api:6443/api/v1/namespaces/ns/services/demo-head-svc:dashboard/proxy/api/jobs/j"
    )


# --- answers within bounds ---------------------------------------------------------------------
# Whoever runs a cluster chooses what answers on its dashboard port; the worker asking serves
# every namespace.


@contextlib.asynccontextmanager
async def serving(handler: Callable[[web.Request], Any]) -> AsyncIterator[str]:
    """A real HTTP server on a free loopback port answering every GET with `handler`."""
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_an_endless_answer_is_read_no_further_than_the_bound() -> None:
    sent = {"bytes": 0}

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        chunk = b'{"status": "RUNNING", "message": "' + b"x" * 65536
        with contextlib.suppress(ConnectionError):
            while sent["bytes"] < 64 * rd.MAX_ANSWER_BYTES:
                await response.write(chunk)
                sent["bytes"] += len(chunk)
        return response

    async with serving(endless) as base, httpx.AsyncClient() as pool:
        client = rd.RayDashboardClient(pool, base, timeout=5.0)
        with pytest.raises(errors.DashboardBadResponse, match="larger than 1048576 bytes"):
            await client.job_info("j")
    assert sent["bytes"] < 64 * rd.MAX_ANSWER_BYTES


async def test_an_answer_trickling_in_ends_at_the_whole_deadline() -> None:
    """Each byte comes within the per-read timeout, the whole answer never."""

    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError):
            while True:
                await response.write(b" ")
                await asyncio.sleep(0.05)  # the behaviour under test: a slow sender
        return response

    async with serving(trickle) as base, httpx.AsyncClient() as pool:
        client = rd.RayDashboardClient(pool, base, timeout=0.2)
        with pytest.raises(errors.DashboardUnavailable, match=r"no whole answer within 0\.6s"):
            await client.job_info("j")


async def test_an_answer_too_large_is_refused_even_when_held_whole(make):
    body = {**JOB, "message": "x" * rd.MAX_ANSWER_BYTES}
    client, _ = make(reply(200, body))
    with pytest.raises(errors.DashboardBadResponse, match="larger than"):
        await client.job_info("j")


async def test_json_nested_too_deep_is_a_bad_answer_not_a_crash(make):
    client, _ = make(reply(200, text="[" * 100_000 + "]" * 100_000))
    with pytest.raises(errors.DashboardBadResponse, match="not JSON"):
        await client.job_info("j")


async def test_answers_are_asked_for_uncompressed(make):
    client, rec = make(reply(200, JOB))
    await client.job_info("j")
    assert rec.requests[0].headers["accept-encoding"] == "identity"


async def test_rays_texts_are_clipped(make):
    client, _ = make(reply(200, {**JOB, "message": "y" * 100_000}))
    info = await client.job_info("j")
    assert len(info.message) <= STATUS_MESSAGE_LIMIT and info.message.startswith("yyy")
