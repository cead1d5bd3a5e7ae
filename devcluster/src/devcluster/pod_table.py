"""`kubectl get pods` as kube-apiserver prints it: READY, STATUS, RESTARTS from the status.

The STATUS column is not the phase: kube-apiserver's pod printer (k8s
pkg/printers/internalversion/printers.go, printPod) shows what a person needs, the waiting
reason of a container (CrashLoopBackOff, ContainerCreating), else its terminated reason
(Completed, Error) or exit code, `Init:` states while init containers run, and Terminating
once the pod is being deleted. devcluster printed the phase, so a crash-looping pod read
Running. `pod_cells` is pure.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from devcluster.ages import human_age
from devcluster.kinds import AGE_COLUMN, Column

JsonObject = dict[str, Any]
_READY = "The aggregate readiness state of this pod for accepting traffic."
_RESTARTS = "The number of times the containers in this pod have been restarted and when the \
last container in this pod has restarted."
POD_COLUMNS = (
    Column("Ready", "", "string", _READY),
    Column("Status", "", "string", "The aggregate status of the containers in this pod."),
    Column("Restarts", "", "string", _RESTARTS),
    AGE_COLUMN,
    Column("IP", "", "string", "The IP address assigned to the pod", 1),
    Column("Node", "", "string", "The name of the node assigned to the pod", 1),
    Column("Nominated Node", "", "string", "The name of the node nominated by the scheduler", 1),
    Column("Readiness Gates", "", "string", "The readiness gates of the pod", 1),
)


def _terminated_reason(state: JsonObject, prefix: str = "") -> str:
    if state.get("reason"):
        return prefix + str(state["reason"])
    if state.get("signal"):
        return f"{prefix}Signal:{state['signal']}"
    return f"{prefix}ExitCode:{state.get('exitCode', 0)}"


def _init_reason(pod: JsonObject) -> str | None:
    """The STATUS while an init container has not finished, None once all have."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c["name"] for c in spec.get("initContainers") or [] if c.get("restartPolicy")}
    total = len(spec.get("initContainers") or [])
    for index, container in enumerate(status.get("initContainerStatuses") or []):
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if terminated is not None and terminated.get("exitCode") == 0:
            continue
        if container["name"] in sidecars and container.get("started"):
            continue
        if terminated is not None:
            return _terminated_reason(terminated, "Init:")
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        return f"Init:{index}/{total}"
    return None


def _restarts(statuses: list[JsonObject], now: datetime) -> str:
    count = sum(int(s.get("restartCount") or 0) for s in statuses)
    finished = [
        str(((s.get("lastState") or {}).get("terminated") or {}).get("finishedAt") or "")
        for s in statuses
    ]
    last = max((f for f in finished if f), default="")
    return f"{count} ({human_age(last, now)} ago)" if count and last else str(count)


def _ready(pod: JsonObject) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _main_reason(pod: JsonObject, reason: str) -> tuple[str, int]:
    """The STATUS from the app containers (the first one's state wins), and how many are ready."""
    ready_count, running = 0, False
    for container in reversed((pod.get("status") or {}).get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            reason = str(waiting["reason"])
        elif terminated is not None:
            reason = _terminated_reason(terminated)
        elif container.get("ready") and "running" in state:
            running = True
            ready_count += 1
    if reason == "Completed" and running:
        reason = "Running" if _ready(pod) else "NotReady"
    return reason, ready_count


def pod_cells(pod: JsonObject, now: datetime | None = None) -> list[Any]:
    """One row of `kubectl get pods`: name, READY, STATUS, RESTARTS, AGE and the wide columns."""
    now = now or datetime.now(UTC)
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    init = _init_reason(pod)
    ready_count = 0
    if init is not None:
        reason = init
    else:
        reason, ready_count = _main_reason(pod, reason)
    if meta.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    gates = spec.get("readinessGates") or []
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    gates_ready = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    created = meta.get("creationTimestamp")
    return [
        meta["name"],
        f"{ready_count}/{len(spec.get('containers') or [])}",
        reason,
        _restarts(statuses, now),
        human_age(created, now) if created else None,
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"{gates_ready}/{len(gates)}" if gates else "<none>",
    ]
