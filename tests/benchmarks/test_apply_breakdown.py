"""The apply → head pod breakdown: its reading of a trace, and a tiny run on the real stack.

The run uses real processes throughout (devcluster's simulated runtime, the Temporal dev
server, a worker and a bridge exporting over OTLP/HTTP to the benchmark's receiver); only the
size is small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.apply_breakdown import DELIVERY, POD_CALL, Span, marks, run, steps, table

MS = 1_000_000


def span(name: str, start_ms: int, end_ms: int, ident: int, parent: int = 0) -> Span:
    return Span(
        name=name,
        trace_id=b"t",
        span_id=bytes([ident]),
        parent_id=bytes([parent]) if parent else b"",
        start_ns=start_ms * MS,
        end_ns=end_ms * MS,
    )


TRACE = [
    span(DELIVERY, 10, 30, 1),
    span("SignalWithStartWorkflow:RayCluster", 12, 28, 2, parent=1),
    span("RunWorkflow:RayCluster", 40, 40, 3, parent=2),
    span("StartActivity:read_cluster", 41, 41, 4, parent=3),
    span("RunActivity:read_cluster", 50, 70, 5, parent=4),
    span("GET /apis/ray.io/v1/namespaces/{namespace}/rayclusters/{name}", 52, 60, 6, parent=5),
    span("StartActivity:apply_cluster", 80, 80, 7, parent=3),
    span("RunActivity:apply_cluster", 90, 130, 8, parent=7),
    span(POD_CALL, 100, 110, 9, parent=8),
    span(POD_CALL, 115, 125, 10, parent=8),  # a worker pod: after the head, not counted
]


def test_the_marks_follow_one_path_to_the_head_pod() -> None:
    found = marks(0, TRACE)

    assert found == [
        ("apply", 0),
        ("delivery", 10 * MS),
        ("workflow task", 40 * MS),
        ("read_cluster scheduled", 41 * MS),
        ("read_cluster started", 50 * MS),
        ("read_cluster done", 70 * MS),
        ("apply_cluster scheduled", 80 * MS),
        ("apply_cluster started", 90 * MS),
        ("POST pods sent", 100 * MS),
        ("head pod created", 110 * MS),
    ]
    assert steps(found)[:2] == [
        ("apply → delivery", 10.0),
        ("delivery → workflow task", 30.0),
    ]
    assert sum(ms for _, ms in steps(found)) == 110.0


def test_no_marks_until_the_pod_call_and_its_activity_are_exported() -> None:
    assert marks(0, [s for s in TRACE if s.name != POD_CALL]) is None
    # The activity's span ends after the call in it: without it the path would lack a mark.
    assert marks(0, [s for s in TRACE if s.name != "RunActivity:apply_cluster"]) is None


def test_the_table_gives_each_step_its_median_in_the_order_taken() -> None:
    runs = [[("a → b", 1.0), ("b → c", 10.0)], [("a → b", 3.0), ("b → c", 30.0)]]

    lines = table(runs)

    assert [line.split()[0] for line in lines[1:]] == ["a", "b"]
    assert lines[1].split()[-3:] == ["2.0", "3.0", "2"]


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_tiny_run_breaks_down_every_apply(tmp_path: Path) -> None:
    runs = await run(2, 0.1, tmp_path)

    assert len(runs) == 2
    for found in runs:
        labels = [label for label, _ in found]
        assert labels[0] == "apply → delivery" and labels[-1] == "POST pods sent → head pod created"
        assert any(label.endswith(" scheduled") for label in labels), labels
        assert all(ms >= 0 for _, ms in found), found
