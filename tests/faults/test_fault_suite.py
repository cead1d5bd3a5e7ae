"""Fault suite: the same mixed lifecycles with and without injected faults end the same way.

`kuberay-temporal dev --runtime simulated` runs the whole stack (Temporal dev server,
devcluster with simulated pods and Ray heads, worker, bridge) twice: once clean, once with
DEVCLUSTER_FAULT_RATE set, so that about that share of API requests fail with 500s, 429s
(with Retry-After) or 409s (on writes) or are slowed down, watches are cut, and the Ray heads
answer the operator's dashboard calls with 500s, late (beyond the client's timeout) or not at
all. Each run drives `FAULT_SUITE_LIFECYCLES` lifecycles (RayClusters to ready, RayJobs in
HTTPMode and K8sJobMode to Complete or Failed, RayServices to Ready; each then deleted) and
checks that every one ends as expected, that Ray ran each RayJob's job exactly once, that
nothing is left in the namespace and no workflow is still running. Then it prints the figures.

Small by default (CI); the full size is one command (see the README):

    FAULT_SUITE_LIFECYCLES=200 .venv/bin/pytest tests/faults -s
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from activities.kube import client as kube
from tests.e2e.conftest import running_stack
from tests.eventually import eventually
from tests.faults.lifecycles import (
    MIX,
    NAMESPACE,
    Calls,
    Observed,
    Outcome,
    expected,
    run_lifecycle,
)

SIZE = int(os.environ.get("FAULT_SUITE_LIFECYCLES", "5"))
RATE = float(os.environ.get("FAULT_SUITE_RATE", "0.2"))
SEED = int(os.environ.get("FAULT_SUITE_SEED", "12"))
CONCURRENCY = int(os.environ.get("FAULT_SUITE_CONCURRENCY", "20"))
WITHIN = 300.0  # per lifecycle stage: a stuck CR fails the suite instead of hanging it

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900 + SIZE * 30)]


async def drive(client: Client, calls: Calls, size: int) -> tuple[list[Outcome], list[str]]:
    """Run `size` lifecycles, `CONCURRENCY` at a time; the outcomes and the failures."""
    await calls(lambda: calls.client.create_or_get(kube.NAMESPACES, None, _namespace()))
    observed = Observed(calls)
    poller = asyncio.create_task(observed.run())
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> Outcome:
        async with gate:
            return await run_lifecycle(calls, observed, MIX[index % len(MIX)], index, WITHIN)

    failures: list[str] = []
    try:
        results = await asyncio.gather(*(one(i) for i in range(size)), return_exceptions=True)
        outcomes = [r for r in results if isinstance(r, Outcome)]
        failures += [
            f"lifecycle {i}: {r!r}" for i, r in enumerate(results) if isinstance(r, BaseException)
        ]
        failures += [f"{o.name} ended {o.state}" for o in outcomes if o.state != expected(o.kind)]
        try:
            await eventually(
                lambda: not observed.everything(), within=WITHIN, message="an empty namespace"
            )
        except AssertionError:
            failures.append(f"left behind: {observed.everything()}")
    finally:
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller

    async def none_running() -> int | None:
        found = await client.count_workflows("ExecutionStatus='Running'")
        return None if found.count else 1

    try:
        await eventually(none_running, within=120, message="every workflow closed")
    except AssertionError as err:
        failures.append(str(err))
    return outcomes, failures


def _namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


async def run_once(tmp_path: Path, rate: float) -> dict[str, Any]:
    """One stack, one batch of lifecycles; the figures of the run."""
    await asyncio.to_thread(tmp_path.mkdir)
    env = {"DEVCLUSTER_FAULT_RATE": str(rate), "DEVCLUSTER_FAULT_SEED": str(SEED)}
    async with running_stack(tmp_path, "simulated", env) as stack:
        client = await kube.connect(str(stack.kubeconfig))
        try:
            calls = Calls(client)
            began = time.monotonic()
            outcomes, failures = await drive(stack.client, calls, SIZE)
            elapsed = time.monotonic() - began
            injected = await calls(lambda: client.request("GET", "/debug/faults"))
        finally:
            await client.close()
    return {
        "rate": rate,
        "outcomes": outcomes,
        "failures": failures,
        "elapsed": elapsed,
        "injected": injected,
    }


def report(clean: dict[str, Any], faulty: dict[str, Any]) -> str:
    """The figures, as printed (and copied into the README)."""
    lines = [f"fault suite: {SIZE} lifecycles per run, faults at {faulty['rate']:.0%}, seed {SEED}"]
    ends = Counter(f"{o.kind} {o.state}" for o in faulty["outcomes"])
    lines.append(
        "  outcomes (with faults): " + ", ".join(f"{n} {k}" for k, n in sorted(ends.items()))
    )
    for side, counts in faulty["injected"].items():
        requests = counts.get("requests", 0)
        kinds = {k: v for k, v in counts.items() if k != "requests"}
        total = sum(kinds.values())
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items()))
        lines.append(f"  {side} faults injected: {total} of {requests} requests ({detail})")
    for label, run in (("without", clean), ("with", faulty)):
        seconds = [o.seconds for o in run["outcomes"]]
        mean = sum(seconds) / len(seconds) if seconds else 0.0
        lines.append(
            f"  {label} faults: {run['elapsed']:.0f} s in all, {mean:.1f} s per lifecycle "
            f"(apply to gone), failures: {len(run['failures'])}"
        )
    return "\n".join(lines)


async def test_lifecycles_end_the_same_with_faults(tmp_path: Path) -> None:
    clean = await run_once(tmp_path / "clean", 0.0)
    faulty = await run_once(tmp_path / "faulty", RATE)
    print("\n" + report(clean, faulty))
    assert clean["failures"] == [], clean["failures"]
    assert faulty["failures"] == [], faulty["failures"]
    same = Counter((o.kind, o.state) for o in faulty["outcomes"])
    assert same == Counter((o.kind, o.state) for o in clean["outcomes"])
    assert sum(v for k, v in faulty["injected"]["apiserver"].items() if k != "requests") > 0
