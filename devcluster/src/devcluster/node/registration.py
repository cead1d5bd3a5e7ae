"""The Node object and its Lease: how the control plane learns the node exists and lives.

As a kubelet does: create the Node (its labels, addresses, capacity, conditions, kubelet port
and versions) or, when it exists from an earlier run, patch its labels and status; then renew
the Lease `kube-node-lease/<node>` every 10 s, and report the Node's status again every few
minutes. The scheduler places pods only on a Ready node with room (`allocatable.pods` and
the requested cpu and memory), and the node-lifecycle controller taints a node whose Lease
is older than its grace period, so both matter.

Capacity is not the machine's: devcluster has never enforced requests, and samples that ask
for a CPU per Ray pod must schedule on a two-core machine as they run on devcluster's own
API server. A simulated pod costs nothing at all, so the simulated node's room is as large as
its pod network (a /16) allows: a benchmark's 4,000 pods must not wait for a scheduler that
thinks the node is full. `node` and `lease` are pure.
"""

from __future__ import annotations

import asyncio
import logging
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from devcluster.node.client import STRATEGIC_MERGE_PATCH, ApiError, Requests

JsonObject = dict[str, Any]
log = logging.getLogger(__name__)
KUBELET_VERSION = "v1.37.2"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
RENEW_SECONDS = 10.0  # a quarter of the lease, as the kubelet renews
STATUS_SECONDS = 300.0  # the kubelet's nodeStatusReportFrequency
_ARCHES = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


@dataclass(frozen=True)
class NodeSpec:
    """What the node says about itself."""

    name: str
    address: str
    kubelet_port: int
    runtime: str
    capacity: dict[str, str] | None = None
    """None: the runtime's (`CAPACITY`)."""

    def room(self) -> dict[str, str]:
        """The capacity (and allocatable) the Node reports."""
        return dict(self.capacity if self.capacity is not None else CAPACITY[self.runtime])


CAPACITY = {
    "process": {"cpu": "64", "memory": "256Gi", "ephemeral-storage": "512Gi", "pods": "1000"},
    "simulated": {"cpu": "100k", "memory": "100Ti", "ephemeral-storage": "100Ti", "pods": "60k"},
}


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def labels(spec: NodeSpec) -> dict[str, str]:
    """The well-known labels nodeSelectors and affinities use."""
    arch = _ARCHES.get(platform.machine(), platform.machine())
    return {
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
    }


def node_status(spec: NodeSpec, previous: JsonObject | None, now: str) -> JsonObject:
    """The Node status: Ready, no pressure, its address, kubelet port and versions.

    A condition keeps its lastTransitionTime while its status stays the same.
    """
    before = {c.get("type"): c for c in (previous or {}).get("conditions") or []}
    wanted = (
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    )
    conditions = []
    for kind, status, reason in wanted:
        old = before.get(kind) or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else now
        conditions.append(
            {
                "type": kind,
                "status": status,
                "reason": reason,
                "message": f"devcluster kubelet ({spec.runtime} runtime)",
                "lastHeartbeatTime": now,
                "lastTransitionTime": since or now,
            }
        )
    arch = _ARCHES.get(platform.machine(), platform.machine())
    return {
        # InternalIP only: the API server dials the first preferred type it finds, and the
        # node's name need not resolve.
        "addresses": [{"type": "InternalIP", "address": spec.address}],
        "capacity": spec.room(),
        "allocatable": spec.room(),
        "conditions": conditions,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": spec.kubelet_port}},
        "nodeInfo": {
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
            "kernelVersion": platform.release(),
            "osImage": "devcluster",
            "containerRuntimeVersion": f"devcluster://{spec.runtime}",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": arch,
        },
    }


def node(spec: NodeSpec, now: str) -> JsonObject:
    """The Node object the kubelet registers."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels(spec)},
        "spec": {},
        "status": node_status(spec, None, now),
    }


def lease(spec: NodeSpec, node_uid: str, now: str) -> JsonObject:
    """The node's Lease, owned by its Node so it goes when the Node does."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": spec.name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": spec.name, "uid": node_uid}
            ],
        },
        "spec": {
            "holderIdentity": spec.name,
            "leaseDurationSeconds": LEASE_SECONDS,
            "renewTime": now,
        },
    }


class Registration:
    """Registers the Node, then keeps its Lease and status fresh until cancelled."""

    def __init__(self, client: Requests, spec: NodeSpec) -> None:
        self.client, self.spec = client, spec
        self.registered = asyncio.Event()

    @property
    def _node_path(self) -> str:
        return f"/api/v1/nodes/{self.spec.name}"

    @property
    def _lease_path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{self.spec.name}"

    async def register(self) -> JsonObject:
        """Create the Node, or bring an existing one's labels and status up to date."""
        try:
            created = await self.client.request("POST", "/api/v1/nodes", node(self.spec, _now()))
        except ApiError as err:
            if err.code != 409:
                raise
        else:
            self.registered.set()
            return created
        await self.client.request(
            "PATCH",
            self._node_path,
            {"metadata": {"labels": labels(self.spec)}},
            content_type=STRATEGIC_MERGE_PATCH,
        )
        current = await self.report_status()
        self.registered.set()
        return current

    async def report_status(self) -> JsonObject:
        """Patch the Node status (conditions with a fresh heartbeat)."""
        current = await self.client.request("GET", self._node_path)
        status = node_status(self.spec, current.get("status"), _now())
        return await self.client.request(
            "PATCH",
            f"{self._node_path}/status",
            {"status": status},
            content_type=STRATEGIC_MERGE_PATCH,
        )

    async def renew(self, node_uid: str) -> None:
        """Create or renew the Lease."""
        body = lease(self.spec, node_uid, _micro_now())
        try:
            current = await self.client.request("GET", self._lease_path)
        except ApiError as err:
            if err.code != 404:
                raise
            path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
            await self.client.request("POST", path, body)
            return
        current["spec"] = {**current.get("spec", {}), **body["spec"]}
        await self.client.request("PUT", self._lease_path, current)

    async def run(self) -> None:
        """Register (retrying while the API server is not there), then heartbeat forever."""
        loop = asyncio.get_running_loop()
        registered: JsonObject | None = None
        next_status = 0.0
        while True:
            try:
                if registered is None:
                    registered = await self.register()
                    next_status = loop.time() + STATUS_SECONDS
                await self.renew(registered["metadata"]["uid"])
                if loop.time() >= next_status:
                    await self.report_status()
                    next_status = loop.time() + STATUS_SECONDS
            except ApiError as err:
                log.warning("node %s: heartbeat failed: %s", self.spec.name, err)
                if err.code == 404:  # the Node was deleted: register it again
                    registered = None
                    continue
            await asyncio.sleep(RENEW_SECONDS)
