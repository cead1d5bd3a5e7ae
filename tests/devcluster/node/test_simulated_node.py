"""devcluster's kubelet as the node of a real v1.37.2 API server, with the simulated runtime.

The node registers as a kubelet does (the scheduler places pods only on a Ready node with
room), keeps its Lease fresh, runs what the real scheduler binds to it, writes the status
`kubectl get pods` prints, and finishes graceful deletions; the kubelet API refuses callers
other than the API server.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from devcluster.control_plane import pki
from devcluster.control_plane.processes import ControlPlane
from devcluster.kubelet import network
from devcluster.kubelet.envs import quantity
from devcluster.node import NodeAgent
from devcluster.node.client import CONNECTIONS
from tests.devcluster.conftest import Kubectl
from tests.devcluster.node.conftest import get_json, pod_statuses, running_node
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(180)


@pytest_asyncio.fixture(scope="module")
async def node(
    bridged_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[NodeAgent]:
    state = tmp_path_factory.mktemp("simulated-node")
    async with running_node(bridged_control_plane, state, "simulated") as agent:
        yield agent


async def test_the_node_registers_ready_and_renews_its_lease(
    node: NodeAgent, admin: Kubectl
) -> None:
    found = await get_json(admin, "node", "devcluster")
    status = found["status"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {
        "Ready": "True",
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
    }
    assert status["addresses"] == [{"type": "InternalIP", "address": network.HOST_IP}]
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.2"
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == node.kubelet_port
    assert quantity(status["allocatable"]["pods"]) >= 110
    assert found["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    first = await get_json(admin, "lease", "devcluster", "-n", "kube-node-lease")
    assert first["spec"]["holderIdentity"] == "devcluster"

    async def renewed() -> bool:
        lease = await get_json(admin, "lease", "devcluster", "-n", "kube-node-lease")
        return bool(lease["spec"]["renewTime"] != first["spec"]["renewTime"])

    await eventually(renewed, within=30, message="the Lease renewed")


async def test_the_lease_renews_while_pod_writes_fill_the_node_s_connections(
    node: NodeAgent, admin: Kubectl
) -> None:
    # Watches read whole hold a connection each for their 40 s: more of them than the pod
    # writes' client has connections leave it none for anything else.
    writes = node._writes
    assert writes is not None
    watch = {"watch": "true", "timeoutSeconds": "40", "fieldSelector": "spec.nodeName=devcluster"}
    holding = [
        asyncio.create_task(writes.client.request("GET", "/api/v1/pods", params=watch))
        for _ in range(CONNECTIONS + 8)
    ]
    try:
        first = await get_json(admin, "lease", "devcluster", "-n", "kube-node-lease")

        async def renewed() -> bool:
            lease = await get_json(admin, "lease", "devcluster", "-n", "kube-node-lease")
            return bool(lease["spec"]["renewTime"] != first["spec"]["renewTime"])

        await eventually(renewed, within=25, message="the Lease renewed behind busy pod writes")
        done = [t.exception() or t.result() for t in holding if t.done()]
        assert not done  # the pod writes' pool was still full
    finally:
        for task in holding:
            task.cancel()
        await asyncio.gather(*holding, return_exceptions=True)


async def test_a_deployments_pods_run_and_a_deleted_pod_goes(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    await admin.ok("create", "deployment", "web", "--image=nginx", "--replicas=3", "-n", namespace)

    async def all_running() -> dict[str, str] | None:
        statuses = await pod_statuses(admin, namespace)
        return statuses if len(statuses) == 3 and set(statuses.values()) == {"Running"} else None

    running = await eventually(all_running, within=60, message="three Running pods")
    pods = await get_json(admin, "pods", "-n", namespace)
    for pod in pods["items"]:
        assert pod["spec"]["nodeName"] == "devcluster"
        assert pod["status"]["hostIP"] == network.HOST_IP
        assert pod["status"]["podIP"].startswith("10.244.")

    async def ready_without_reason() -> bool:
        # Ready was False with ContainersNotReady first; the patch that made it True must
        # clear that reason, as a kubelet's status does.
        items = (await get_json(admin, "pods", "-n", namespace))["items"]
        ready = [c for p in items for c in p["status"]["conditions"] if c["type"] == "Ready"]
        return len(ready) == 3 and all(c["status"] == "True" and "reason" not in c for c in ready)

    await eventually(ready_without_reason, within=60, message="Ready, with no stale reason")
    victim = sorted(running)[0]
    # Graceful deletion ends only when the node deletes the pod with grace 0.
    await admin.ok("delete", "pod", victim, "-n", namespace, "--wait=true", "--timeout=60s")
    replaced = await eventually(all_running, within=60, message="a replacement Running")
    assert victim not in replaced


async def test_the_kubelet_api_admits_only_the_api_server(
    node: NodeAgent, bridged_control_plane: ControlPlane
) -> None:
    keys = bridged_control_plane.certificates
    url = f"https://{network.HOST_IP}:{node.kubelet_port}/healthz"

    async def status_as(identity: pki.ClientIdentity) -> int:
        pair = keys.client(identity)
        context = ssl.create_default_context(cafile=str(keys.ca.cert))
        context.load_cert_chain(str(pair.cert), str(pair.key))
        async with aiohttp.ClientSession() as http, http.get(url, ssl=context) as answer:
            return answer.status

    assert await status_as(pki.APISERVER_TO_KUBELET) == 200
    assert await status_as(pki.node_identity("devcluster")) == 403
    anonymous = ssl.create_default_context(cafile=str(keys.ca.cert))
    with pytest.raises(aiohttp.ClientError):
        async with aiohttp.ClientSession() as http, http.get(url, ssl=anonymous) as answer:
            await answer.read()
