"""The pure half of `benchmarks.versus`: API request counts, one run's figures, the table.

Nothing here talks to a process or a server, so `tests/benchmarks/test_versus_report.py`
checks it directly; `benchmarks.versus` measures and hands the numbers over.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.scale_report import Latencies, Sample

KUBERAY = "kuberay"
OURS = "kuberay-temporal"
OPERATOR_CLIENTS = {KUBERAY: ("kuberay-operator",), OURS: ("worker", "bridge")}
"""Which of `client_of`'s names are each operator's own API clients."""
TOP_CALLS = 6
"""How many of each operator's most frequent calls the table lists."""


def request_total(metrics: str) -> float:
    """The sum of every `apiserver_request_total` series in the API server's /metrics text."""
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith(("apiserver_request_total{", "apiserver_request_total ")):
            total += float(line.rsplit(" ", 1)[1])
    return total


def client_of(user: str) -> str:
    """A short name for the API client an audit event's user is."""
    if user == "kuberay-operator":
        return "kuberay-operator"
    if user.endswith(":kuberay-temporal-worker"):
        return "worker"
    if user.endswith(":kuberay-temporal-bridge"):
        return "bridge"
    if user == "kubernetes-admin":
        return "benchmark"
    if user.startswith("system:node:"):
        return "kubelet"
    if user == "system:kube-controller-manager" or user.startswith(
        "system:serviceaccount:kube-system:"
    ):
        return "controller-manager"
    if user == "system:kube-scheduler":
        return "scheduler"
    if user == "system:apiserver":
        return "apiserver"
    return "other"


def call_of(event: dict[str, Any]) -> str:
    """An audit event's request as `verb resource[/subresource]`, e.g. `get services/proxy`."""
    ref = event.get("objectRef") or {}
    resource = ref.get("resource") or event.get("requestURI", "?").split("?")[0]
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    return f"{event.get('verb', '?')} {resource}"


def audit_files(log: Path) -> list[Path]:
    """The API server's audit log and its rotated parts (`audit-<time>.log`), oldest first."""
    rotated = sorted(log.parent.glob(f"{log.stem}-*{log.suffix}"))
    return [*rotated, log] if log.exists() else rotated


def audit_lines(log: Path) -> Iterator[str]:
    """Every line of the audit log, its rotated parts included, oldest first."""
    for path in audit_files(log):
        with path.open(encoding="utf-8", errors="replace") as lines:
            yield from lines


def audit_counts(
    lines: Iterable[str], since: datetime | None = None, until: datetime | None = None
) -> Counter[tuple[str, str]]:
    """Completed requests per (`client_of` name, `call_of`), from the API server's audit lines.

    A request is counted once, at its ResponseComplete stage (a watch also has a
    ResponseStarted one); a line cut short by a write still under way is left out. With
    `since`/`until` (timezone-aware), only requests received in that window count.
    """
    counts: Counter[tuple[str, str]] = Counter()
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if since is not None or until is not None:
            received = datetime.fromisoformat(event.get("requestReceivedTimestamp", ""))
            if (since is not None and received < since) or (until is not None and received > until):
                continue
        if event.get("stage") == "ResponseComplete":
            client = client_of(event.get("user", {}).get("username", ""))
            counts[client, call_of(event)] += 1
    return counts


@dataclass(frozen=True)
class Process:
    """One process's share of a run: CPU seconds spent during it, and its peak RSS."""

    label: str
    cpu_seconds: float
    peak_kib: int


@dataclass
class Run:
    """One operator's run of the N CRs on a fresh stack."""

    operator: str
    """`KUBERAY` or `OURS`."""
    samples: list[Sample]
    operator_processes: list[Process]
    shared_processes: list[Process]
    """The control plane and the node, the same programs in both runs."""
    requests_total: float
    """Every client's API requests during the run (`apiserver_request_total`'s growth)."""
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Requests during the run by client and call (`audit_counts`)."""

    @property
    def latencies(self) -> Latencies:
        return Latencies.of(self.samples)

    def by_client(self) -> Counter[str]:
        """Requests during the run per client."""
        out: Counter[str] = Counter()
        for (client, _), n in self.requests.items():
            out[client] += n
        return out

    def operator_calls(self) -> Counter[str]:
        """The operator's own requests during the run per call, over all its clients."""
        mine = OPERATOR_CLIENTS[self.operator]
        out: Counter[str] = Counter()
        for (client, call), n in self.requests.items():
            if client in mine:
                out[call] += n
        return out

    @property
    def operator_requests(self) -> int:
        return sum(self.operator_calls().values())


def ratio(ours: float, theirs: float) -> float:
    """ours / theirs; infinite when theirs is 0 and ours is not."""
    if theirs == 0:
        return 0.0 if ours == 0 else float("inf")
    return ours / theirs


def ratio_line(ours: Run, theirs: Run) -> str:
    """The table's last line, the one figure a script reads."""
    value = ratio(ours.latencies.p50, theirs.latencies.p50)
    return f"ratio apply->ready p50 kuberay-temporal/kuberay: {value:.2f}"


def format_table(title: str, theirs: Run, ours: Run, notes: Sequence[str] = ()) -> str:
    """Both runs side by side, one figure a row, then the notes and the ratio line."""
    count = max(1, len(theirs.samples))
    rows: list[tuple[str, str, str]] = []

    def row(label: str, a: str, b: str) -> None:
        rows.append((label, a, b))

    lat = (theirs.latencies, ours.latencies)
    row("got there", *(f"{x.reached}/{x.count}" for x in lat))
    row("first apply -> all there (s)", *(f"{x.last:.1f}" for x in lat))
    for name in ("p50", "p95", "p99"):
        row(f"apply -> there {name} (s)", *(f"{getattr(x, name):.3f}" for x in lat))
    for run_ in (theirs, ours):
        for p in run_.operator_processes:
            cells = [f"{p.cpu_seconds:.1f} s, {p.peak_kib / 1024:.0f} MiB peak", ""]
            if run_ is ours:
                cells.reverse()
            row(f"  {p.label}: CPU, peak RSS", cells[0], cells[1])
    row(
        "operator CPU (s)",
        *(f"{sum(p.cpu_seconds for p in r.operator_processes):.1f}" for r in (theirs, ours)),
    )
    row(
        "operator peak RSS (MiB, summed)",
        *(f"{sum(p.peak_kib for p in r.operator_processes) / 1024:.0f}" for r in (theirs, ours)),
    )
    row(
        "operator API requests per CR",
        *(f"{r.operator_requests / count:.1f}" for r in (theirs, ours)),
    )
    row(
        "all API requests per CR",
        *(f"{r.requests_total / count:.1f}" for r in (theirs, ours)),
    )
    per_client = (theirs.by_client(), ours.by_client())
    operator_clients = {c for names in OPERATOR_CLIENTS.values() for c in names}
    for client in sorted((set(per_client[0]) | set(per_client[1])) - operator_clients):
        row(f"  {client} requests per CR", *(f"{x[client] / count:.1f}" for x in per_client))
    shared = [p.label for p in theirs.shared_processes]
    for label in shared:
        cells = []
        for r in (theirs, ours):
            found = [p for p in r.shared_processes if p.label == label]
            cells.append(f"{found[0].cpu_seconds:.1f}" if found else "-")
        row(f"{label} CPU (s)", cells[0], cells[1])
    width = max(len(r[0]) for r in rows)
    left = max(len(KUBERAY), *(len(r[1]) for r in rows))
    lines = [title, f"{'':{width}}  {KUBERAY:>{left}}  {OURS}"]
    lines += [f"{label:{width}}  {a:>{left}}  {b}" for label, a, b in rows]
    for run_ in (theirs, ours):
        top = run_.operator_calls().most_common(TOP_CALLS)
        calls = ", ".join(f"{call} {n / count:.1f}" for call, n in top)
        lines.append(f"{run_.operator}'s most frequent requests per CR: {calls or 'none'}")
    lines += list(notes)
    lines.append(ratio_line(ours, theirs))
    return "\n".join(lines)
