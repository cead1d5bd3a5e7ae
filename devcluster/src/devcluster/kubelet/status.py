"""Pod status from container states, as the kubelet computes it (pure).

The runtimes only keep a `ContainerRecord` per container; this module turns those into what
clients read: `phase` (kubelet's getPhase), the conditions PodScheduled, Initialized,
ContainersReady and Ready with transition times that only move when the status does, and
`containerStatuses`/`initContainerStatuses` with state, lastState, restartCount and ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]
WAITING, RUNNING, TERMINATED = "waiting", "running", "terminated"


@dataclass
class ContainerRecord:
    """What the kubelet knows about one container of a pod."""

    name: str
    image: str
    state: str = WAITING
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int = 0
    started_at: str = ""
    finished_at: str = ""
    ready: bool = False
    started: bool = False
    restart_count: int = 0
    last_terminated: JsonObject | None = None
    container_id: str = ""

    def terminated(self) -> JsonObject:
        """Return the `state.terminated` object of this record."""
        out: JsonObject = {
            "exitCode": self.exit_code,
            "reason": self.reason or ("Completed" if self.exit_code == 0 else "Error"),
            "startedAt": self.started_at or None,
            "finishedAt": self.finished_at or None,
        }
        if self.message:
            out["message"] = self.message
        if self.container_id:
            out["containerID"] = self.container_id
        return out


def container_status(record: ContainerRecord) -> JsonObject:
    """Return one `ContainerStatus`."""
    if record.state == RUNNING:
        state: JsonObject = {"running": {"startedAt": record.started_at}}
    elif record.state == TERMINATED:
        state = {"terminated": record.terminated()}
    else:
        waiting: JsonObject = {"reason": record.reason}
        if record.message:
            waiting["message"] = record.message
        state = {"waiting": waiting}
    out: JsonObject = {
        "name": record.name,
        "image": record.image,
        "imageID": "",
        "state": state,
        "lastState": {"terminated": record.last_terminated} if record.last_terminated else {},
        "ready": record.ready and record.state == RUNNING,
        "restartCount": record.restart_count,
        "started": record.started and record.state == RUNNING,
    }
    if record.container_id:
        out["containerID"] = record.container_id
    return out


def initialized(inits: Sequence[ContainerRecord]) -> bool:
    """Return whether every init container has completed successfully."""
    return all(r.state == TERMINATED and r.exit_code == 0 for r in inits)


def phase(
    restart_policy: str, inits: Sequence[ContainerRecord], containers: Sequence[ContainerRecord]
) -> str:
    """Return the pod phase, following kubelet's getPhase."""
    failed_init = any(
        (r.state == TERMINATED and r.exit_code != 0)
        or (r.state == WAITING and r.last_terminated is not None)
        for r in inits
    )
    if failed_init and restart_policy == "Never":
        return "Failed"
    if not initialized(inits):
        return "Pending"
    running = stopped = succeeded = waiting = 0
    for record in containers:
        if record.state == RUNNING:
            running += 1
        elif record.state == TERMINATED:
            stopped += 1
            succeeded += record.exit_code == 0
        elif record.last_terminated is not None:
            stopped += 1
        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if restart_policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if restart_policy == "Never" else "Running"
    return "Pending"


def _condition(
    kind: str, ok: bool, reason: str, previous: Sequence[JsonObject], now: str
) -> JsonObject:
    status = "True" if ok else "False"
    old = next((c for c in previous if c.get("type") == kind), None)
    since = old["lastTransitionTime"] if old and old.get("status") == status else now
    out: JsonObject = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": since,
    }
    if not ok and reason:
        out["reason"] = reason
    return out


def conditions(
    pod_phase: str,
    inits: Sequence[ContainerRecord],
    containers: Sequence[ContainerRecord],
    previous: Sequence[JsonObject],
    now: str,
) -> list[JsonObject]:
    """Return the four standard pod conditions."""
    done = pod_phase in ("Succeeded", "Failed")
    ready = not done and all(r.state == RUNNING and r.ready for r in containers)
    not_ready = "PodCompleted" if done else "ContainersNotReady"
    init_ok = initialized(inits) or (done and pod_phase == "Succeeded")
    return [
        _condition("Initialized", init_ok, "ContainersNotInitialized", previous, now),
        _condition("Ready", ready, not_ready, previous, now),
        _condition("ContainersReady", ready, not_ready, previous, now),
        _condition("PodScheduled", True, "", previous, now),
    ]


def pod_status(
    pod: JsonObject,
    inits: Sequence[ContainerRecord],
    containers: Sequence[ContainerRecord],
    pod_ip: str,
    host_ip: str,
    now: str,
) -> JsonObject:
    """Return the status the kubelet writes for a pod."""
    previous = pod.get("status") or {}
    restart_policy = pod.get("spec", {}).get("restartPolicy", "Always")
    pod_phase = phase(restart_policy, inits, containers)
    status: JsonObject = {
        "phase": pod_phase,
        "conditions": conditions(
            pod_phase, inits, containers, previous.get("conditions") or [], now
        ),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": previous.get("startTime") or now,
        "containerStatuses": [container_status(r) for r in containers],
        "qosClass": previous.get("qosClass") or "BestEffort",
    }
    if pod_ip:
        status["podIP"], status["podIPs"] = pod_ip, [{"ip": pod_ip}]
    if inits:
        status["initContainerStatuses"] = [container_status(r) for r in inits]
    return status


def should_restart(restart_policy: str, exit_code: int) -> bool:
    """Return whether a container that exited is started again."""
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


def backoff_delay(restarts: int, initial: float = 10.0, cap: float = 300.0) -> float:
    """Return the kubelet's crash-loop delay before restart number `restarts + 1`.

    The first restart is immediate; then the delay starts at `initial` and doubles up to `cap`.
    """
    if restarts <= 0:
        return 0.0
    return float(min(initial * 2 ** (restarts - 1), cap))
