"""devcluster's node: a kubelet that runs pods as local processes (or simulates them).

`make_kubelet` picks the runtime by name: `process` (the default; root, per-pod network
namespaces) or `simulated` (no processes, for scale benchmarks).
"""

from __future__ import annotations

from pathlib import Path

from devcluster.kubelet.kubelet import NODE_NAME, Kubelet
from devcluster.kubelet.network import RuntimeUnavailable, check_privileges
from devcluster.kubelet.pods import ProcessRuntime
from devcluster.kubelet.simulated import SimulatedRuntime

RUNTIMES = ("process", "simulated")

__all__ = ["NODE_NAME", "RUNTIMES", "Kubelet", "RuntimeUnavailable", "make_kubelet"]


def make_kubelet(
    runtime: str, state_dir: Path, *, ready_delay: float = 1.0, backoff: float = 10.0
) -> Kubelet:
    """Return a kubelet with the named runtime; raise RuntimeUnavailable if it cannot run here.

    Args:
        runtime: "process" or "simulated".
        state_dir: devcluster's state directory (pod directories, logs, the hosts file).
        ready_delay: seconds until a simulated pod is Ready.
        backoff: the first crash-loop back-off of the process runtime, in seconds.
    """
    if runtime == "simulated":
        return Kubelet(SimulatedRuntime(ready_delay), state_dir)
    if runtime != "process":
        raise ValueError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
    check_privileges()
    return Kubelet(ProcessRuntime(backoff=backoff), state_dir)
