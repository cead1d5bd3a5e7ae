"""`--pod-api off`: the process runtime's pods get no API server to talk to.

By default a pod reaches the API server over HTTPS on the bridge address, with the env and
`ca.crt` a kubelet gives, and whatever token it sends is taken (devcluster authenticates no
one). Off, the pod-facing listener is not started and pods get neither. Needs root.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from devcluster import command
from devcluster.server import DevCluster
from kuberay_temporal.cli import build_parser
from tests.devcluster.conftest import Kubectl
from tests.eventually import eventually

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")

# Prints the API address a pod is given, then lists namespaces through it with a made-up token.
PROBE = """
import os, ssl, urllib.request
host = os.environ.get("KUBERNETES_SERVICE_HOST")
ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
print("host", host or "none")
if host:
    url = f"https://{host}:{os.environ['KUBERNETES_SERVICE_PORT']}/api/v1/namespaces"
    request = urllib.request.Request(url, headers={"Authorization": "Bearer made-up"})
    context = ssl.create_default_context(cafile=ca)
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        print("status", response.status)
else:
    print("ca-bytes", os.path.getsize(ca))
"""


async def run_probe(cluster: DevCluster, tmp_path: Path) -> dict[str, str]:
    kubectl = Kubectl(cluster.kubeconfig_path, tmp_path / "cache")
    container = {
        "name": "main",
        "image": "rayproject/ray:2.41.0",
        "command": ["python", "-c", PROBE],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe"},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    await kubectl.ok("apply", "-f", "-", stdin=json.dumps(pod))

    async def finished() -> bool:
        shown = json.loads(await kubectl.ok("get", "pod", "probe", "-o", "json"))
        return shown.get("status", {}).get("phase") in ("Succeeded", "Failed")

    await eventually(finished, within=60, message="the probe pod finishing")
    logs = await kubectl.ok("logs", "probe")
    await kubectl.ok("delete", "pod", "probe", "--timeout=30s")
    return dict(line.split(" ", 1) for line in logs.splitlines() if " " in line)


@pytest_asyncio.fixture
async def started(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[DevCluster]:
    cluster = DevCluster(
        tmp_path / "state", runtime="process", pod_network=True, pod_api=request.param
    )
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


@needs_root
@pytest.mark.parametrize("started", [True], indirect=True)
async def test_by_default_pods_reach_the_api_with_any_token(
    started: DevCluster, tmp_path: Path
) -> None:
    seen = await run_probe(started, tmp_path)
    assert started.pod_api is not None
    assert seen == {"host": started.pod_api.host, "status": "200"}


@needs_root
@pytest.mark.parametrize("started", [False], indirect=True)
async def test_with_the_pod_api_off_pods_get_no_api_server(
    started: DevCluster, tmp_path: Path
) -> None:
    seen = await run_probe(started, tmp_path)
    assert started.pod_api is None
    assert seen == {"host": "none", "ca-bytes": "0"}


@pytest.mark.parametrize(("given", "expected"), [([], True), (["--pod-api", "off"], False)])
def test_the_devcluster_command_passes_the_switch_on(
    given: list[str], expected: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: dict[str, object] = {}
    monkeypatch.setattr(command, "DevCluster", lambda *a, **kw: made.update(kw))
    args = build_parser().parse_args(["devcluster", "--state-dir", str(tmp_path), *given])
    command.cluster_from(args, None)
    assert made["pod_api"] is expected
