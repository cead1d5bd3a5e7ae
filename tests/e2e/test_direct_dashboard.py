"""Direct dashboard calls on the whole local stack: to the head pod's own address, not a name.

With `KUBERAY_TEMPORAL_DASHBOARD_ACCESS=direct` the worker skips the API server's proxy and
calls the head pod's IP, found through the head Service and the head pod its cluster owns
(`activities/dashboard/heads.py`); no cluster DNS is asked, so none can lead it elsewhere.
The worker of the local stack runs on the node, which routes to every pod of the process
runtime (each in a network namespace of its own), as a worker in a cluster reaches pods; the
simulated runtime's pods have no network to route to. An HTTPMode RayJob of real Ray is
submitted and followed to its end this way; its `status.dashboardURL` is still KubeRay's
Service address.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import running_stack
from tests.e2e.test_metrics import apply, reaches
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


async def test_an_http_mode_rayjob_completes_with_direct_calls(tmp_path: Path) -> None:
    env = {"KUBERAY_TEMPORAL_DASHBOARD_ACCESS": "direct"}
    async with running_stack(tmp_path, "process", env=env) as stack:
        doc = yaml.safe_load((REPO_ROOT / "samples" / "rayjob.http-mode.yaml").read_text())
        await apply(stack, doc)
        job = await reaches(stack, doc["metadata"]["name"], "Complete", within=300)
        status = job["status"]
        assert status["jobStatus"] == "SUCCEEDED"
        cluster = status["rayClusterName"]
        assert status["dashboardURL"] == f"{cluster}-head-svc.default.svc.cluster.local:8265"
