"""Services over the process kubelet's pod network: DNS names, ClusterIPs, Jobs, the proxy.

These run real processes in per-pod network namespaces (part A's kubelet), so they need root
and are marked slow. One pod serves HTTP; a Job's pod fetches it through the Service's DNS
name and its ClusterIP, so the Job completing shows both paths work from inside a pod.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client

from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl, api_client
from tests.eventually import eventually

pytestmark = pytest.mark.slow
JsonObject = dict[str, Any]
IMAGE = "rayproject/ray:2.41.0"


@pytest_asyncio.fixture
async def pod_cluster(tmp_path: Path) -> AsyncIterator[DevCluster]:
    kubelet_module = pytest.importorskip("devcluster.kubelet")
    try:
        kubelet = kubelet_module.make_kubelet("process", tmp_path, backoff=1.0)
    except kubelet_module.RuntimeUnavailable as err:
        pytest.skip(str(err))
    cluster = DevCluster(tmp_path, controllers=[kubelet], pod_network=True, job_backoff=0)
    await cluster.start()
    yield cluster
    await cluster.stop()


def web_pod() -> JsonObject:
    container = {
        "name": "web",
        "image": IMAGE,
        "command": ["python", "-m", "http.server", "8080"],
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
    }
    return {
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [container]},
    }


def fetch_job(urls: list[str]) -> JsonObject:
    script = (
        "import sys, urllib.request\n"
        "for url in sys.argv[1:]: urllib.request.urlopen(url, timeout=5).read()"
    )
    container = {"name": "fetch", "image": IMAGE, "command": ["python", "-c", script, *urls]}
    return {
        "metadata": {"name": "fetch"},
        "spec": {
            "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


async def test_service_dns_and_cluster_ip_reach_a_pod_from_a_job(
    pod_cluster: DevCluster, tmp_path: Path
) -> None:
    api = await api_client(pod_cluster)
    kubectl = Kubectl(pod_cluster.kubeconfig_path, tmp_path / "cache")
    try:
        core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
        service = {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
        }
        created = await core.create_namespaced_service("default", service)
        await core.create_namespaced_pod("default", web_pod())
        waited = await kubectl.run("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        assert waited.code == 0, waited.err
        ip = created.spec.cluster_ip
        hosts = (tmp_path / "net" / "hosts").read_text()
        assert f"{ip}\tweb.default.svc.cluster.local" in hosts
        # The bare name too, from a pod of the Service's namespace (KubeRay's `redis:6379`).
        urls = [
            "http://web.default.svc.cluster.local/",
            f"http://{ip}/",
            "http://web.default/",
            "http://web/",
        ]
        await batch.create_namespaced_job("default", fetch_job(urls))
        done = await kubectl.run("wait", "--for=condition=Complete", "job/fetch", "--timeout=60s")
        logs = await kubectl.run("logs", "-l", "job-name=fetch")
        assert done.code == 0, f"{done.err} {logs.out} {logs.err}"
        raw = "/api/v1/namespaces/default/services/web:80/proxy/"
        listing = await kubectl.ok("get", "--raw", raw)
        assert "Directory listing" in listing
    finally:
        await api.close()


def ray_head() -> JsonObject:
    command = (
        "ray start --head --block --dashboard-host=0.0.0.0 --num-cpus=1 "
        "--include-dashboard=true --disable-usage-stats"
    )
    container = {
        "name": "ray-head",
        "image": IMAGE,
        "command": ["bash", "-c", command],
        "ports": [
            {"name": "gcs", "containerPort": 6379},
            {"name": "dashboard", "containerPort": 8265},
        ],
        "readinessProbe": {"tcpSocket": {"port": 8265}, "periodSeconds": 1},
    }
    return {
        "metadata": {"name": "head", "labels": {"ray": "head"}},
        "spec": {"containers": [container]},
    }


async def test_ray_job_submitted_from_a_job_and_dashboard_through_the_proxy(
    pod_cluster: DevCluster, tmp_path: Path
) -> None:
    api = await api_client(pod_cluster)
    kubectl = Kubectl(pod_cluster.kubeconfig_path, tmp_path / "cache")
    try:
        core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
        ports = [{"name": "gcs", "port": 6379}, {"name": "dashboard", "port": 8265}]
        service = {
            "metadata": {"name": "ray-head-svc"},
            "spec": {
                "clusterIP": "None",
                "publishNotReadyAddresses": True,
                "selector": {"ray": "head"},
                "ports": ports,
            },
        }
        await core.create_namespaced_service("default", service)
        await core.create_namespaced_pod("default", ray_head())
        waited = await kubectl.run("wait", "--for=condition=Ready", "pod/head", "--timeout=90s")
        assert waited.code == 0, waited.err
        raw = "/api/v1/namespaces/default/services/ray-head-svc:dashboard/proxy/api/version"

        async def version() -> str | None:
            # The dashboard port opens before its API modules load: 404 until then.
            result = await kubectl.run("get", "--raw", raw)
            return json.loads(result.out).get("ray_version") if result.code == 0 else None

        assert await eventually(version, within=90)
        address = "http://ray-head-svc.default.svc.cluster.local:8265"
        submit = f"ray job submit --address {address} -- python -c 'print(6 * 7)'"
        container = {"name": "submit", "image": IMAGE, "command": ["bash", "-c", submit]}
        job = {
            "metadata": {"name": "submit"},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        }
        await batch.create_namespaced_job("default", job)
        done = await kubectl.run(
            "wait", "--for=condition=Complete", "job/submit", "--timeout=120s", seconds=130
        )
        logs = await kubectl.run("logs", "-l", "job-name=submit")
        assert done.code == 0, f"{done.err} {logs.out} {logs.err}"
        # `ray job submit` waits for the Ray job and exits non-zero if it fails.
        finished = await batch.read_namespaced_job("submit", "default")
        assert finished.status.succeeded == 1
    finally:
        await api.close()
