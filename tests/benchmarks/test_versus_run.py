"""The head-to-head benchmark end to end at a tiny size, so the harness behind the README works.

Real processes throughout: the control plane built from Go modules with the simulated node,
KubeRay's own operator, then our worker, bridge and Temporal dev server; only the size is small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scale import PREFIX
from benchmarks.versus import parse_args, run
from benchmarks.versus_report import KUBERAY, OURS, format_table

pytestmark = [pytest.mark.slow, pytest.mark.kubernetes, pytest.mark.timeout(600)]


@pytest.mark.parametrize("kind", ["raycluster", "rayjob"])
async def test_a_tiny_run_measures_both_operators(kind: str, tmp_path: Path) -> None:
    theirs, ours = await run(parse_args(["--kind", kind, "--count", "2", "--out", str(tmp_path)]))

    for result, processes in (
        (theirs, ["kuberay-operator"]),
        (ours, ["worker", "bridge", "temporal"]),
    ):
        assert [s.name for s in result.samples] == [f"{PREFIX[kind]}000{i}" for i in range(2)]
        assert result.latencies.reached == 2, result.samples
        assert [p.label for p in result.operator_processes] == processes
        assert all(p.cpu_seconds > 0 and p.peak_kib > 10 * 1024 for p in result.operator_processes)
        assert {p.label for p in result.shared_processes} >= {"kube-apiserver", "etcd", "node"}
        # The audit log told each operator's requests apart from the benchmark's own creates.
        assert result.operator_requests > 0, result.requests
        assert result.by_client()["benchmark"] >= 2
        assert result.requests_total >= result.operator_requests
    assert theirs.operator == KUBERAY and ours.operator == OURS
    last = format_table("t", theirs, ours).splitlines()[-1]
    assert last.startswith("ratio apply->ready p50 kuberay-temporal/kuberay: ")
