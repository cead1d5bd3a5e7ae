"""`benchmarks.versus_report`: request counts from /metrics and the audit log, and the table."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.scale_report import Sample
from benchmarks.versus_report import (
    KUBERAY,
    OURS,
    Process,
    Run,
    audit_counts,
    audit_lines,
    client_of,
    format_table,
    ratio,
    request_total,
)

METRICS = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",verb="GET",resource="pods"} 12
apiserver_request_total{code="201",verb="POST",resource="pods"} 3
apiserver_request_total_other{code="200"} 1000
apiserver_request_duration_seconds_count{verb="GET"} 99
"""


def test_the_request_total_sums_every_series_of_that_counter_only() -> None:
    assert request_total(METRICS) == 15.0


def test_users_are_named_for_the_client_they_are() -> None:
    assert client_of("kuberay-operator") == "kuberay-operator"
    assert client_of("system:serviceaccount:kuberay-temporal:kuberay-temporal-worker") == "worker"
    assert client_of("system:serviceaccount:kuberay-temporal:kuberay-temporal-bridge") == "bridge"
    assert client_of("kubernetes-admin") == "benchmark"
    assert client_of("system:node:devcluster") == "kubelet"
    assert client_of("system:serviceaccount:kube-system:job-controller") == "controller-manager"
    assert client_of("system:kube-scheduler") == "scheduler"
    assert client_of("devcluster:gateway-data-plane") == "other"


def _event(
    user: str,
    verb: str,
    resource: str,
    stage: str = "ResponseComplete",
    at: str = "17:25:01",
    **ref: str,
) -> str:
    return json.dumps(
        {
            "stage": stage,
            "requestReceivedTimestamp": f"2026-12-03T{at}.000000Z",
            "verb": verb,
            "user": {"username": user},
            "objectRef": {"resource": resource, **ref},
            "requestURI": f"/api/v1/{resource}",
        }
    )


def test_audit_lines_count_each_completed_request_once_by_client_and_call() -> None:
    lines = [
        _event("kuberay-operator", "get", "services", subresource="proxy"),
        _event("kuberay-operator", "get", "services", subresource="proxy"),
        _event("kuberay-operator", "watch", "pods", stage="ResponseStarted"),
        _event("kuberay-operator", "watch", "pods"),
        _event("system:node:n", "patch", "pods", subresource="status"),
        '{"stage": "ResponseComplete", "user": {"userna',  # cut short by a write under way
    ]

    assert audit_counts(lines) == Counter(
        {
            ("kuberay-operator", "get services/proxy"): 2,
            ("kuberay-operator", "watch pods"): 1,
            ("kubelet", "patch pods/status"): 1,
        }
    )


def test_a_rotated_audit_log_is_read_whole_and_counted_in_the_run_s_window(tmp_path: Path) -> None:
    # The API server renames a full audit.log to audit-<time>.log and starts a new one; a
    # long run's requests are spread over all of them.
    logs = {
        "audit-2026-12-03T17-37-20.833.log": ["17:25:00", "17:30:00"],
        "audit-2026-12-03T17-48-29.581.log": ["17:40:00"],
        "audit.log": ["17:50:00", "18:10:00"],
    }
    for name, times in logs.items():
        lines = [_event("sa:kuberay-temporal-worker", "get", t, at=t) for t in times]
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))

    lines = list(audit_lines(tmp_path / "audit.log"))
    counts = audit_counts(
        lines,
        since=datetime(2026, 12, 3, 17, 29, tzinfo=UTC),
        until=datetime(2026, 12, 3, 18, 0, tzinfo=UTC),
    )

    assert [json.loads(line)["objectRef"]["resource"] for line in lines] == [
        "17:25:00",
        "17:30:00",
        "17:40:00",
        "17:50:00",
        "18:10:00",
    ]
    assert counts == Counter(
        {
            ("worker", "get 17:30:00"): 1,
            ("worker", "get 17:40:00"): 1,
            ("worker", "get 17:50:00"): 1,
        }
    )


def _run(operator: str, latencies: list[float], requests: Counter[tuple[str, str]]) -> Run:
    samples = [Sample(i, f"rc{i}", float(i), x) for i, x in enumerate(latencies)]
    own = [
        Process(label, 1.5, 2048)
        for label in (
            ["kuberay-operator"] if operator == KUBERAY else ["worker", "bridge", "temporal"]
        )
    ]
    return Run(operator, samples, own, [Process("etcd", 0.5, 1024)], 40.0, requests)


def test_the_table_shows_both_runs_and_ends_with_the_ratio_of_the_medians() -> None:
    theirs = _run(
        KUBERAY,
        [1.0, 2.0, 3.0, 4.0],
        Counter({("kuberay-operator", "get pods"): 8, ("kubelet", "patch pods/status"): 4}),
    )
    ours = _run(
        OURS,
        [3.0, 3.0, 5.0, 9.0],
        Counter(
            {
                ("worker", "get pods"): 12,
                ("bridge", "watch pods"): 4,
                ("kubelet", "patch pods/status"): 8,
            }
        ),
    )

    text = format_table("4 RayClusters", theirs, ours, ["a note"])
    lines = text.splitlines()

    assert lines[0] == "4 RayClusters"
    assert lines[-1] == "ratio apply->ready p50 kuberay-temporal/kuberay: 1.50"
    assert lines[-2] == "a note"
    rows = {line.strip().split("  ")[0]: line.split() for line in lines[2:-2]}
    assert rows["operator API requests per CR"][-2:] == ["2.0", "4.0"]
    assert rows["kubelet requests per CR"][-2:] == ["1.0", "2.0"]
    assert rows["operator CPU (s)"][-2:] == ["1.5", "4.5"]
    assert rows["operator peak RSS (MiB, summed)"][-2:] == ["2", "6"]
    assert "kuberay-temporal's most frequent requests per CR: get pods 3.0, watch pods 1.0" in lines


def test_a_ratio_over_nothing_is_infinite_unless_both_are_nothing() -> None:
    assert ratio(0.0, 0.0) == 0.0
    assert ratio(1.0, 0.0) == float("inf")
    assert ratio(3.0, 2.0) == 1.5
