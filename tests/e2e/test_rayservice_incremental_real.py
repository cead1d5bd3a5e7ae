"""An incremental RayService upgrade on the local stack: real Ray Serve behind a Gateway.

The Gateway API CRDs are applied first; devcluster's data plane then serves the RayService's
Gateway on a loopback port and routes by the HTTPRoute's weights. A cluster-spec change moves
the traffic to a new cluster in steps while a constant-rate client, going through the Gateway,
sees no failed request; the weights the route goes through and the split the client saw are
printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.networking.gateway import LISTENER_PORTS_ANNOTATION
from kuberay_temporal.stand_in_crds import gateway_api_crds
from tests.e2e.conftest import LocalStack
from tests.e2e.test_rayservice_real import HEAD_ENV, Load, manifest
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SAMPLE = REPO_ROOT / "samples" / "rayservice.incremental.yaml"
NAME = "rayservice-incremental"


async def get(stack: LocalStack, kind: str, name: str) -> dict[str, Any] | None:
    raw = await stack.kubectl("get", kind, name, "-o", "json", "--ignore-not-found")
    return dict(json.loads(raw)) if raw.strip() else None


async def weights(stack: LocalStack) -> tuple[tuple[str, int], ...] | None:
    route = await get(stack, "httproutes.gateway.networking.k8s.io", f"{NAME}-httproute")
    if route is None:
        return None
    refs = route["spec"]["rules"][0]["backendRefs"]
    return tuple((r["name"].removesuffix("-serve-svc"), int(r["weight"])) for r in refs)


async def ready_on(stack: LocalStack) -> str | None:
    found = await get(stack, "rayservice", NAME)
    status = (found or {}).get("status") or {}
    ready = {c["type"]: c["status"] for c in status.get("conditions") or []}.get("Ready")
    if ready != "True":
        return None
    return (status.get("activeServiceStatus") or {}).get("rayClusterName") or None


async def gateway_port(stack: LocalStack) -> int | None:
    gateway = await get(stack, "gateways.gateway.networking.k8s.io", f"{NAME}-gateway")
    ports = ((gateway or {}).get("metadata") or {}).get("annotations") or {}
    found = ports.get(LISTENER_PORTS_ANNOTATION)
    return int(json.loads(found)["http"]) if found else None


@contextlib.asynccontextmanager
async def watching_weights(stack: LocalStack) -> AsyncIterator[list[tuple[float, Any]]]:
    """Record each distinct set of route weights, with when it was first seen."""
    seen: list[tuple[float, Any]] = []
    start = time.monotonic()

    async def poll() -> None:
        while True:
            current = await weights(stack)
            if not seen or seen[-1][1] != current:
                seen.append((time.monotonic() - start, current))
            await asyncio.sleep(0.5)  # a sampling period, not a wait for anything

    task = asyncio.create_task(poll())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_incremental_upgrade_moves_traffic_in_steps(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    stack = local_stack
    crds = tmp_path / "gateway-api.json"
    crds.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": gateway_api_crds()}))
    await stack.kubectl("apply", "-f", str(crds))
    began = time.monotonic()
    await stack.kubectl("apply", "-f", str(manifest(tmp_path, SAMPLE)))
    first = await eventually(lambda: ready_on(stack), within=240, message="Ready")
    port = await eventually(lambda: gateway_port(stack), within=30, message="a Gateway port")
    print(f"\nReady on {first} after {time.monotonic() - began:.1f}s; Gateway on :{port}")
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
        await eventually(lambda: _served_by(http, first), within=60, message="served via Gateway")
        async with watching_weights(stack) as seen, Load(http, path="/hello").running(300) as load:
            await eventually(lambda: load.ok >= 10, within=30, message="load flowing")
            started = time.monotonic()
            # The image (here: the head's environment) and the Serve config change together;
            # the old cluster must keep serving the old config while traffic moves.
            service = await get(stack, "rayservice", NAME)
            assert service is not None
            config = yaml.safe_load(service["spec"]["serveConfigV2"])
            config["applications"][0]["runtime_env"] = {"env_vars": {"GREETING": "hola"}}
            ops = [
                {"op": "add", "path": f"{HEAD_ENV}/-", "value": {"name": "M", "value": "1"}},
                {"op": "replace", "path": "/spec/serveConfigV2", "value": yaml.safe_dump(config)},
            ]
            await stack.kubectl(
                "patch", "rayservice", NAME, "--type", "json", "-p", json.dumps(ops)
            )
            second = await eventually(
                lambda: _other(ready_on(stack), first), within=300, message="the upgrade"
            )
            duration = time.monotonic() - started
            final = ((second, 100),)
            await eventually(lambda: _is(weights(stack), final), within=30, message="100% new")
        print(f"incremental upgrade {first} -> {second}: {duration:.1f}s")
        for at, split in seen:
            print(f"  {at:6.1f}s route weights {split}")
        print(
            f"requests ok={load.ok} failed={load.failed} served_by={dict(load.served_by)} "
            f"gateway backends={dict(load.backends)} answers={dict(load.answers)}"
        )
        assert load.failed == 0, load.failures[:5]
        assert load.served_by[first] and load.served_by[second]
        # Each cluster answered with its own config only: no "hola" from the old one.
        assert set(load.answers) == {("hello", first), ("hola", second)}, load.answers
        splits = [dict(s) for _, s in seen if s]
        assert any(0 < s.get(second, 0) < 100 for s in splits), splits  # at least one step
        assert splits[-1] == {second: 100}, splits


async def _served_by(http: httpx.AsyncClient, cluster: str) -> bool:
    try:
        response = await http.get("/hello", timeout=10)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and f"({cluster})" in response.text


async def _is(found: Any, wanted: Any) -> bool:
    return bool(await found == wanted)


async def _other(found: Any, old: str) -> str | None:
    name = await found
    return name if name and name != old else None
