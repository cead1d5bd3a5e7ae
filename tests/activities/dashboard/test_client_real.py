"""The Ray dashboard client against a real Ray head: what Ray 2.60 actually answers.

One head per module, with token authentication on (so the auth header is exercised for real),
its own temp dir and free ports for everything it listens on: other suites run Ray heads on
this machine at the same time. `ray stop` cannot be scoped to one head (it kills every Ray
process of the user), so teardown kills this head's own process group and every descendant
(Ray puts workers in process groups of their own).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from activities.dashboard import client as rd
from activities.dashboard import errors
from activities.dashboard.contract import JobInfo, JobSubmission, ServeStatus
from crds.enums import ApplicationStatus, DeploymentStatus, JobStatus
from devcluster.ports import free_ports
from tests.eventually import eventually

pytestmark = pytest.mark.slow

RAY = Path(sys.executable).with_name("ray")

APP = """
from ray import serve


@serve.deployment(num_replicas=1, ray_actor_options={"num_cpus": 0})
class Echo:
    async def __call__(self, request):
        return "echo-ok"


app = Echo.bind()
"""


@dataclass(frozen=True)
class Head:
    dashboard_url: str
    serve_port: int
    serve_grpc_port: int
    token: str
    app_dir: Path


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgid) of a live process, from /proc (no psutil in this venv)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2])


def own_processes(pgid: int) -> set[int]:
    """Every process in our head's group, and all their descendants, whatever their group."""
    table = {
        int(entry): info
        for entry in os.listdir("/proc")
        if entry.isdigit() and (info := _stat(int(entry))) is not None
    }
    found = {pid for pid, (_, group) in table.items() if group == pgid}
    grew = True
    while grew:
        children = {pid for pid, (ppid, _) in table.items() if ppid in found} - found
        found |= children
        grew = bool(children)
    return found


def kill_all(pgid: int) -> None:
    deadline = time.monotonic() + 15
    while (pids := own_processes(pgid)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)  # the kill is asynchronous; re-scan for late forks until none remain
    assert not own_processes(pgid), "Ray processes survived teardown"


@pytest.fixture(scope="module")
def ray_head() -> Iterator[Head]:
    # Short: Ray's unix socket paths live under it and must stay below 108 bytes.
    temp_dir = Path(tempfile.mkdtemp(prefix="rdash-", dir="/tmp"))
    app_dir = temp_dir / "app"
    app_dir.mkdir()
    (app_dir / "echo_app.py").write_text(textwrap.dedent(APP))
    (gcs, dash, client, agent, agent_grpc, env_agent, metrics, serve, serve_grpc) = free_ports(9)
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": token,
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    command = [
        str(RAY), "start", "--head",
        f"--port={gcs}", f"--dashboard-port={dash}", "--dashboard-host=127.0.0.1",
        "--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
        "--include-dashboard=true", "--disable-usage-stats", f"--temp-dir={temp_dir / 'ray'}",
        f"--ray-client-server-port={client}", f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={env_agent}",
        f"--metrics-export-port={metrics}",
    ]  # fmt: skip
    # A new session: every daemon `ray start` leaves behind shares this process group.
    starter = subprocess.Popen(
        command,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    pgid = starter.pid
    try:
        output, _ = starter.communicate(timeout=90)
        assert starter.returncode == 0, output.decode(errors="replace")[-3000:]
        yield Head(f"http://127.0.0.1:{dash}", serve, serve_grpc, token, app_dir)
    finally:
        if starter.poll() is None:
            starter.kill()
        kill_all(pgid)
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest_asyncio.fixture(scope="module")
async def dashboard(ray_head: Head) -> AsyncIterator[rd.RayDashboardClient]:
    async with httpx.AsyncClient() as pool:
        # The proxy timeout, not the direct one: this 2-core machine is shared with other Ray
        # suites, and the first Serve PUT (which starts the controller) takes ~2 s on its own.
        client = rd.RayDashboardClient(
            pool, ray_head.dashboard_url, auth_token=ray_head.token, timeout=rd.PROXY_TIMEOUT
        )
        await eventually(client.gcs_healthy, within=60, message="GCS healthy")
        yield client


async def wait_for_status(
    client: rd.RayDashboardClient, submission_id: str, *statuses: str, within: float = 40
) -> JobInfo:
    async def probe() -> JobInfo | None:
        info = await client.job_info(submission_id)
        return info if info.status in statuses else None

    return await eventually(probe, within=within, message=f"{submission_id} in {statuses}")


async def test_token_auth_is_enforced(ray_head: Head, dashboard: rd.RayDashboardClient) -> None:
    assert await dashboard.gcs_healthy()
    async with httpx.AsyncClient() as pool:
        anonymous = rd.RayDashboardClient(pool, ray_head.dashboard_url, timeout=rd.PROXY_TIMEOUT)
        with pytest.raises(errors.DashboardUnauthorized) as caught:
            await anonymous.list_jobs()
        # /api/gcs_healthz is public in Ray 2.60, so probes work without the token.
        assert await anonymous.gcs_healthy()
    assert caught.value.status == 401


async def test_submit_twice_runs_once(dashboard: rd.RayDashboardClient) -> None:
    submission = JobSubmission(
        entrypoint="echo hello-from-ray",
        submission_id="rdash-hello",
        metadata={"owner": "kuberay-temporal"},
    )
    first = await dashboard.submit_job(submission)
    again = await dashboard.submit_job(submission)
    assert (first.duplicate, again.duplicate) == (False, True)
    jobs = await dashboard.list_jobs()
    assert [j.submission_id for j in jobs].count("rdash-hello") == 1

    info = await wait_for_status(dashboard, "rdash-hello", JobStatus.SUCCEEDED)
    assert info.is_terminal
    assert info.metadata == {"owner": "kuberay-temporal"}
    assert info.driver_exit_code == 0
    assert info.start_time is not None and info.end_time is not None
    assert info.start_time.tzinfo is not None
    assert info.start_time <= info.end_time
    assert "hello-from-ray" in await dashboard.job_logs("rdash-hello")


async def test_failing_job_fails(dashboard: rd.RayDashboardClient) -> None:
    await dashboard.submit_job(JobSubmission(entrypoint="exit 3", submission_id="rdash-fail"))
    info = await wait_for_status(dashboard, "rdash-fail", JobStatus.FAILED)
    assert info.driver_exit_code == 3
    assert info.error_type  # Ray names the failure kind (an entrypoint command error)
    assert info.message


async def test_stop_long_running_job(dashboard: rd.RayDashboardClient) -> None:
    await dashboard.submit_job(JobSubmission(entrypoint="sleep 600", submission_id="rdash-long"))
    await wait_for_status(dashboard, "rdash-long", JobStatus.RUNNING)
    assert await dashboard.stop_job("rdash-long") is True
    info = await wait_for_status(dashboard, "rdash-long", JobStatus.STOPPED, within=20)
    assert info.end_time is not None
    # Stopping a finished job is not an error. Ray usually answers "not stopped", but right
    # after a stop its supervisor may still accept a second one, so either answer is fine:
    # what matters is that nothing raises and the job stays stopped.
    await dashboard.stop_job("rdash-long")
    info = await dashboard.job_info("rdash-long")
    assert info.status == JobStatus.STOPPED


async def test_unknown_job(dashboard: rd.RayDashboardClient) -> None:
    with pytest.raises(errors.JobNotFound):
        await dashboard.job_info("rdash-never-submitted")
    with pytest.raises(errors.JobNotFound):
        await dashboard.stop_job("rdash-never-submitted")
    assert await dashboard.job_logs("rdash-never-submitted") == ""


async def test_serve_application(ray_head: Head, dashboard: rd.RayDashboardClient) -> None:
    serve_url = f"http://127.0.0.1:{ray_head.serve_port}"
    assert not await dashboard.serve_proxy_healthy(serve_url)
    config = {
        # Our own ports: Serve's defaults (8000, 9000) belong to whoever got there first.
        "http_options": {"host": "127.0.0.1", "port": ray_head.serve_port},
        "grpc_options": {"port": ray_head.serve_grpc_port},
        "applications": [
            {
                "name": "echo",
                "route_prefix": "/echo",
                "import_path": "echo_app:app",
                # Ray 2.60 refuses a local working_dir in a Serve config; PYTHONPATH loads the
                # module from disk without packaging or downloading anything.
                "runtime_env": {"env_vars": {"PYTHONPATH": str(ray_head.app_dir)}},
            }
        ],
    }
    await dashboard.put_serve_applications(config, target_capacity=100)

    async def running() -> ServeStatus | None:
        status = await dashboard.serve_applications()
        return status if status.all_running else None

    status = await eventually(running, within=60, message="echo app RUNNING")
    app = status.applications["echo"]
    assert (app.status, app.route_prefix) == (ApplicationStatus.RUNNING, "/echo")
    assert app.deployments["Echo"].status == DeploymentStatus.HEALTHY
    assert status.target_capacity == 100

    async with httpx.AsyncClient() as pool:
        answer = await pool.get(f"{serve_url}/echo", timeout=rd.PROXY_TIMEOUT)
    assert (answer.status_code, answer.text) == (200, "echo-ok")
    assert await dashboard.serve_proxy_healthy(serve_url)


async def test_serve_config_rejected(dashboard: rd.RayDashboardClient) -> None:
    bad = {"applications": [{"name": "", "import_path": "echo_app:app"}]}
    with pytest.raises(errors.DashboardRejected, match="nonempty"):
        await dashboard.put_serve_applications(bad)
