"""devcluster throughput: create, list and watch delivery for N objects, and watch latency.

Runs devcluster as its own process (`kuberay-temporal devcluster`) on a fresh state dir, so
the figures include SQLite writes and HTTP as a client sees them. A watcher connects first;
then N ConfigMaps are created by C concurrent writers; watch latency is the time from sending
a create to receiving its ADDED event.

    .venv/bin/python benchmarks/devcluster_throughput.py [--objects 10000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import yaml

NAMESPACE_PATH = "/api/v1/namespaces/default/configmaps"


async def start_server(state_dir: Path) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_temporal.cli",
        "devcluster",
        "--state-dir",
        str(state_dir),
        "--port",
        "0",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    kubeconfig = state_dir / "kubeconfig"
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("devcluster did not start")
        await asyncio.sleep(0.05)
    config = yaml.safe_load(kubeconfig.read_text())
    return process, config["clusters"][0]["cluster"]["server"]


async def watch(
    session: aiohttp.ClientSession,
    url: str,
    rv: str,
    count: int,
    received: dict[str, float],
    ready: asyncio.Event,
) -> None:
    params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "600"}
    async with session.get(url + NAMESPACE_PATH, params=params) as response:
        ready.set()
        async for line in response.content:
            event = json.loads(line)
            if event["type"] == "ADDED":
                received[event["object"]["metadata"]["name"]] = time.perf_counter()
                if len(received) == count:
                    return


async def create_all(
    session: aiohttp.ClientSession, url: str, count: int, concurrency: int, sent: dict[str, float]
) -> None:
    names = iter(range(count))

    async def writer() -> None:
        for index in names:
            name = f"cm-{index:05d}"
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"bench": "yes"}},
                "data": {"index": str(index)},
            }
            sent[name] = time.perf_counter()
            async with session.post(url + NAMESPACE_PATH, json=body) as response:
                if response.status != 201:
                    raise RuntimeError(f"create failed: {response.status} {await response.text()}")

    await asyncio.gather(*(writer() for _ in range(concurrency)))


async def list_all(session: aiohttp.ClientSession, url: str, limit: int) -> int:
    total, token = 0, ""
    while True:
        params = {"limit": str(limit)} if limit else {}
        if token:
            params["continue"] = token
        async with session.get(url + NAMESPACE_PATH, params=params) as response:
            body = await response.json()
        total += len(body["items"])
        token = body["metadata"].get("continue", "")
        if not token:
            return total


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def run(count: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as state:
        process, url = await start_server(Path(state))
        try:
            connector = aiohttp.TCPConnector(limit=concurrency + 4)
            async with aiohttp.ClientSession(connector=connector) as session:
                async with session.get(url + NAMESPACE_PATH) as response:
                    rv = (await response.json())["metadata"]["resourceVersion"]
                sent: dict[str, float] = {}
                received: dict[str, float] = {}
                ready = asyncio.Event()
                watcher = asyncio.create_task(watch(session, url, rv, count, received, ready))
                await ready.wait()
                started = time.perf_counter()
                await create_all(session, url, count, concurrency, sent)
                created = time.perf_counter()
                await asyncio.wait_for(watcher, 120)
                delivered = max(received.values())
                latencies = [(received[n] - sent[n]) * 1000 for n in sent]
                listed = {}
                for limit in (0, 500):
                    begin = time.perf_counter()
                    assert await list_all(session, url, limit) == count
                    listed[limit] = count / (time.perf_counter() - begin)
        finally:
            process.terminate()
            await process.wait()
    print(f"objects: {count}, concurrent writers: {concurrency}")
    print(f"create:          {count / (created - started):8.0f} objects/s")
    print(f"list (one page): {listed[0]:8.0f} objects/s")
    print(f"list (limit 500):{listed[500]:8.0f} objects/s")
    print(f"watch delivery:  {count / (delivered - started):8.0f} events/s")
    print(
        f"watch latency:   p50 {statistics.median(latencies):.1f} ms, "
        f"p99 {percentile(latencies, 0.99):.1f} ms (create sent -> ADDED received)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    asyncio.run(run(args.objects, args.concurrency))


if __name__ == "__main__":
    main()
