"""devcluster's kubelet as the node of a real API server, running pods as real processes.

What `kubectl get pods` prints comes from the status the node writes (CrashLoopBackOff
between restarts, Completed, Error); `kubectl logs` goes API server -> kubelet API -> the
node's log capture; and a pod sees the cluster as in-cluster clients expect: Service names
and ClusterIPs that answer, Service environment variables, and the `kubernetes` Service with
a token the node minted for it; Gateways the node serves as its own identity route to pods.
Needs root (network namespaces), as the process runtime does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from devcluster.control_plane.processes import ControlPlane
from devcluster.networking.gateway import LISTENER_PORTS_ANNOTATION
from devcluster.node import NodeAgent
from devcluster.node.gateways import gateway_rbac
from devcluster.pod_table import pod_cells
from kuberay_temporal.stand_in_crds import gateway_api_crds
from tests.devcluster.conftest import Kubectl
from tests.devcluster.node.conftest import get_json, pod_statuses, running_node
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
JsonObject = dict[str, Any]
SHELL_IMAGE = "busybox"  # no rule maps it: the host's /bin/sh
PYTHON_IMAGE = "rayproject/ray:2.60.0"  # the venv's python (and Ray)


@pytest_asyncio.fixture(scope="module")
async def node(
    bridged_control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[NodeAgent]:
    state = tmp_path_factory.mktemp("process-node")
    async with running_node(bridged_control_plane, state, "process") as agent:
        yield agent


def pod(name: str, script: str, restart: str, image: str = SHELL_IMAGE) -> str:
    """A one-container pod running `script` in sh, as JSON for `kubectl apply -f -`."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "command": ["sh", "-c", script]}],
        },
    }
    return json.dumps(body)


async def test_kubectl_shows_crash_loops_completions_and_errors(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    for manifest in (
        pod("crashing", "exit 1", "Always"),
        pod("done", "exit 0", "Never"),
        pod("failing", "exit 1", "Never"),
    ):
        await admin.ok("apply", "-n", namespace, "-f", "-", stdin=manifest)
    wanted = {"crashing": "CrashLoopBackOff", "done": "Completed", "failing": "Error"}

    seen: dict[str, str] = {}

    async def as_wanted() -> bool:
        seen.update(await pod_statuses(admin, namespace))
        return seen == wanted

    try:
        await eventually(as_wanted, within=60, message=f"pods showing {wanted}")
    except AssertionError as err:
        raise AssertionError(f"{err}; they show {seen}") from None
    crashing = await get_json(admin, "pod", "crashing", "-n", namespace)
    container = crashing["status"]["containerStatuses"][0]
    assert container["restartCount"] >= 1
    assert container["lastState"]["terminated"]["exitCode"] == 1
    failing = await get_json(admin, "pod", "failing", "-n", namespace)
    assert failing["status"]["phase"] == "Failed"
    # devcluster's own pod printer reads the same statuses as kube-apiserver's.
    printed = await admin.ok("get", "pods", "done", "failing", "-n", namespace, "--no-headers")
    for line in printed.splitlines():
        name, ready, status = line.split()[:3]
        pod_json = await get_json(admin, "pod", name, "-n", namespace)
        assert pod_cells(pod_json)[:3] == [name, ready, status]

    async def recorded() -> set[tuple[str, str]] | None:
        events = (await get_json(admin, "events", "-n", namespace))["items"]
        seen = {
            (e["involvedObject"]["name"], e["reason"])
            for e in events
            if e["source"].get("component") == "kubelet"
        }
        return seen if ("crashing", "BackOff") in seen else None

    seen = await eventually(recorded, within=30, message="the kubelet's Events")
    assert {("crashing", "Started"), ("done", "Started"), ("failing", "Created")} <= seen


async def test_kubectl_logs_reach_the_nodes_log_capture(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    await admin.ok(
        "apply", "-n", namespace, "-f", "-", stdin=pod("hello", "echo hello; echo world", "Never")
    )

    async def completed() -> bool:
        return (await pod_statuses(admin, namespace)).get("hello") == "Completed"

    await eventually(completed, within=60, message="the pod Completed")
    assert await admin.ok("logs", "hello", "-n", namespace) == "hello\nworld\n"
    assert await admin.ok("logs", "hello", "-n", namespace, "--tail=1") == "world\n"
    # Following streams until the container ends: the waiting is the container's own.
    await admin.ok(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=pod("slow", "echo a; sleep 2; echo b", "Never"),
    )

    async def started() -> bool:
        return (await pod_statuses(admin, namespace)).get("slow") in ("Running", "Completed")

    await eventually(started, within=60, message="the slow pod started")
    assert await admin.ok("logs", "-f", "slow", "-n", namespace) == "a\nb\n"


CLIENT = """
import json, os, socket, ssl, sys, urllib.request
account = "/var/run/secrets/kubernetes.io/serviceaccount"
ns = open(f"{account}/namespace").read()
token = open(f"{account}/token").read()
def fetch(url):
    return urllib.request.urlopen(url, timeout=5).read().decode()
found = {
    "by_name": fetch(f"http://web.{ns}.svc.cluster.local/"),
    "by_ip": fetch(f"http://{os.environ['WEB_SERVICE_HOST']}/"),
    "ns_name": fetch(f"http://web.{ns}/"),
    "idle": socket.gethostbyname(f"idle.{ns}.svc.cluster.local"),
    "env": {k: v for k, v in os.environ.items() if k.startswith(("KUBERNETES_SERVICE", "WEB_"))},
}
context = ssl.create_default_context(cafile=f"{account}/ca.crt")
request = urllib.request.Request(
    "https://kubernetes.default.svc/api", headers={"Authorization": f"Bearer {token}"}
)
found["api"] = json.load(urllib.request.urlopen(request, context=context, timeout=5))
print(json.dumps(found))
"""


def service(name: str, selector: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {
                "selector": {"app": selector},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080}],
            },
        }
    )


async def test_a_pod_reaches_services_by_name_and_cluster_ip_and_the_api(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    serve = "echo web > index.html; exec python -m http.server 8080"
    web = json.loads(pod("web", serve, "Always", PYTHON_IMAGE))
    web["spec"]["containers"][0]["readinessProbe"] = {
        "tcpSocket": {"port": 8080},
        "periodSeconds": 1,
    }
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=json.dumps(web))
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=service("web", "web"))
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=service("idle", "nothing"))

    async def web_ready() -> bool:
        found = await get_json(admin, "pod", "web", "-n", namespace)
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in found["status"].get("conditions", [])
        )

    await eventually(web_ready, within=60, message="the web pod Ready")
    client = json.loads(pod("client", 'exec python -c "$SCRIPT"', "Never", PYTHON_IMAGE))
    client["spec"]["containers"][0]["env"] = [{"name": "SCRIPT", "value": CLIENT}]
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=json.dumps(client))

    async def ended() -> str | None:
        phase = (await get_json(admin, "pod", "client", "-n", namespace))["status"].get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    phase = await eventually(ended, within=90, message="the client pod ended")
    output = await admin.ok("logs", "client", "-n", namespace)
    assert phase == "Succeeded", output
    found = json.loads(output.strip().splitlines()[-1])
    web_service = await get_json(admin, "service", "web", "-n", namespace)
    idle_service = await get_json(admin, "service", "idle", "-n", namespace)
    assert found["by_name"] == found["by_ip"] == found["ns_name"] == "web\n"
    assert found["idle"] == idle_service["spec"]["clusterIP"]  # resolves without endpoints
    env = found["env"]
    assert env["WEB_SERVICE_HOST"] == web_service["spec"]["clusterIP"]
    assert env["WEB_SERVICE_PORT_HTTP"] == "80"
    kubernetes = await get_json(admin, "service", "kubernetes", "-n", "default")
    assert env["KUBERNETES_SERVICE_HOST"] == kubernetes["spec"]["clusterIP"]
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert found["api"]["kind"] == "APIVersions"


async def test_the_node_serves_gateways_as_its_own_identity(
    node: NodeAgent, admin: Kubectl, namespace: str
) -> None:
    rbac = {"apiVersion": "v1", "kind": "List", "items": gateway_rbac()}
    await admin.ok("apply", "-f", "-", stdin=json.dumps(rbac))
    crds = {"apiVersion": "v1", "kind": "List", "items": gateway_api_crds()}
    await admin.ok("apply", "-f", "-", stdin=json.dumps(crds))
    serve = "echo web > index.html; exec python -m http.server 8080"
    web = json.loads(pod("web", serve, "Always", PYTHON_IMAGE))
    web["spec"]["containers"][0]["readinessProbe"] = {
        "tcpSocket": {"port": 8080},
        "periodSeconds": 1,
    }
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=json.dumps(web))
    await admin.ok("apply", "-n", namespace, "-f", "-", stdin=service("web", "web"))
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw"},
        "spec": {"gatewayClassName": "any", "listeners": [{"name": "http", "port": 80}]},
    }
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "route"},
        "spec": {
            "parentRefs": [{"name": "gw"}],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
        },
    }

    async def applied() -> bool:  # until the API server serves the new CRDs
        for body in (gateway, route):
            found = await admin.run("apply", "-n", namespace, "-f", "-", stdin=json.dumps(body))
            if found.code != 0:
                return False
        return True

    await eventually(applied, within=30, message="the Gateway API served")

    async def programmed() -> int | None:
        found = await get_json(admin, "gateway", "gw", "-n", namespace)
        ports = found["metadata"].get("annotations", {}).get(LISTENER_PORTS_ANNOTATION)
        conditions = {c["type"]: c["status"] for c in found.get("status", {}).get("conditions", [])}
        return int(json.loads(ports)["http"]) if ports and conditions.get("Programmed") else None

    port = await eventually(programmed, within=60, message="the Gateway Programmed")

    async def answered() -> str | None:
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/") as answer,
            ):
                text = await answer.text()
                return text if answer.status == 200 else None
        except aiohttp.ClientError:
            return None

    assert (
        await eventually(answered, within=60, message="the web pod through the Gateway") == "web\n"
    )
    found = await get_json(admin, "httproute", "route", "-n", namespace)
    parent = found["status"]["parents"][0]
    assert {c["type"]: c["status"] for c in parent["conditions"]} == {
        "Accepted": "True",
        "ResolvedRefs": "True",
    }
