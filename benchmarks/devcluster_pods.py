"""devcluster pods at scale: N pods to Ready under the simulated runtime, and devcluster's RSS.

Runs `kuberay-temporal devcluster --runtime simulated` as its own process on a fresh state
dir, creates N pods with C concurrent writers, and waits (by watching) until every pod has
the Ready condition. Prints the time to create, the time until all are Ready, and
devcluster's resident memory before and after.

    .venv/bin/python benchmarks/devcluster_pods.py [--pods 4000] [--concurrency 16] [--delay 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import yaml

PODS = "/api/v1/namespaces/default/pods"


async def start_server(state_dir: Path, delay: float) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kuberay_temporal.cli", "devcluster", "--state-dir", str(state_dir),
        "--port", "0", "--runtime", "simulated", "--ready-delay", str(delay),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    kubeconfig = state_dir / "kubeconfig"
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("devcluster did not start")
        await asyncio.sleep(0.05)
    config = yaml.safe_load(kubeconfig.read_text())
    return process, config["clusters"][0]["cluster"]["server"]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pod(index: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"bench-{index}", "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.41.0"}]},
    }


async def wait_ready(session: aiohttp.ClientSession, url: str, count: int) -> None:
    ready: set[str] = set()
    params = {"watch": "true", "resourceVersion": "0", "timeoutSeconds": "900"}
    async with session.get(url + PODS, params=params) as response:
        async for line in response.content:
            obj = json.loads(line)["object"]
            conditions = obj.get("status", {}).get("conditions") or []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                ready.add(obj["metadata"]["name"])
                if len(ready) >= count:
                    return


async def main(pods: int, concurrency: int, delay: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        process, url = await start_server(Path(tmp), delay)
        try:
            async with aiohttp.ClientSession() as session:
                idle = rss_mib(process.pid)
                waiter = asyncio.create_task(wait_ready(session, url, pods))
                started = time.monotonic()
                queue = iter(range(pods))

                async def writer() -> None:
                    for index in queue:
                        async with session.post(url + PODS, json=pod(index)) as response:
                            assert response.status == 201, await response.text()

                await asyncio.gather(*(writer() for _ in range(concurrency)))
                created = time.monotonic() - started
                await waiter
                all_ready = time.monotonic() - started
                rss = rss_mib(process.pid)
                print(f"pods: {pods} (simulated, ready delay {delay:g}s, {concurrency} writers)")
                print(f"created in {created:.1f}s ({pods / created:.0f}/s)")
                print(f"all Ready after {all_ready:.1f}s")
                print(f"devcluster RSS: {idle:.0f} MiB idle, {rss:.0f} MiB with {pods} Ready pods")
        finally:
            process.terminate()
            await process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.pods, args.concurrency, args.delay))
