"""A RayService whose Serve app's code is a GitHub archive, with real Ray on the real control plane.

KubeRay's Serve samples name their app's code as a `working_dir` zip at a github.com URL. The
node serves KubeRay's copies of those archives at those URLs (`devcluster.networking.archives`),
so Ray's runtime-env agent in the head pod downloads `ray-project/test_dag` at the commit
KubeRay's samples use, the app deploys from it, the RayService reaches `serviceStatus:
Running`, and the app answers through the serve Service with what only that archive's code
says.

The app is `test_dag`'s `basic_dag.FNode`, not the samples' `fruit` and `conditional_dag`
graphs: their drivers call `handle.options(use_new_handle_api=True)`, which this machine's
Ray, newer than the samples' images, no longer has (`sample_verdicts.OLD_HANDLE_API`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.e2e.conftest import LocalStack
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
PROXY = f"/api/v1/namespaces/default/services/{NAME}-serve-svc:serve/proxy/basic"


async def rayservice(stack: LocalStack) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", "rayservice", NAME, "-o", "json")))


async def running(stack: LocalStack) -> bool:
    return ((await rayservice(stack)).get("status") or {}).get("serviceStatus") == "Running"


async def answer(http: httpx.AsyncClient) -> str | None:
    try:
        response = await http.get(PROXY, timeout=10)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


async def test_a_serve_app_deploys_from_its_github_archive_and_runs(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    stack = local_stack
    manifest = tmp_path / "rayservice.json"
    manifest.write_text(json.dumps(RAYSERVICE))
    began = time.monotonic()
    await stack.kubectl("apply", "-f", str(manifest))
    try:
        await eventually(lambda: running(stack), within=300, message="serviceStatus Running")
    except AssertionError:
        status = (await rayservice(stack)).get("status")
        pods = await stack.kubectl("get", "pods", "-o", "wide", check=False)
        raise AssertionError(f"{NAME} not Running: {json.dumps(status)}\n{pods}") from None
    print(f"\n{NAME}: Running after {time.monotonic() - began:.0f}s")
    apps = (await rayservice(stack))["status"]["activeServiceStatus"]["applicationStatuses"]
    assert apps["basic"]["status"] == "RUNNING"
    async with stack.api_client() as http:
        said = await eventually(lambda: answer(http), within=60, message="an answer")
    assert said == "wonderful world"  # basic_dag.f, as the archive has it
