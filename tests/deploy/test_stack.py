"""The worker and the bridge, as processes with the manifests' settings and identities, run a
RayCluster and a RayJob end to end on a real Kubernetes control plane.

This is the deployment as a cluster would run it, minus the pods of the two components: the
environment each process gets is read from the rendered kustomize base with its
`dashboard-proxy` component (its ConfigMap and env, and the container's args: the processes
sit outside the cluster network, so they reach the Ray dashboards through the API server's
proxy, which the component grants), and each process authenticates as its ServiceAccount of
deploy/ with a token (`kuberay_temporal.service_accounts`), so RBAC holds it to deploy/'s
rules. Only what says *where* things are is replaced: the Temporal address (a dev server
started for this test, so the manifests' task queue `kuberay` is ours alone) and the health
and metrics ports (two processes on one host); their addresses, which the manifests take from
the pod's IP, keep their default, loopback. The control plane is a real v1.37 one with
devcluster's kubelet as its node, simulated runtime: pods turn Running and Ready without
processes, and a head's dashboard is devcluster's Ray simulator, reached on the head's pod IP
as the API server's proxy dials it. With the manifests' settings the processes log JSON lines
and serve Prometheus metrics, which the test reads as a log pipeline and Prometheus would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.kube import client as kube
from devcluster.control_plane.processes import ControlPlane
from devcluster.kubelet import network
from devcluster.node import NodeAgent, NodeConfig
from kuberay_temporal.binaries import find_binary, temporal_cli
from kuberay_temporal.service_accounts import deploy_identities
from tests.deploy.rendering import by_kind, container, kustomize_overlay_docs, settings_env
from tests.eventually import eventually
from tests.real_cluster import running_control_plane
from tests.reference import REPO_ROOT
from tests.time_skipping import SERVER_STARTUP
from devcluster.ports import free_port
from worker.search_attributes import ALL_KEYS

COMPONENTS = ("dashboard-proxy",)
"""The kustomize components of a deployment whose worker is outside the cluster network."""

pytestmark = [pytest.mark.timeout(420), pytest.mark.kubernetes]


@pytest_asyncio.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        dev_server_startup_timeout=SERVER_STARTUP,
        search_attributes=ALL_KEYS,
        data_converter=pydantic_data_converter,
    )
    yield env
    await env.shutdown()


@asynccontextmanager
async def running_cluster(state_dir: Path) -> AsyncIterator[ControlPlane]:
    """A control plane of its own on the pod bridge, and devcluster's simulated node."""
    async with running_control_plane(state_dir / "control-plane", network.HOST_IP) as plane:
        config = NodeConfig(
            api_url=plane.url,
            pki_dir=plane.certificates.dir,
            state_dir=state_dir / "node",
            runtime="simulated",
            kubelet_port=0,
        )
        async with NodeAgent(config):
            yield plane


async def _start(
    component: str, overrides: dict[str, str], log: Path
) -> asyncio.subprocess.Process:
    docs = kustomize_overlay_docs(*COMPONENTS)
    env = settings_env(docs, component) | overrides
    args = container(by_kind(docs, "Deployment")[f"kuberay-temporal-{component}"])["args"]
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        *args,
        env=base | env,
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=asyncio.subprocess.STDOUT,
    )


async def _status(port: int, path: str) -> int:
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}{path}") as response,
        ):
            return response.status
    except aiohttp.ClientError:
        return 0


async def _kubectl(kubeconfig: Path, *args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        str(find_binary("kubectl")), f"--kubeconfig={kubeconfig}", *args
    )
    assert await asyncio.wait_for(process.wait(), 60) == 0


async def test_worker_and_bridge_processes_run_a_raycluster_and_a_rayjob(
    tmp_path: Path, temporal: WorkflowEnvironment
) -> None:
    async with running_cluster(tmp_path) as plane:
        config = plane.kubeconfig_path  # the administrator's, for the test's own steps
        await _kubectl(config, "apply", "-f", str(REPO_ROOT / "deploy" / "crds"))
        identities = await deploy_identities(config, tmp_path / "identities", components=COMPONENTS)
        kubeconfigs = {"worker": identities.worker, "bridge": identities.bridge}
        ports = {"worker": free_port(), "bridge": free_port()}
        metrics_ports = {"worker": free_port(), "bridge": free_port()}
        where = {"TEMPORAL_ADDRESS": temporal.client.service_client.config.target_host}
        processes = {
            name: await _start(
                name,
                where
                | {
                    "KUBECONFIG": str(kubeconfigs[name]),
                    "KUBERAY_TEMPORAL_HEALTH_PORT": str(port),
                    "KUBERAY_TEMPORAL_METRICS_PORT": str(metrics_ports[name]),
                },
                tmp_path / name,
            )
            for name, port in ports.items()
        }
        client = await kube.connect(str(config))
        try:
            # Ready means polling (worker) and every kind listed (bridge), as the probes see it.
            for name, port in ports.items():
                ready = await _eventually_status(port, "/readyz", 200, within=90)
                assert ready, f"{name} never ready; log:\n{(tmp_path / name).read_text()}"
                assert await _status(port, "/healthz") == 200
            await _kubectl(config, "apply", "-f", str(REPO_ROOT / "samples" / "raycluster.yaml"))

            async def head_pod() -> list[kube.JSON]:
                selector = "ray.io/cluster=raycluster-mini,ray.io/node-type=head"
                return await client.list_all(kube.PODS, "default", selector)

            await eventually(head_pod, within=60, message="head pod")

            async def listed() -> list[str]:
                query = "RayKind='RayCluster' AND RayName='raycluster-mini'"
                return [w.id async for w in temporal.client.list_workflows(query)]

            (workflow_id,) = await eventually(listed, within=30, message="listed workflow")
            assert workflow_id.startswith("raycluster/default/raycluster-mini/")

            # KubeRay's metrics: the bridge lists the state, the worker timed the
            # provisioning when its status write set RayClusterProvisioned.
            async def provisioned() -> str | None:
                text = await _text(metrics_ports["worker"], "/metrics")
                wanted = 'kuberay_cluster_provisioned_duration_seconds{name="raycluster-mini"'
                return text if wanted in text else None

            worker_metrics = await eventually(provisioned, within=60, message="provisioning")
            assert "temporal_local_activity_execution_latency_count{" in worker_metrics
            bridge_metrics = await _text(metrics_ports["bridge"], "/metrics")
            uid = workflow_id.rsplit("/", 1)[1]
            info = f'name="raycluster-mini",namespace="default",uid="{uid}",owner_kind="None"'
            assert f"kuberay_cluster_info{{{info}}} 1\n" in bridge_metrics
            assert "temporal_" in bridge_metrics  # the bridge's client calls

            # A RayJob end to end: its cluster, the HTTPMode submission, Complete, cleanup.
            sample = REPO_ROOT / "samples" / "rayjob.http-mode.yaml"
            await _kubectl(config, "apply", "-f", str(sample))

            async def complete() -> kube.JSON | None:
                job = await client.get_or_none(kube.RAYJOBS, "default", "rayjob-http-mode")
                status = (job or {}).get("status") or {}
                return status if status.get("jobDeploymentStatus") == "Complete" else None

            done = await eventually(complete, within=120, message="the RayJob Complete")
            assert done["jobStatus"] == "SUCCEEDED" and done["succeeded"] == 1

            async def cluster_deleted() -> bool:  # shutdownAfterJobFinishes
                found = await client.get_or_none(
                    kube.RAYCLUSTERS, "default", done["rayClusterName"]
                )
                return found is None

            await eventually(cluster_deleted, within=60, message="the job's cluster deleted")
        finally:
            await client.close()
            for process in processes.values():
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes.values():
                try:
                    await asyncio.wait_for(process.wait(), 40)
                except TimeoutError:
                    process.kill()
                    await process.wait()
    # A log pipeline reads every line as JSON; lines about a CR name it.
    for name in ports:
        lines = (tmp_path / name).read_text().splitlines()
        assert lines, name
        for line in lines:
            fields = json.loads(line)
            if "workflow_id" in fields and fields["workflow_id"].startswith("raycluster/"):
                assert fields["kind"] == "RayCluster" and fields["name"] == "raycluster-mini"


async def _text(port: int, path: str) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        response.raise_for_status()
        return await response.text()


async def _eventually_status(port: int, path: str, status: int, within: float) -> bool:
    async def probe() -> bool:
        return await _status(port, path) == status

    try:
        await eventually(probe, within=within, message=f"{path} {status}")
    except AssertionError:
        return False
    return True
