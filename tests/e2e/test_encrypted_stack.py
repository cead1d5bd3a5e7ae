"""The local stack with a payload key: bridge, worker and CLI share the codec end to end.

`kuberay-temporal dev` on devcluster's simulated runtime with `KUBERAY_TEMPORAL_PAYLOAD_KEY`
set: the bridge starts the workflow (signal-with-start, encrypted), the worker runs it to a
ready cluster, the history the server stores reads as ciphertext, and `kuberay-temporal
status` with the same key shows the cluster.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from runtime.codec import ENCODING
from tests.e2e.conftest import LocalStack, running_stack
from tests.eventually import eventually
from tests.history_scan import raw_history
from tests.reference import REPO_ROOT

pytestmark = pytest.mark.timeout(300)

SAMPLE = REPO_ROOT / "samples" / "raycluster.yaml"
QUERY = "RayKind='RayCluster' AND RayNamespace='default' AND RayName='raycluster-mini'"
KEY = base64.b64encode(os.urandom(32)).decode()


@pytest_asyncio.fixture
async def encrypted_stack(tmp_path: Path) -> AsyncIterator[LocalStack]:
    async with running_stack(
        tmp_path, "simulated", env={"KUBERAY_TEMPORAL_PAYLOAD_KEY": KEY}
    ) as stack:
        yield stack


async def cli(stack: LocalStack, *args: str, key: str | None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERAY_TEMPORAL_PAYLOAD_KEY"}
    env["TEMPORAL_ADDRESS"] = stack.client.service_client.config.target_host
    if key is not None:
        env["KUBERAY_TEMPORAL_PAYLOAD_KEY"] = key
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_cluster_becomes_ready_with_an_unreadable_history(
    encrypted_stack: LocalStack,
) -> None:
    stack = encrypted_stack
    await stack.kubectl("apply", "-f", str(SAMPLE))

    async def ready() -> bool:
        cluster = json.loads(
            await stack.kubectl("get", "raycluster", "raycluster-mini", "-o", "json")
        )
        return (cluster.get("status") or {}).get("state") == "ready"

    await eventually(ready, within=90, message="raycluster-mini ready")
    (workflow_id,) = [wf.id async for wf in stack.client.list_workflows(QUERY)]

    # The fixture's client has no codec: it reads what the server stores.
    raw = await raw_history(stack.client, workflow_id)
    assert ENCODING in raw
    for readable in (b"rayproject/ray:2.60.0", b"raycluster-mini-head", b"headGroupSpec"):
        assert readable not in raw

    code, out, err = await cli(stack, "status", "RayCluster/default/raycluster-mini", key=KEY)
    assert code == 0, err
    assert "RayCluster default/raycluster-mini: ready" in out
    code, _, err = await cli(stack, "status", "RayCluster/default/raycluster-mini", key=None)
    assert code == 1 and "KUBERAY_TEMPORAL_PAYLOAD_KEY" in err
