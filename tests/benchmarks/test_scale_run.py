"""The scale benchmark end to end at a tiny size, so the harness behind the README figures works.

Real processes throughout (devcluster's simulated runtime, the Temporal dev server, the bridge
and two worker processes); only the size is small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scale import PREFIX, parse_args, run
from benchmarks.scale_report import actions, format_summary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.mark.parametrize("kind", ["raycluster", "rayjob"])
async def test_a_tiny_run_measures_every_figure(kind: str, tmp_path: Path) -> None:
    sizes = ["--count", "2", "--workers", "2", "--sample", "2", "--ceiling", "10"]
    sizes += ["--memory-reference", "5"]
    if kind == "rayjob":  # hour-long jobs running beside the measured ones
        sizes += ["--running", "2"]
    args = parse_args(["--kind", kind, *sizes, "--out", str(tmp_path)])
    summary, samples = await run(args)

    assert [s.name for s in samples] == [f"{PREFIX[kind]}000{i}" for i in range(2)]
    assert all(s.latency is not None and s.latency > 0 for s in samples), samples
    assert summary.latencies.reached == 2
    assert [m.label for m in summary.workers_memory] == ["worker-1", "worker-2"]
    assert all(m.before > 50 * 1024 and m.peak >= m.after for m in summary.workers_memory)
    assert summary.deleted_in is not None
    if kind == "rayjob":
        (note,) = [n for n in summary.notes if n.startswith("beside 2 RayJobs of 3600 s")]
        assert ": 2 running" in note and "failed" not in note, note
    # Each sampled lifecycle was found in visibility and counted: a start, the bridge's
    # signals, activities.
    assert len(summary.lifecycles) == 2
    for counts in summary.lifecycles:
        assert counts["starts"] >= (2 if kind == "rayjob" else 1), counts  # + its RayCluster
        assert counts["signals"] >= 1 and counts["activities"] + counts["local"] >= 1, counts
        assert counts["events"] > actions(counts)
    assert "(2/2 got there)" in format_summary(summary)
    # The bare-Temporal ceiling ran on the same server first, and the ratio is printed.
    assert summary.ceiling is not None and summary.ceiling[0] == 10 and summary.ceiling[1] > 0
    assert "ratio ours / ceiling" in format_summary(summary)
    # So did the memory reference, in a worker process of its own (its figure means something
    # only at large counts).
    assert summary.reference_memory is not None and summary.reference_memory[0] == 5
