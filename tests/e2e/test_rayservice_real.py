"""KubeRay's RayService behaviours on the local stack with real Ray Serve, driven with kubectl.

One RayService goes through what a KubeRay user does to it: it becomes Ready and answers HTTP
through `<rs>-serve-svc`; a `serveConfigV2` change is applied in place; a cluster-spec change
runs a blue-green upgrade while a constant-rate client sees no failed request, and the old
cluster goes after `rayClusterDeletionDelaySeconds`; the `rollback` signal mid-upgrade keeps
the traffic on the old cluster and deletes the new one; a head pod deleted without GCS FT
comes back and its apps are redeployed and served again. At most two Ray heads run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.networking.gateway import BACKEND_HEADER
from tests.e2e.conftest import LocalStack
from tests.eventually import eventually
from tests.reference import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLE = REPO_ROOT / "samples" / "rayservice.yaml"
NAME = "rayservice-hello"
DELETION_DELAY = 10
PROXY_PATH = f"/api/v1/namespaces/default/services/{NAME}-serve-svc:serve/proxy/hello"
HEAD_ENV = "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/env"


async def rayservice(stack: LocalStack) -> dict[str, Any]:
    return dict(json.loads(await stack.kubectl("get", "rayservice", NAME, "-o", "json")))


async def clusters(stack: LocalStack) -> list[str]:
    selector = f"ray.io/originated-from-cr-name={NAME}"
    raw = await stack.kubectl("get", "rayclusters", "-l", selector, "-o", "json")
    return sorted(
        c["metadata"]["name"]
        for c in json.loads(raw)["items"]
        if not c["metadata"].get("deletionTimestamp")
    )


async def ready_on(stack: LocalStack) -> str | None:
    """The active cluster once the RayService is Ready with serve endpoints."""
    status = (await rayservice(stack)).get("status") or {}
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    ready = conditions.get("Ready", {})
    if ready.get("status") != "True" or not status.get("numServeEndpoints"):
        return None
    return str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "") or None


async def patch(stack: LocalStack, *ops: dict[str, Any]) -> None:
    await stack.kubectl("patch", "rayservice", NAME, "--type", "json", "-p", json.dumps(list(ops)))


async def hello(http: httpx.AsyncClient) -> str | None:
    """One request through the serve Service (the API server's service proxy)."""
    try:
        response = await http.get(PROXY_PATH, timeout=10)
    except httpx.HTTPError:
        return None
    return response.text if response.status_code == 200 else None


async def answer_from(http: httpx.AsyncClient, greeting: str, cluster: str | None) -> str | None:
    text = await hello(http)
    if text is None or not text.startswith(f"{greeting}, world!"):
        return None
    return text if cluster is None or f"({cluster})" in text else None


@dataclass
class Load:
    """A constant-rate client on loopback, bounded in count and time."""

    http: httpx.AsyncClient
    path: str = PROXY_PATH
    rate: float = 10.0
    max_requests: int = 3000
    ok: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    served_by: Counter[str] = field(default_factory=Counter)
    answers: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(greeting, cluster) of every answer: which config served it, on which cluster."""
    backends: Counter[str] = field(default_factory=Counter)
    """Which Service devcluster's Gateway chose, when the requests go through one."""
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, seconds: float) -> None:
        start, sent, inflight = time.monotonic(), 0, set()
        while not self._stop.is_set() and sent < self.max_requests:
            if time.monotonic() - start > seconds:
                break
            task = asyncio.create_task(self._one())
            inflight.add(task)
            task.add_done_callback(inflight.discard)
            sent += 1
            next_at = start + sent / self.rate
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), max(next_at - time.monotonic(), 0))
        await asyncio.gather(*inflight)

    async def _one(self) -> None:
        try:
            response = await self.http.get(self.path, timeout=15)
        except httpx.HTTPError as err:
            self.failed += 1
            self.failures.append(f"{type(err).__name__}: {err}")
            return
        if response.status_code != 200:
            self.failed += 1
            self.failures.append(f"{response.status_code}: {response.text[:200]}")
            return
        self.ok += 1
        cluster = response.text.rsplit("(", 1)[-1].rstrip(")")
        self.served_by[cluster] += 1
        self.answers[(response.text.split(",", 1)[0], cluster)] += 1
        if BACKEND_HEADER in response.headers:
            self.backends[response.headers[BACKEND_HEADER]] += 1

    def stop(self) -> None:
        self._stop.set()

    @contextlib.asynccontextmanager
    async def running(self, seconds: float) -> AsyncIterator[Load]:
        """Send for at most `seconds`; the block's end (or failure) stops and drains it."""
        task = asyncio.create_task(self.run(seconds))
        try:
            yield self
        finally:
            self.stop()
            await task


async def signal(stack: LocalStack, name: str) -> None:
    env = {**os.environ, "TEMPORAL_ADDRESS": stack.client.service_client.config.target_host}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal",
        "signal",
        name,
        f"RayService/default/{NAME}",
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await process.wait() == 0


def manifest(tmp_path: Path, sample: Path = SAMPLE) -> Path:
    """The sample with a short deletion delay, so the test need not wait a minute per cluster."""
    docs = list(yaml.safe_load_all(sample.read_text()))
    for doc in docs:
        if doc["kind"] == "RayService":
            doc["spec"]["rayClusterDeletionDelaySeconds"] = DELETION_DELAY
    path = tmp_path / sample.name
    path.write_text(yaml.safe_dump_all(docs))
    return path


async def test_rayservice_lifecycle_with_real_ray_serve(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    stack = local_stack
    began = time.monotonic()
    await stack.kubectl("apply", "-f", str(manifest(tmp_path)))
    first = await eventually(lambda: ready_on(stack), within=240, message="Ready")
    print(f"\nReady on {first} after {time.monotonic() - began:.1f}s")
    async with stack.api_client() as http:
        await eventually(
            lambda: answer_from(http, "hello", first), within=60, message="hello from " + first
        )

        # serveConfigV2 changes are applied in place: same cluster, new behaviour.
        service = await rayservice(stack)
        config = yaml.safe_load(service["spec"]["serveConfigV2"])
        config["applications"][0]["runtime_env"] = {"env_vars": {"GREETING": "hola"}}
        await patch(
            stack,
            {"op": "replace", "path": "/spec/serveConfigV2", "value": yaml.safe_dump(config)},
        )
        await eventually(
            lambda: answer_from(http, "hola", first), within=120, message="hola in place"
        )
        assert await clusters(stack) == [first]

        # A cluster-spec change: blue-green upgrade under constant load.
        async with Load(http).running(seconds=300) as load:
            await eventually(lambda: load.ok >= 10, within=30, message="load flowing")
            started = time.monotonic()
            await patch(
                stack,
                {"op": "add", "path": f"{HEAD_ENV}/-", "value": {"name": "MARK", "value": "1"}},
            )
            second = await eventually(
                lambda: _other(ready_on(stack), first), within=300, message="the upgrade"
            )
            upgrade_seconds = time.monotonic() - started
            await eventually(
                lambda: answer_from(http, "hola", second), within=60, message="hola from new"
            )
            await eventually(
                lambda: _only(clusters(stack), second),
                within=DELETION_DELAY + 90,
                message=f"{first} deleted after the delay",
            )
            deleted_after = time.monotonic() - started - upgrade_seconds
            # Its head process stops after the cluster object goes: at most two heads at once.
            await eventually(
                lambda: _no_heads(stack, first), within=60, message=f"{first}'s head gone"
            )
        print(
            f"blue-green upgrade {first} -> {second}: {upgrade_seconds:.1f}s, "
            f"old cluster gone {deleted_after:.1f}s later; requests ok={load.ok} "
            f"failed={load.failed} served_by={dict(load.served_by)}"
        )
        assert load.failed == 0, load.failures[:5]
        assert load.served_by[first] and load.served_by[second]

        # Rollback mid-upgrade: traffic stays on the active cluster, the new one goes.
        async with Load(http).running(seconds=240) as load:
            await patch(stack, {"op": "replace", "path": f"{HEAD_ENV}/1/value", "value": "2"})
            third = await eventually(
                lambda: _pending(stack, second), within=60, message="a pending cluster"
            )
            await signal(stack, "rollback")
            await eventually(
                lambda: _only(clusters(stack), second), within=120, message=f"{third} deleted"
            )
            annotations = (await rayservice(stack))["metadata"].get("annotations") or {}
            assert annotations.get("ray.io/rollback-requested")
            assert await ready_on(stack) == second
        print(
            f"rollback of {third}: requests ok={load.ok} failed={load.failed} "
            f"served_by={dict(load.served_by)}"
        )
        assert load.failed == 0, load.failures[:5]
        assert set(load.served_by) == {second}

        # A head deleted without GCS FT: a new head, the apps redeployed, served again.
        head = await _head(stack, second)
        await stack.kubectl("delete", "pod", head, "--wait=false")
        restarted = time.monotonic()
        await eventually(
            lambda: _new_head(stack, second, head), within=120, message="a new head pod"
        )
        await eventually(
            lambda: answer_from(http, "hola", second), within=240, message="served again"
        )
        print(f"served again {time.monotonic() - restarted:.1f}s after the head was deleted")
        await eventually(lambda: ready_on(stack), within=60, message="Ready again")
    print(f"total {time.monotonic() - began:.1f}s")


async def _other(found: Any, old: str) -> str | None:
    name = await found
    return name if name and name != old else None


async def _only(found: Any, name: str) -> bool:
    return bool(await found == [name])


async def _pending(stack: LocalStack, active: str) -> str | None:
    names = [n for n in await clusters(stack) if n != active]
    return names[0] if names else None


async def _heads(stack: LocalStack, cluster: str) -> list[str]:
    selector = f"ray.io/cluster={cluster},ray.io/node-type=head"
    raw = json.loads(await stack.kubectl("get", "pods", "-l", selector, "-o", "json"))
    return [
        p["metadata"]["name"] for p in raw["items"] if not p["metadata"].get("deletionTimestamp")
    ]


async def _no_heads(stack: LocalStack, cluster: str) -> bool:
    selector = f"ray.io/cluster={cluster}"
    raw = json.loads(await stack.kubectl("get", "pods", "-l", selector, "-o", "json"))
    return not raw["items"]


async def _head(stack: LocalStack, cluster: str) -> str:
    heads = await _heads(stack, cluster)
    assert len(heads) == 1, heads
    return heads[0]


async def _new_head(stack: LocalStack, cluster: str, old: str) -> str | None:
    heads = await _heads(stack, cluster)
    return heads[0] if heads and heads[0] != old else None
