"""The pure half of `benchmarks.scale`: per-CR samples, CSV, statistics, summary, plot.

Nothing here talks to a process or a server, so `tests/benchmarks/test_scale_report.py` checks
it directly; `benchmarks.scale` measures and hands the numbers over.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CSV_COLUMNS = ("index", "name", "applied_seconds", "latency_seconds")

# History event attributes that Temporal Cloud bills as actions, by the column they count in.
# Heartbeats are billed too but leave no event, so the total is a lower bound.
ACTION_EVENTS = {
    "workflow_execution_started_event_attributes": "starts",  # every run, continue-as-new too
    "workflow_execution_signaled_event_attributes": "signals",
    "activity_task_scheduled_event_attributes": "activities",
    "timer_started_event_attributes": "timers",
    "start_child_workflow_execution_initiated_event_attributes": "children",
    "upsert_workflow_search_attributes_event_attributes": "upserts",
}
ACTION_COLUMNS = (
    "starts",
    "signals",
    "activities",
    "local",
    "retries",
    "timers",
    "children",
    "upserts",
)
_ACTIVITY_STARTED = "activity_task_started_event_attributes"
_LOCAL_ACTIVITY_MARKER = "core_local_activity"  # the SDK's marker name; patches have another
_MARKER = "marker_recorded_event_attributes"
LOCAL_ACTIVITY = "local_activity"


def event_kind(kind: str, marker_name: str) -> str:
    """An event's attributes field, or `local_activity` for a local activity's marker."""
    if kind == _MARKER and marker_name == _LOCAL_ACTIVITY_MARKER:
        return LOCAL_ACTIVITY
    return kind


@dataclass(frozen=True)
class Sample:
    """One CR: when it was applied and how long it took to get ready (or complete)."""

    index: int
    """Position in the apply order, from 0: this many CRs were applied before it."""
    name: str
    applied: float
    """Seconds from the first apply to this CR's create call."""
    latency: float | None
    """Seconds from its create call to ready / Complete; None if it never got there."""


def write_csv(samples: Iterable[Sample], path: Path) -> None:
    """Write one row per CR (`CSV_COLUMNS`); a missing latency is an empty cell."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(CSV_COLUMNS)
        for s in samples:
            latency = "" if s.latency is None else f"{s.latency:.3f}"
            writer.writerow([s.index, s.name, f"{s.applied:.3f}", latency])


def read_csv(path: Path) -> list[Sample]:
    """Read what `write_csv` wrote."""
    with path.open(newline="") as source:
        return [
            Sample(
                index=int(row["index"]),
                name=row["name"],
                applied=float(row["applied_seconds"]),
                latency=float(row["latency_seconds"]) if row["latency_seconds"] else None,
            )
            for row in csv.DictReader(source)
        ]


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (`fraction` in (0, 1]) of a non-empty sequence."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Latencies:
    """Apply → ready (or Complete) over one run's CRs, in seconds."""

    count: int
    reached: int
    p50: float
    p95: float
    p99: float
    max: float
    last: float
    """From the first apply to the last CR ready: the run's wall time."""

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> Latencies:
        """Statistics over the CRs that got there (all zero if none did)."""
        done = [s.latency for s in samples if s.latency is not None]
        ends = [s.applied + s.latency for s in samples if s.latency is not None]
        if not done:
            return cls(len(samples), 0, 0.0, 0.0, 0.0, 0.0, 0.0)
        return cls(
            count=len(samples),
            reached=len(done),
            p50=percentile(done, 0.5),
            p95=percentile(done, 0.95),
            p99=percentile(done, 0.99),
            max=max(done),
            last=max(ends),
        )


def count_actions(events: Iterable[tuple[str, int]]) -> Counter[str]:
    """Events and billable actions of one workflow run's history.

    Args:
        events: Per history event, its kind (`event_kind`: the name of its attributes field,
            `HistoryEvent.WhichOneof("attributes")`) and, for a started activity, its attempt
            (else anything).

    Returns:
        `events` (all of them) and one count per `ACTION_COLUMNS` entry; `retries` are the
        activity attempts after the first, which Temporal bills like a new activity; `local`
        the workflow tasks that ran local activities.
    """
    counts: Counter[str] = Counter({c: 0 for c in ("events", *ACTION_COLUMNS)})
    in_markers = False  # within the markers one workflow task completion recorded
    for kind, attempt in events:
        counts["events"] += 1
        if kind == LOCAL_ACTIVITY and not in_markers:
            # Temporal Cloud bills the markers of one workflow task as one action, however
            # many local activities they record.
            counts["local"] += 1
            in_markers = True
        elif kind not in (LOCAL_ACTIVITY, _MARKER):
            in_markers = False
        if kind in ACTION_EVENTS:
            counts[ACTION_EVENTS[kind]] += 1
        elif kind == _ACTIVITY_STARTED and attempt > 1:
            counts["retries"] += attempt - 1
    return counts


def actions(counts: Mapping[str, int]) -> int:
    """The billable actions in a lifecycle's counts (see `count_actions`)."""
    return sum(counts.get(c, 0) for c in ACTION_COLUMNS)


@dataclass(frozen=True)
class Memory:
    """One process's resident memory, in KiB: before the CRs, with them all ready, and peak."""

    label: str
    before: int
    after: int
    peak: int
    cpu_seconds: float = 0.0


@dataclass
class Summary:
    """Everything one run prints."""

    kind: str
    count: int
    workers: int
    command: str
    applied_in: float
    """Seconds the create calls took, back to back."""
    latencies: Latencies
    workers_memory: list[Memory]
    others_memory: list[Memory] = field(default_factory=list)
    lifecycles: list[Counter[str]] = field(default_factory=list)
    """Per sampled CR, `count_actions` summed over its workflows' runs."""
    deleted_in: float | None = None
    """Seconds from the first delete call until no workflow was left running."""
    notes: list[str] = field(default_factory=list)
    ceiling: tuple[int, float] | None = None
    """The bare-Temporal ceiling measured before the CRs: lifecycles run, and per second."""
    reference_memory: tuple[int, float] | None = None
    """Bare-Temporal lifecycles kept open by a worker process of their own, and KiB per one."""

    def memory_per_cr(self) -> tuple[float, float]:
        """KiB per CR over all workers: growth with every CR ready, and peak growth."""
        grown = sum(m.after - m.before for m in self.workers_memory)
        peak = sum(m.peak - m.before for m in self.workers_memory)
        return grown / max(1, self.count), peak / max(1, self.count)


def _median_max(values: Sequence[int]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):g} (max {max(values)})"


def format_summary(summary: Summary) -> str:
    """The table `benchmarks.scale` prints and saves beside the CSV."""
    what = "RayClusters ready" if summary.kind == "raycluster" else "RayJobs Complete"
    goal = "ready" if summary.kind == "raycluster" else "Complete"
    lat = summary.latencies
    lines = [
        f"$ {summary.command}",
        f"{summary.count} {summary.kind}s, {summary.workers} worker process(es)",
        f"{'create calls':<34} {summary.applied_in:8.1f} s",
        f"{what + ' (all)':<34} {lat.last:8.1f} s  ({lat.reached}/{lat.count} got there)",
        f"{f'apply -> {goal} p50 / p95 / p99':<34} {lat.p50:8.2f} / {lat.p95:.2f} / {lat.p99:.2f} s"
        f"  (max {lat.max:.2f} s)",
    ]
    if summary.ceiling is not None and lat.last > 0:
        runs, rate = summary.ceiling
        ours = lat.reached / lat.last
        lines.append(f"{what + ' per s':<34} {ours:8.2f}")
        lines.append(
            f"{'bare Temporal ceiling per s':<34} {rate:8.2f}  "
            f"({runs} signal-with-start workflows x 4 no-op activities, same server)"
        )
        lines.append(f"{'ratio ours / ceiling':<34} {ours / rate:8.2f}")
    if summary.deleted_in is not None:
        lines.append(f"{'delete all -> workflows closed':<34} {summary.deleted_in:8.1f} s")
    grown, peak = summary.memory_per_cr()
    lines.append(f"{'worker memory per CR':<34} {grown:8.1f} KiB  (peak {peak:.1f} KiB)")
    if summary.reference_memory is not None:
        runs, kib = summary.reference_memory
        lines.append(
            f"{'bare Temporal memory per workflow':<34} {kib:8.1f} KiB  "
            f"({runs} lifecycles kept open by a worker of their own)"
        )
        if kib > 0:  # a handful of lifecycles may not grow the process at all
            lines.append(f"{'ratio ours / bare':<34} {grown / kib:8.2f}")
    lines.append(f"{'process':<12} {'RSS before':>11} {'all ready':>11} {'peak':>11} {'CPU s':>8}")
    for m in [*summary.workers_memory, *summary.others_memory]:
        lines.append(
            f"{m.label:<12} {m.before / 1024:>7.1f} MiB {m.after / 1024:>7.1f} MiB "
            f"{m.peak / 1024:>7.1f} MiB {m.cpu_seconds:>8.1f}"
        )
    if summary.lifecycles:
        per = summary.lifecycles
        lines.append(f"per lifecycle (sample of {len(per)}; median, max):")
        lines.append(f"  {'history events':<16} {_median_max([c['events'] for c in per])}")
        lines.append(f"  {'actions':<16} {_median_max([actions(c) for c in per])}")
        for column in ACTION_COLUMNS:
            lines.append(f"    {column:<14} {_median_max([c[column] for c in per])}")
    lines += summary.notes
    return "\n".join(lines)


def plot(series: Mapping[str, Sequence[Sample]], path: Path, title: str) -> None:
    """Apply → ready latency against the number of CRs applied, one colour per run.

    Each CR is a dot; the line is the median over a sliding window of 5 % of the run.
    matplotlib comes from the optional `bench` extra.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5), dpi=110)
    for label, samples in series.items():
        done = [s for s in samples if s.latency is not None]
        xs = [s.index + 1 for s in done]
        ys = [s.latency for s in done if s.latency is not None]
        dots = axes.scatter(xs, ys, s=4, alpha=0.35, label=label)
        window = max(1, len(done) // 20)
        medians = rolling_median(ys, window)
        axes.plot(xs, medians, color=dots.get_facecolor()[0], alpha=1.0, linewidth=1.5)
    axes.set_xlabel("CRs applied (this CR's position in the apply order)")
    axes.set_ylabel("apply → ready / Complete (s)")
    axes.set_title(title)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(markerscale=4)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def rolling_median(values: Sequence[float], window: int) -> list[float]:
    """The median of each value's trailing window (shorter at the start)."""
    return [statistics.median(values[max(0, i + 1 - window) : i + 1]) for i in range(len(values))]
