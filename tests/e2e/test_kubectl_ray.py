"""KubeRay's kubectl plugin (`kubectl ray`, built from its Go module) against our stack.

The commands that only talk to the API server work as they do under KubeRay: `create cluster
--wait` returns once our status says the cluster is provisioned, `get` shows it, `scale`
changes a group's replicas and our workflow follows, `get token` reads the token-auth Secret
our worker made, `delete` removes it; on devcluster with its simulated runtime, which these
commands need no more than. `session` port-forwards to the head, which takes the real control
plane and its node; `log` copies Ray's logs out of a pod, which takes real Ray too. The
README's table says what the other commands do here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.control_plane.building import KUBECTL_RAY, build, default_build
from kuberay_temporal.binaries import kubectl
from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.reference import KUBERAY_SAMPLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.kubernetes]


async def plugin_dir() -> Path:
    """The folder of the built `kubectl-ray` (built now if it is not yet)."""
    target = default_build()
    await asyncio.to_thread(build, target, quiet=True, names=(KUBECTL_RAY,))
    return target.dir_of(KUBECTL_RAY)


async def start(stack: LocalStack, plugins: Path, *args: str) -> asyncio.subprocess.Process:
    """`kubectl ray ARGS` as a user runs it: kubectl finds the plugin on PATH.

    In a session of its own: `session` runs `kubectl port-forward` as a child, which must stop
    with it (`stop`).
    """
    # kubectl hands a plugin only the arguments after its name: the kubeconfig goes by env.
    # The plugin's `job submit` runs the `ray` CLI: this environment's.
    bins = os.pathsep.join([str(plugins), str(Path(sys.executable).parent)])
    path = f"{bins}{os.pathsep}{os.environ['PATH']}"
    return await asyncio.create_subprocess_exec(
        str(kubectl()),
        "ray",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "PATH": path, "KUBECONFIG": str(stack.kubeconfig)},
        start_new_session=True,
    )


async def stop(process: asyncio.subprocess.Process) -> str:
    """End a command and every process it started; what it printed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    return out.decode()


async def ray(stack: LocalStack, plugins: Path, *args: str) -> tuple[int, str]:
    """Run `kubectl ray ARGS` to its end: its exit code and output."""
    process = await start(stack, plugins, *args)
    out, _ = await asyncio.wait_for(process.communicate(), 240)
    return int(process.returncode or 0), out.decode()


async def workers_are(stack: LocalStack, cluster: str, count: int) -> bool:
    """Whether the cluster has `count` worker pods that are not going away."""
    out = await stack.kubectl(
        "get", "pods", "-l", f"ray.io/cluster={cluster},ray.io/node-type=worker", "-o", "json"
    )
    pods = json.loads(out)["items"]
    return sum(1 for pod in pods if not pod["metadata"].get("deletionTimestamp")) == count


async def test_create_get_scale_and_delete_a_cluster(tmp_path: Path) -> None:
    plugins = await plugin_dir()
    async with running_stack(tmp_path, "simulated") as stack:
        # It finds no Deployment named kuberay-operator, says so, and exits 1: KubeRay's own
        # check, not ours.
        code, out = await ray(stack, plugins, "version")
        assert "kubectl ray plugin version: v1.7.0" in out
        assert "KubeRay operator installation cannot be found" in out

        code, out = await ray(
            stack, plugins, "create", "cluster", "demo", "--worker-replicas", "1", "--wait"
        )
        assert code == 0, out
        assert (
            json.loads(await stack.kubectl("get", "raycluster", "demo", "-o", "json"))["status"][
                "state"
            ]
            == "ready"
        )

        code, out = await ray(stack, plugins, "get", "cluster")
        assert code == 0, out
        (row,) = [line.split() for line in out.splitlines() if line.startswith("demo ")]
        assert "ready" in row
        code, out = await ray(stack, plugins, "get", "nodes", "--ray-cluster", "demo")
        assert code == 0 and len([line for line in out.splitlines()[1:] if line]) == 2, out

        code, out = await ray(
            stack, plugins, "scale", "cluster", "demo", "-w", "default-group", "-r", "3"
        )
        assert code == 0, out
        assert await eventually(lambda: workers_are(stack, "demo", 3), within=120)
        code, out = await ray(stack, plugins, "get", "workergroup", "--ray-cluster", "demo")
        assert code == 0 and "default-group" in out, out

        auth = yaml.safe_load((KUBERAY_SAMPLES / "ray-cluster.auth.yaml").read_text())
        await stack.kubectl("apply", "-f", str(KUBERAY_SAMPLES / "ray-cluster.auth.yaml"))
        name = auth["metadata"]["name"]
        secret = await eventually(lambda: auth_token(stack, name), within=60)
        code, out = await ray(stack, plugins, "get", "token", name)
        assert code == 0 and out.strip() == secret, out

        code, out = await ray(stack, plugins, "delete", "demo", "--yes")
        assert code == 0, out

        async def gone() -> bool:
            left = await stack.kubectl("get", "rayclusters", "-o", "name")
            return "demo" not in left

        assert await eventually(gone, within=120)


async def auth_token(stack: LocalStack, cluster: str) -> str | None:
    """The token of the cluster's auth Secret, once our worker has made it."""
    out = await stack.kubectl("get", "secret", cluster, "-o", "json", check=False)
    if not out:
        return None
    encoded = json.loads(out)["data"]["auth_token"]
    return base64.b64decode(encoded).decode()


async def test_a_session_forwards_the_dashboard_on_the_real_control_plane(tmp_path: Path) -> None:
    plugins = await plugin_dir()
    async with running_stack(tmp_path, "simulated", control_plane="kubernetes") as stack:
        code, out = await ray(
            stack, plugins, "create", "cluster", "demo", "--worker-replicas", "0", "--wait"
        )
        assert code == 0, out
        session = await start(stack, plugins, "session", "demo")
        try:

            async def dashboard() -> dict[str, str] | None:
                with contextlib.suppress(httpx.HTTPError):
                    async with httpx.AsyncClient() as client:
                        answer = await client.get("http://127.0.0.1:8265/api/version", timeout=5)
                        return dict(answer.json()) if answer.status_code == 200 else None
                return None

            version = await eventually(dashboard, within=60)
            assert version["ray_version"]  # the head's (simulated) dashboard, through the forward
        finally:
            out = await stop(session)
        assert "Ray Dashboard: http://localhost:8265" in out

        # `job submit`: an InteractiveMode RayJob, its cluster, the `ray` CLI through a
        # forward, then the job id written back to the RayJob, which our workflow follows.
        # The plugin requires a working_dir; a remote one is not uploaded by the CLI, and the
        # simulated head ignores it.
        runtime_env = tmp_path / "runtime-env.yaml"
        runtime_env.write_text("working_dir: https://example.invalid/code.zip\n")
        code, out = await ray(
            stack,
            plugins,
            "job",
            "submit",
            "--name",
            "submitted",
            "--worker-replicas",
            "0",
            "--runtime-env",
            str(runtime_env),
            "--no-wait",
            "--",
            "sleep 2",
        )
        assert code == 0, out

        async def complete() -> dict[str, Any] | None:
            raw = await stack.kubectl("get", "rayjob", "submitted", "-o", "json")
            status = json.loads(raw).get("status") or {}
            return status if status.get("jobDeploymentStatus") == "Complete" else None

        done = await eventually(complete, within=120, message="the submitted RayJob Complete")
        assert done["jobStatus"] == "SUCCEEDED"


async def test_log_downloads_each_ray_pods_logs_with_real_ray(tmp_path: Path) -> None:
    """`log` reads each Ray pod's container log, then copies Ray's session logs out of the
    pod with `tar` through `exec`: the process runtime runs both."""
    plugins = await plugin_dir()
    async with running_stack(tmp_path, "process", control_plane="kubernetes") as stack:
        code, out = await ray(
            stack, plugins, "create", "cluster", "demo", "--worker-replicas", "0", "--wait"
        )
        assert code == 0, out
        target = tmp_path / "logs"
        target.mkdir()  # the plugin writes into a folder that exists
        code, out = await ray(stack, plugins, "log", "demo", "--out-dir", str(target))
        assert code == 0, out
        (head,) = [path for path in target.iterdir() if path.is_dir()]
        assert head.name.startswith("demo-head-")
        assert (head / "stdout.log").is_file()
        copied = {path.name for path in head.rglob("*") if path.is_file()}
        assert "gcs_server.out" in copied, sorted(copied)
