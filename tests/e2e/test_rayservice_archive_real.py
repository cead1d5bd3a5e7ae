"""A RayService whose Serve app's code is a GitHub archive, with real Ray on the real control plane.

KubeRay's Serve samples name their app's code as a `working_dir` zip at a github.com URL. The
node serves KubeRay's copies of those archives at those URLs (`devcluster.networking.archives`),
so Ray's runtime-env agent in the head pod downloads `ray-project/test_dag` at the commit
KubeRay's samples use, the app deploys from it, the RayService reaches `serviceStatus:
Running`, and the app answers through the serve Service with what only that archive's code
says: under ours, and under KubeRay's own operator (v1.7.0, `dev --kuberay-namespace`) given the
same RayService in its namespace on the same node.

The app is `test_dag`'s `basic_dag.FNode`, not the samples' `fruit` and `conditional_dag`
graphs: their drivers call `handle.options(use_new_handle_api=True)`, which this machine's
Ray, newer than the samples' images, no longer has (`sample_verdicts.OLD_HANDLE_API`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

NAME = "rayservice-archive"
WORKING_DIR = (
    "https://github.com/ray-project/test_dag/archive/78b4a5da38796123d9f9ffff59bab2792a043e95.zip"
)
SERVE_CONFIG = {
    "applications": [
        {
            "name": "basic",
            "import_path": "basic_dag.FNode",
            "route_prefix": "/basic",
            "runtime_env": {"working_dir": WORKING_DIR},
        }
    ]
}
RAYSERVICE = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "metadata": {"name": NAME},
    "spec": {
        "serveConfigV2": yaml.safe_dump(SERVE_CONFIG),
        "rayClusterConfig": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "1"},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.60.0",
                                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                            }
                        ]
                    }
                },
            },
        },
    },
}
KUBERAY_NAMESPACE = "kr"
"""Where KubeRay's own operator (v1.7.0) reconciles the same RayService beside ours."""


@pytest_asyncio.fixture
async def both(tmp_path: Path) -> AsyncIterator[LocalStack]:
    """The real-Ray stack with KubeRay's operator beside ours (`dev --kuberay-namespace`)."""
    args = ("--kuberay-namespace", KUBERAY_NAMESPACE)
    async with running_stack(tmp_path, "process", control_plane="kubernetes", args=args) as stack:
        yield stack


async def rayservice(stack: LocalStack, namespace: str) -> dict[str, Any]:
    raw = await stack.kubectl("get", "rayservice", NAME, "-n", namespace, "-o", "json")
    return dict(json.loads(raw))


async def running(stack: LocalStack, namespace: str) -> bool:
    status = (await rayservice(stack, namespace)).get("status") or {}
    return status.get("serviceStatus") == "Running"


async def answer(http: httpx.AsyncClient, namespace: str) -> str | None:
    proxy = f"/api/v1/namespaces/{namespace}/services/{NAME}-serve-svc:serve/proxy/basic"
    try:
        response = await http.get(proxy, timeout=10)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


async def test_a_serve_app_deploys_from_its_github_archive_under_both_operators(
    both: LocalStack, tmp_path: Path
) -> None:
    stack = both
    manifest = tmp_path / "rayservice.json"
    manifest.write_text(json.dumps(RAYSERVICE))
    began = time.monotonic()
    for namespace in ("default", KUBERAY_NAMESPACE):
        await stack.kubectl("apply", "-n", namespace, "-f", str(manifest))
    for namespace in ("default", KUBERAY_NAMESPACE):
        try:
            await eventually(
                lambda ns=namespace: running(stack, ns),
                within=300,
                message=f"serviceStatus Running in {namespace}",
            )
        except AssertionError:
            status = (await rayservice(stack, namespace)).get("status")
            pods = await stack.kubectl("get", "pods", "-A", "-o", "wide", check=False)
            raise AssertionError(
                f"{namespace}/{NAME} not Running: {json.dumps(status)}\n{pods}"
            ) from None
        print(f"\n{namespace}/{NAME}: Running after {time.monotonic() - began:.0f}s")
        status = (await rayservice(stack, namespace))["status"]
        apps = status["activeServiceStatus"]["applicationStatuses"]
        assert apps["basic"]["status"] == "RUNNING"
        async with stack.api_client() as http:
            said = await eventually(
                lambda ns=namespace: answer(http, ns), within=60, message="an answer"
            )
        assert said == "wonderful world"  # basic_dag.f, as the archive has it
