"""The Ray simulator answers as a real Ray head does: same calls, same codes, same JSON shapes.

One real Ray 2.60 head (token authentication on, the fixture of `test_ray_dashboard_real`)
and one `SimulatedHead` with the same token get the same script of calls: every Jobs call
our client and KubeRay make (submit, duplicate submit, bad submit, get, list, logs, stop,
stop again, delete running and finished jobs, unknown ids, a missing token) and the Serve
calls (GET before anything, a rejected PUT, a PUT, GET until RUNNING, the Serve proxy's
health, DELETE). Status codes must be equal. JSON shapes are compared as keys and value
types, not values: equal for jobs; for Serve, whose status carries many keys nobody reads,
every key the simulator sends must exist in Ray's answer with the same type, and the keys
KubeRay reads must be in both. A duplicate submission's text must carry Ray's marker in both.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio

from devcluster.ray_simulator.dashboard import SimulatedHead
from tests.activities.dashboard.test_client_real import Head, ray_head  # noqa: F401 (a fixture)
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DUPLICATE_MARKER = "Please use a different submission_id"
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


@dataclass(frozen=True)
class Target:
    """One head under test: where its dashboard and Serve proxy are, and its token."""

    dashboard: str
    serve: Callable[[], str]
    token: str
    serve_config: dict[str, Any]


@dataclass(frozen=True)
class Seen:
    """One answer: the call, its status code and the shape of its JSON body (or None)."""

    call: str
    status: int
    shape: Any
    text: str


def shape(value: Any) -> Any:
    """Keys and value types of a JSON document; maps keyed by names get the key `*`."""
    if isinstance(value, dict):
        named = (
            value
            and all(isinstance(v, dict) for v in value.values())
            and all(isinstance(v, dict) and ("name" in v or "node_id" in v) for v in value.values())
        )
        if named:
            return {"*": shape(next(iter(value.values())))}
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        # Ray lists jobs in no fixed order: take the same one on both sides (the first id).
        return [shape(min(value, key=_list_order))] if value else []
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _list_order(item: Any) -> str:
    return str(item.get("submission_id", "")) if isinstance(item, dict) else ""


def contained(small: Any, big: Any, path: str = "") -> list[str]:
    """Where `small` has a key or type that `big` lacks (an empty list: none)."""
    if isinstance(small, dict) and isinstance(big, dict):
        return [
            problem
            for key, sub in small.items()
            for problem in (
                contained(sub, big[key], f"{path}.{key}") if key in big else [f"{path}.{key}"]
            )
        ]
    if isinstance(small, list) and isinstance(big, list):
        return contained(small[0], big[0], f"{path}[]") if small and big else []
    return [] if small == big or "NoneType" in (small, big) else [f"{path}: {small} vs {big}"]


async def script_jobs(target: Target) -> list[Seen]:
    """The Jobs calls, in order; waits are on the job's own status."""
    seen: list[Seen] = []
    auth = {"x-ray-authorization": f"Bearer {target.token}"}
    async with httpx.AsyncClient(base_url=target.dashboard, timeout=30) as http:

        async def call(label: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
            headers = kwargs.pop("headers", auth)
            response = await http.request(method, path, headers=headers, **kwargs)
            try:
                body = shape(response.json())
            except ValueError:
                body = None
            seen.append(Seen(label, response.status_code, body, response.text))
            return response

        async def until(job: str, *statuses: str) -> None:
            async def reached() -> bool:
                answer = await http.get(f"/api/jobs/{job}", headers=auth)
                return answer.json()["status"] in statuses

            await eventually(reached, within=60, message=f"{job} in {statuses}")

        await call("gcs health, no token", "GET", "/api/gcs_healthz", headers={})
        await call("web page, no token", "GET", "/", headers={})  # `kubectl ray` waits on it
        await call("list, no token", "GET", "/api/jobs/", headers={})
        await call("version", "GET", "/api/version")
        ok = {
            "entrypoint": "echo contract; sleep 1",
            "submission_id": "c-ok",
            "metadata": {"k": "v"},
        }
        await call("submit", "POST", "/api/jobs/", json=ok)
        await call("submit again", "POST", "/api/jobs/", json=ok)
        await call("submit, no entrypoint", "POST", "/api/jobs/", json={"submission_id": "c-x"})
        await call("submit, no id", "POST", "/api/jobs/", json={"entrypoint": "echo anonymous"})
        await until("c-ok", *TERMINAL)
        await call("get succeeded", "GET", "/api/jobs/c-ok")
        await call("logs", "GET", "/api/jobs/c-ok/logs")
        await call(
            "submit failing",
            "POST",
            "/api/jobs/",
            json={"entrypoint": "exit 3", "submission_id": "c-fail"},
        )
        await until("c-fail", *TERMINAL)
        await call("get failed", "GET", "/api/jobs/c-fail")
        await call(
            "submit long",
            "POST",
            "/api/jobs/",
            json={"entrypoint": "sleep 600", "submission_id": "c-long"},
        )
        await until("c-long", "RUNNING")
        await call("get running", "GET", "/api/jobs/c-long")
        await call("delete running", "DELETE", "/api/jobs/c-long")
        await call("stop running", "POST", "/api/jobs/c-long/stop")
        await until("c-long", *TERMINAL)
        await call("get stopped", "GET", "/api/jobs/c-long")
        await call("list", "GET", "/api/jobs/")
        await call("delete finished", "DELETE", "/api/jobs/c-ok")
        await call("get deleted", "GET", "/api/jobs/c-ok")
        for what, method, suffix in (
            ("get", "GET", ""),
            ("logs", "GET", "/logs"),
            ("stop", "POST", "/stop"),
            ("delete", "DELETE", ""),
        ):
            await call(f"{what} unknown", method, f"/api/jobs/c-never{suffix}")
        await call("stop stopped", "POST", "/api/jobs/c-long/stop")
    return seen


async def script_serve(target: Target) -> list[Seen]:
    """The Serve calls, in order."""
    seen: list[Seen] = []
    auth = {"x-ray-authorization": f"Bearer {target.token}"}
    declarative = {"api_type": "declarative"}
    async with httpx.AsyncClient(timeout=30) as http:

        async def call(label: str, method: str, url: str, **kwargs: Any) -> httpx.Response:
            response = await http.request(method, url, headers=auth, **kwargs)
            try:
                body = shape(response.json())
            except ValueError:
                body = None
            seen.append(Seen(label, response.status_code, body, response.text))
            return response

        apps = f"{target.dashboard}/api/serve/applications/"
        await call("get before", "GET", apps, params=declarative)
        bad = {"applications": [{"name": "", "import_path": "echo_app:app"}]}
        await call("put unnamed app", "PUT", apps, json=bad)
        await call("put", "PUT", apps, json=target.serve_config)

        async def running() -> bool:
            answer = await http.get(apps, params=declarative, headers=auth)
            statuses = [a["status"] for a in answer.json()["applications"].values()]
            return bool(statuses) and set(statuses) == {"RUNNING"}

        await eventually(running, within=90, message="Serve application RUNNING")
        await call("get running", "GET", apps, params=declarative)

        async def proxy_healthy() -> bool:
            try:
                return (await http.get(f"{target.serve()}/-/healthz")).status_code == 200
            except httpx.TransportError:
                return False

        await eventually(proxy_healthy, within=30, message="Serve proxy healthy")
        await call("serve proxy health", "GET", f"{target.serve()}/-/healthz")
        await call("delete", "DELETE", apps)
    return seen


def serve_config(port: int, grpc_port: int, app_dir: str) -> dict[str, Any]:
    return {
        "http_options": {"host": "127.0.0.1", "port": port},
        "grpc_options": {"port": grpc_port},
        "applications": [
            {
                "name": "echo",
                "route_prefix": "/echo",
                "import_path": "echo_app:app",
                "runtime_env": {"env_vars": {"PYTHONPATH": app_dir}},
            }
        ],
        "target_capacity": 100,
    }


@pytest.fixture(scope="module")
def real(ray_head: Head) -> Target:  # noqa: F811 (the imported fixture)
    config = serve_config(ray_head.serve_port, ray_head.serve_grpc_port, str(ray_head.app_dir))
    serve = f"http://127.0.0.1:{ray_head.serve_port}"

    return Target(ray_head.dashboard_url, lambda: serve, ray_head.token, config)


@pytest_asyncio.fixture
async def simulated(ray_head: Head) -> AsyncIterator[Target]:  # noqa: F811
    head = SimulatedHead(token=ray_head.token, serve_delay=0.5)
    port = await head.start()
    config = serve_config(ray_head.serve_port, ray_head.serve_grpc_port, str(ray_head.app_dir))
    try:
        yield Target(
            f"http://127.0.0.1:{port}",
            lambda: f"http://127.0.0.1:{head.serve_port()}",
            ray_head.token,
            config,
        )
    finally:
        await head.stop()


async def wait_healthy(target: Target) -> None:
    async def healthy() -> bool:
        async with httpx.AsyncClient() as http:
            try:
                return (await http.get(f"{target.dashboard}/api/gcs_healthz")).is_success
            except httpx.TransportError:
                return False

    await eventually(healthy, within=60, message="GCS healthy")


def compare(
    real_seen: list[Seen], simulated_seen: list[Seen], exact: Callable[[str], bool]
) -> list[str]:
    problems = []
    assert [s.call for s in real_seen] == [s.call for s in simulated_seen]
    for ray_answer, sim_answer in zip(real_seen, simulated_seen, strict=True):
        call = ray_answer.call
        if ray_answer.status != sim_answer.status:
            problems.append(f"{call}: Ray {ray_answer.status}, simulator {sim_answer.status}")
        elif exact(call) and ray_answer.shape != sim_answer.shape:
            problems.append(f"{call}: Ray {ray_answer.shape}\n  simulator {sim_answer.shape}")
        elif not exact(call):
            problems += [f"{call}: {p}" for p in contained(sim_answer.shape, ray_answer.shape)]
    return problems


async def test_jobs_api_matches_ray(real: Target, simulated: Target) -> None:
    await wait_healthy(real)
    started = time.monotonic()
    ray_seen = await script_jobs(real)
    ray_seconds = time.monotonic() - started
    started = time.monotonic()
    sim_seen = await script_jobs(simulated)
    sim_seconds = time.monotonic() - started
    # Stopping a job Ray has just stopped may still say stopped: true (see the real tests).
    problems = compare(ray_seen, sim_seen, lambda call: call != "stop stopped")
    assert not problems, "\n".join(problems)
    by_call = {s.call: s for s in ray_seen} | {f"sim {s.call}": s for s in sim_seen}
    for side in ("", "sim "):
        assert DUPLICATE_MARKER in by_call[f"{side}submit again"].text
        assert by_call[f"{side}list, no token"].status == 401
    print(f"jobs script: Ray {ray_seconds:.1f} s, simulator {sim_seconds:.1f} s")


async def test_serve_api_matches_ray(real: Target, simulated: Target) -> None:
    await wait_healthy(real)
    ray_seen = await script_serve(real)
    sim_seen = await script_serve(simulated)
    problems = compare(ray_seen, sim_seen, lambda call: call != "get running")
    assert not problems, "\n".join(problems)
    read_by_kuberay = {"name", "status", "message", "route_prefix", "deployments"}
    for seen in (ray_seen, sim_seen):
        running = next(s for s in seen if s.call == "get running").shape
        app = running["applications"]["*"]
        assert read_by_kuberay <= set(app), app
        assert {"name", "status", "message"} <= set(app["deployments"]["*"])
        assert "target_capacity" in running
