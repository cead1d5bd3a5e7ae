"""The real control plane and its simulated node as one process, for `benchmarks.versus`.

`python -m benchmarks.versus_node --state DIR` runs `kuberay_temporal.kubernetes_cluster`'s
cluster (kube-apiserver, etcd, controller manager and scheduler v1.37.2; devcluster's kubelet
with the simulated runtime) until SIGTERM. The API server audits every request at the Metadata
level (batched, off the request path), so the benchmark can count each client's requests.
Once everything is up it writes `DIR/cluster.json`: the kubeconfigs (the admin's, KubeRay's
own identity's, the worker's and the bridge's), the admin's client certificate for /metrics,
the audit log, and the control plane's process ids.

A process of its own, so that the node's work shares no event loop with the benchmark's
clock, and its CPU time can be read apart from the operators'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

from devcluster.control_plane import pki
from devcluster.ports import free_port
from kuberay_temporal.kubernetes_cluster import running_cluster

KUBERAY_IDENTITY = pki.ClientIdentity("kuberay-operator", "kuberay-operator", ("system:masters",))
"""KubeRay runs as an admin, as in `kuberay-temporal dev`, but under a name of its own so its
requests can be told apart from the benchmark's in the audit log."""

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
"""

CONTROL_PLANE = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler")


async def serve(state: Path, ready_delay: float) -> None:
    """Run the cluster, describe it in `STATE/cluster.json`, and stop on SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    policy = state / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    async with running_cluster(
        state,
        "simulated",
        kube_port=free_port(),
        kubelet_port=free_port(),
        dashboard_access="proxy",
        ready_delay=ready_delay,
        audit_policy=policy,
    ) as cluster:
        plane = cluster.plane
        kuberay = state / "kuberay-kubeconfig"
        plane.write_kubeconfig(KUBERAY_IDENTITY, kuberay)
        admin = plane.certificates.client(pki.ADMIN)
        description = {
            "url": plane.url,
            "admin": str(cluster.kubeconfig),
            "kuberay": str(kuberay),
            "worker": str(cluster.worker_kubeconfig),
            "bridge": str(cluster.bridge_kubeconfig),
            "ca": str(plane.certificates.ca.cert),
            "admin_cert": str(admin.cert),
            "admin_key": str(admin.key),
            "audit_log": str(plane.audit_log_path),
            "pids": {name: plane.pid(name) for name in CONTROL_PLANE},
        }
        (state / "cluster.json").write_text(json.dumps(description, indent=2))
        exited = asyncio.create_task(plane.exited())
        waiting = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait({exited, waiting}, return_when=asyncio.FIRST_COMPLETED)
        for task in (exited, waiting):
            task.cancel()
        if exited in done and not exited.cancelled():
            raise SystemExit(f"control plane: {exited.result()}")


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--state", type=Path, required=True, help="an existing directory")
    parser.add_argument("--ready-delay", type=float, default=1.0, help="simulated pod start")
    args = parser.parse_args()
    asyncio.run(serve(args.state, args.ready_delay))


if __name__ == "__main__":
    main()
