"""The process kubelet driven by real kubectl: real Ray heads side by side, probes, deletion.

Needs root (network namespaces); skipped otherwise. Every pod is deleted by the test and the
fixture stops the cluster, which kills whatever is left; the tests check the process table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devcluster.kubelet import network
from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl
from tests.devcluster.kubelet.conftest import pod_json, pod_manifest
from tests.eventually import eventually

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")


def _alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def _netns_pids(uid: str) -> list[int]:
    result = subprocess.run(
        ["ip", "netns", "pids", network.netns_name(uid)], capture_output=True, text=True
    )
    return [int(p) for p in result.stdout.split()]


@pytest.mark.slow
async def test_two_ray_clusters_side_by_side(node: tuple[DevCluster, Kubectl]) -> None:
    _, kubectl = node
    head = (
        "ulimit -n 65536; ray start --head --num-cpus=1 --include-dashboard=false "
        "--dashboard-agent-listen-port=52365 --block"
    )
    probe = {
        "exec": {"command": ["bash", "-c", "ray health-check --address 127.0.0.1:6379"]},
        "periodSeconds": 2,
        "timeoutSeconds": 10,
    }
    for name in ("head-a", "head-b"):
        await kubectl.ok("apply", "-f", "-", stdin=pod_manifest(name, head, readinessProbe=probe))
    for name in ("head-a", "head-b"):
        await kubectl.ok("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s")
    pod_a = await pod_json(kubectl, "head-a")
    ip_a = pod_a["status"]["podIP"]  # type: ignore[index]
    ip_b = (await pod_json(kubectl, "head-b"))["status"]["podIP"]  # type: ignore[index]
    assert ip_a != ip_b and str(ip_a).startswith("10.244.")
    worker = f"ray start --address={ip_a}:6379 --num-cpus=1 --block"
    await kubectl.ok("apply", "-f", "-", stdin=pod_manifest("worker-a", worker))

    await eventually(lambda: _ray_nodes(ip_a) == 2, within=90, message="worker joining head-a")
    assert _ray_nodes(ip_b) == 1
    logs = await kubectl.ok("logs", "head-a")
    assert "Ray runtime started" in logs
    uid = str(pod_a["metadata"]["uid"])  # type: ignore[index]
    in_pod = _netns_pids(uid)
    assert len(in_pod) > 3  # ray start, gcs_server, raylet, ...
    await kubectl.ok("delete", "pod", "worker-a", "head-a", "head-b", "--timeout=60s")
    assert _alive(in_pod) == []
    assert _netns_pids(uid) == []


def _ray_nodes(ip: str) -> int:
    # `ray status` asks the GCS on the head pod's IP from the host (no dashboard needed).
    ray = str(Path(sys.executable).parent / "ray")
    result = subprocess.run(
        [ray, "status", "--address", f"{ip}:6379"], capture_output=True, text=True, timeout=60
    )
    active = (
        result.stdout.split("Active:")[-1].split("Pending:")[0]
        if "Active:" in result.stdout
        else ""
    )
    return active.count("node_")


async def test_probes_restart_and_logs(node: tuple[DevCluster, Kubectl]) -> None:
    _, kubectl = node
    # Ready while /tmp/ready exists; live until /tmp/dead appears (a fresh /tmp per restart).
    command = (
        "echo attempt-start; touch /tmp/ready; while [ ! -f /tmp/flip ]; do sleep 0.2; done; "
        "rm /tmp/ready; sleep 1; touch /tmp/dead; exec sleep 1000"
    )

    def exec_probe(test: str) -> dict[str, object]:
        return {
            "exec": {"command": ["sh", "-c", test]},
            "periodSeconds": 1,
            "failureThreshold": 1,
        }

    pod = pod_manifest(
        "probed",
        command,
        readinessProbe=exec_probe("test -f /tmp/ready"),
        livenessProbe=exec_probe("test ! -f /tmp/dead"),
    )
    await kubectl.ok("apply", "-f", "-", stdin=pod)
    await kubectl.ok("wait", "--for=condition=Ready", "pod/probed", "--timeout=30s")
    uid = str((await pod_json(kubectl, "probed"))["metadata"]["uid"])  # type: ignore[index]
    tmp = node[0].state_dir / "pods" / uid / "containers" / "main" / "tmp-0"
    (tmp / "flip").touch()  # the container's /tmp, seen from the host
    await kubectl.ok("wait", "--for=condition=Ready=false", "pod/probed", "--timeout=30s")

    async def restarted() -> bool:
        pod = await pod_json(kubectl, "probed")
        statuses = pod.get("status", {}).get("containerStatuses") or [{}]  # type: ignore[attr-defined]
        return bool(statuses[0].get("restartCount", 0) >= 1)

    await eventually(restarted, within=30, message="liveness restart")
    status = (await pod_json(kubectl, "probed"))["status"]["containerStatuses"][0]  # type: ignore[index]
    assert status["lastState"]["terminated"]["exitCode"] == 137  # PID 1 (sleep) ignores SIGTERM
    assert "attempt-start" in await kubectl.ok("logs", "probed", "--previous")
    await kubectl.ok("wait", "--for=condition=Ready", "pod/probed", "--timeout=30s")  # fresh /tmp
    await kubectl.ok("delete", "pod", "probed", "--grace-period=1", "--timeout=30s")
    assert _netns_pids(uid) == []


REDIS_CONF = "dir /data\nport 6379\nappendonly yes\npidfile /data/redis-6379.pid\n"


@pytest.mark.slow
async def test_kuberays_external_redis_runs_in_the_images_data_directory(
    node: tuple[DevCluster, Kubectl],
) -> None:
    """KubeRay's ray-cluster.external-redis.yaml Redis: `dir /data`, as the image has it."""
    _, kubectl = node
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "redis-config"},
        "data": {"redis.conf": REDIS_CONF},
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(config))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "redis"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "redis",
                    "image": "redis:7.4.0",
                    "command": ["sh", "-c", "redis-server /usr/local/etc/redis/redis.conf"],
                    "volumeMounts": [
                        {
                            "name": "config",
                            "mountPath": "/usr/local/etc/redis/redis.conf",
                            "subPath": "redis.conf",
                        }
                    ],
                }
            ],
            "volumes": [{"name": "config", "configMap": {"name": "redis-config"}}],
        },
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(pod))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/redis", "--timeout=30s")
    uid = str((await pod_json(kubectl, "redis"))["metadata"]["uid"])  # type: ignore[index]
    data = node[0].state_dir / "pods" / uid / "image" / "redis" / "data"
    await eventually(lambda: (data / "redis-6379.pid").exists(), message="Redis's pid file")
    status = (await pod_json(kubectl, "redis"))["status"]["containerStatuses"][0]  # type: ignore[index]
    assert status["restartCount"] == 0 and "running" in status["state"]
    await kubectl.ok("delete", "pod", "redis", "--grace-period=1", "--timeout=30s")


@pytest.mark.slow
async def test_a_redis_image_run_as_it_is_serves_other_pods_without_a_password(
    node: tuple[DevCluster, Kubectl],
) -> None:
    """KubeRay's e2e GCS fault-tolerance tests run `redis:7.4` with no command or password."""
    _, kubectl = node
    server = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "open-redis"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "redis", "image": "redis:7.4"}],
        },
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(server))
    await kubectl.ok("wait", "--for=condition=Ready", "pod/open-redis", "--timeout=30s")
    address = str((await pod_json(kubectl, "open-redis"))["status"]["podIP"])  # type: ignore[index]
    client = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "redis-client"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "cli",
                    "image": "redis:7.4",
                    "command": ["redis-cli", "-h", address, "PING"],
                }
            ],
        },
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(client))
    await kubectl.ok(
        "wait",
        "--for=jsonpath={.status.phase}=Succeeded",
        "pod/redis-client",
        "--timeout=30s",
    )

    # From another pod's address: protected mode would answer "DENIED Redis is running...".
    assert (await kubectl.ok("logs", "redis-client")).strip() == "PONG"
    await kubectl.ok("delete", "pod", "open-redis", "redis-client", "--grace-period=1")


@pytest.mark.slow
async def test_a_ray_images_login_shell_finds_ray(node: tuple[DevCluster, Kubectl]) -> None:
    """KubeRay's autoscaler-v2-overwrite-cmd sample starts its autoscaler with `bash -lc`."""
    _, kubectl = node
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "login"},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "autoscaler",
                    "image": "rayproject/ray:2.52.0",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": ["command -v ray && exec sleep 3600"],
                }
            ],
        },
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(pod))

    async def running_or_ended() -> str | None:
        state = json.dumps(await pod_json(kubectl, "login"))
        return state if '"running"' in state or '"terminated"' in state else None

    state = await eventually(running_or_ended, message="the container started")
    assert '"running"' in state, state  # `ray` was found, or bash ended with 127
    await kubectl.ok("delete", "pod", "login", "--grace-period=1", "--timeout=30s")


def _bridge_exists() -> bool:
    shown = subprocess.run(["ip", "link", "show", network.BRIDGE_NAME], capture_output=True)
    return shown.returncode == 0


def test_a_stopping_devcluster_leaves_the_bridge_to_a_running_one() -> None:
    """Regression: a devcluster that stopped while another had no pod deleted the shared bridge
    (and its ClusterIPs), so the other's next pod failed with "krt0 ... does not exist"."""
    claim = (
        "from devcluster.kubelet import network; network.ensure_bridge(); network.claim_bridge()"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", f"{claim}; print('claimed', flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "claimed"
        network.ensure_bridge()
        network.claim_bridge()
        network.remove_leftovers()  # this devcluster stops; the other runs on
        assert _bridge_exists()
    finally:
        other.kill()
        other.wait()
    network.remove_leftovers()  # a later stop cleans the dead one's claim up
    claims = [p.name for p in Path("/run/devcluster-netns").iterdir()]
    assert f"bridge-{other.pid}" not in claims and f"bridge-{os.getpid()}" not in claims


def _bridge_mac() -> str:
    shown = subprocess.run(
        ["ip", "-o", "link", "show", network.BRIDGE_NAME], capture_output=True, text=True
    )
    return shown.stdout.split("link/ether ")[1].split()[0]


def test_the_bridge_keeps_its_mac_while_pods_come_and_go() -> None:
    """Regression: the bridge took the lowest MAC of its ports, so it changed whenever a pod's
    veth came or went, and pods' packets to the node (the autoscaler's connection to the API
    server through its ClusterIP) were dropped until their ARP entry for it expired."""
    network.ensure_bridge()
    network.claim_bridge()
    before = _bridge_mac()
    port = f"{network.VETH_PREFIX}mactest"
    link = ["ip", "link", "add", port, "address", "00:00:5e:00:53:01", "type", "veth"]
    subprocess.run([*link, "peer", "name", f"{port}p"], check=True)
    try:
        subprocess.run(["ip", "link", "set", port, "master", network.BRIDGE_NAME], check=True)
        assert _bridge_mac() == before  # a port with a lower MAC joined
    finally:
        subprocess.run(["ip", "link", "delete", port], check=True)
        network.remove_leftovers()
    assert before == network.BRIDGE_MAC
