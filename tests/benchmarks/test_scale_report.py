"""The pure parts of the scale benchmark: samples and CSV, statistics, counting, summary, plot."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.scale import lifecycle_queries, outcome, output_paths, replot, sample_names
from benchmarks.scale_report import (
    Latencies,
    Memory,
    Sample,
    Summary,
    actions,
    count_actions,
    event_kind,
    format_summary,
    percentile,
    read_csv,
    rolling_median,
    write_csv,
)
from benchmarks.scale_stack import parse_cpu_seconds, parse_status


def samples() -> list[Sample]:
    return [
        Sample(0, "ra0000", 0.0, 2.0),
        Sample(1, "ra0001", 0.5, 3.0),
        Sample(2, "ra0002", 1.0, None),
        Sample(3, "ra0003", 1.5, 1.0),
    ]


def test_csv_round_trip_keeps_missing_latencies(tmp_path: Path) -> None:
    path = tmp_path / "out" / "raycluster-n4-w1.csv"
    write_csv(samples(), path)
    assert path.read_text().splitlines()[0] == "index,name,applied_seconds,latency_seconds"
    assert path.read_text().splitlines()[3] == "2,ra0002,1.000,"
    assert read_csv(path) == samples()


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile(values, 0.99) == 99.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([7.0], 0.99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_latencies_count_only_the_crs_that_got_there() -> None:
    stats = Latencies.of(samples())
    assert (stats.count, stats.reached) == (4, 3)
    assert (stats.p50, stats.max) == (2.0, 3.0)
    assert stats.last == 3.5  # the second CR: applied at 0.5 s, ready 3 s later
    assert Latencies.of([Sample(0, "x", 0.0, None)]).reached == 0


def test_actions_are_counted_from_history_event_kinds_and_attempts() -> None:
    events = [
        ("workflow_execution_started_event_attributes", 0),
        ("workflow_execution_signaled_event_attributes", 0),
        ("workflow_task_scheduled_event_attributes", 0),
        ("activity_task_scheduled_event_attributes", 0),
        ("activity_task_started_event_attributes", 3),  # two retries
        ("activity_task_completed_event_attributes", 0),
        ("timer_started_event_attributes", 0),
        ("upsert_workflow_search_attributes_event_attributes", 0),
        ("start_child_workflow_execution_initiated_event_attributes", 0),
        ("activity_task_started_event_attributes", 1),
        ("workflow_task_completed_event_attributes", 0),
        (event_kind("marker_recorded_event_attributes", "core_patch"), 0),
        (event_kind("marker_recorded_event_attributes", "core_local_activity"), 0),
        (event_kind("marker_recorded_event_attributes", "core_local_activity"), 0),
        ("workflow_task_completed_event_attributes", 0),
        (event_kind("marker_recorded_event_attributes", "core_local_activity"), 0),
    ]
    counts = count_actions(events)
    assert counts["events"] == 16
    # One action per workflow task's markers, however many local activities; a patch is none.
    assert counts["local"] == 2
    assert counts["retries"] == 2
    assert [counts[c] for c in ("starts", "signals", "activities", "timers")] == [1, 1, 1, 1]
    assert (counts["upserts"], counts["children"]) == (1, 1)
    assert actions(counts) == 10
    assert actions(count_actions([])) == 0


def test_summary_shows_latency_memory_per_cr_and_lifecycle_figures() -> None:
    lifecycle = count_actions([("workflow_execution_started_event_attributes", 0)] * 2)
    longer = Counter(lifecycle)
    longer["events"] = 4
    summary = Summary(
        kind="raycluster",
        count=4,
        workers=2,
        command="python -m benchmarks.scale --kind raycluster --count 4 --workers 2",
        applied_in=0.25,
        latencies=Latencies.of(samples()),
        workers_memory=[Memory("worker-1", 1000, 1400, 1500), Memory("worker-2", 1000, 1200, 1300)],
        others_memory=[Memory("bridge", 2048, 3072, 3072, 1.5)],
        lifecycles=[lifecycle, longer],
        deleted_in=2.0,
        notes=["machine: 2 CPUs"],
        reference_memory=(1000, 60.0),
    )
    assert summary.memory_per_cr() == (150.0, 200.0)  # (400 + 200) / 4, (500 + 300) / 4
    text = format_summary(summary)
    assert text.splitlines()[0] == f"$ {summary.command}"
    assert "(3/4 got there)" in text
    assert "2.00 / 3.00 / 3.00 s" in text
    assert "150.0 KiB  (peak 200.0 KiB)" in text
    assert re.search(r"bare Temporal memory per workflow +60.0 KiB +\(1000 lifecycles", text)
    assert re.search(r"ratio ours / bare +2.50$", text, re.MULTILINE)  # 150 / 60
    assert "bridge" in text and "3.0 MiB" in text
    assert "history events   3 (max 4)" in text
    assert "actions          2 (max 2)" in text
    assert text.endswith("machine: 2 CPUs")


def test_outcome_per_kind() -> None:
    assert outcome("raycluster", {"status": {"state": "ready"}}) == "done"
    assert outcome("raycluster", {"status": {}}) is None
    assert outcome("rayjob", {"status": {"jobDeploymentStatus": "Complete"}}) == "done"
    assert outcome("rayjob", {"status": {"jobDeploymentStatus": "Running"}}) is None
    assert outcome("rayjob", {"status": {"jobDeploymentStatus": "Failed"}}) == "failed"


def test_a_rayjob_lifecycle_includes_its_clusters_workflows() -> None:
    queries = lifecycle_queries("rayjob", "ra0001", "ra0001-abcde")
    assert queries == [
        'RayKind = "RayJob" AND RayNamespace = "default" AND RayName = "ra0001"',
        'RayKind = "RayCluster" AND RayNamespace = "default" AND RayName = "ra0001-abcde"',
    ]
    assert len(lifecycle_queries("raycluster", "ra0001", None)) == 1


def test_sample_names_spread_over_the_apply_order() -> None:
    names = [f"n{i}" for i in range(100)]
    assert sample_names(names, 4) == ["n0", "n25", "n50", "n75"]
    assert sample_names(names[:3], 20) == names[:3]


def test_proc_parsing() -> None:
    status = "Name:\tpython\nVmHWM:\t  90120 kB\nVmRSS:\t   81234 kB\nThreads:\t4\n"
    assert parse_status(status) == (81234, 90120)
    stat = "4242 (python -m x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0"
    assert parse_cpu_seconds(stat, 100) == 3.0
    assert parse_status(Path(f"/proc/{os.getpid()}/status").read_text())[0] > 0


def test_runs_of_one_size_share_a_plot(tmp_path: Path) -> None:
    for kind, workers in (("raycluster", 1), ("rayjob", 2)):
        csv_path, _, png = output_paths(tmp_path, kind, 4, workers)
        write_csv(samples(), csv_path)
    write_csv(samples(), output_paths(tmp_path, "raycluster", 9, 1)[0])
    beside, _, _ = output_paths(tmp_path, "rayjob", 4, 1, running=1000)
    assert beside.name == "rayjob-n4-r1000-w1.csv"  # never the run without long jobs
    write_csv(samples(), beside)
    replot(tmp_path, 4, png)
    assert png == tmp_path / "latency-n4.png"
    assert png.read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "latency-n9.png").exists()


def test_rolling_median_uses_the_trailing_window() -> None:
    assert rolling_median([1.0, 5.0, 3.0, 9.0], 2) == [1.0, 3.0, 4.0, 6.0]
    assert rolling_median([2.0], 5) == [2.0]
