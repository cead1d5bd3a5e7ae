"""The cluster's DNS as a hosts file: what pods resolve `<svc>.<ns>.svc.cluster.local` with.

There is no cluster DNS server here; instead the process kubelet bind-mounts
`<state_dir>/net/hosts.d/<namespace>` as each pod's `/etc/hosts`. It holds every Service's
names (the ClusterIP, or for a headless Service one line per ready or published endpoint, as
CoreDNS answers), the bare name of each Service in the pod's own namespace (what the DNS
search path gives), and the `<hostname>.<subdomain>.<ns>.svc.cluster.local` name of pods that
set both; `<state_dir>/net/hosts` holds the same without bare names. Names the node itself
answers to (GitHub's, while it serves KubeRay's archives, see `archives`) come first. A bind
mount pins the file's inode, so each file is rewritten in place, never replaced.

`hosts_file` is pure and table-tested; `HostsWriter` rewrites the file when it changes.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from devcluster.handler import Handler
from devcluster.networking.endpoint_slices import SERVICE_NAME, SERVICES, SLICES
from devcluster.store import PODS, Event, ObjectView

JsonObject = dict[str, Any]
DOMAIN = "cluster.local"
HEADER = "# Written by devcluster: Services and pod hostnames, as cluster DNS would answer.\n"


def service_names(namespace: str, name: str) -> list[str]:
    """Return the names a Service answers to from inside the cluster."""
    return [f"{name}.{namespace}.svc.{DOMAIN}", f"{name}.{namespace}.svc", f"{name}.{namespace}"]


def _ready_addresses(slices: list[JsonObject]) -> dict[tuple[str, str], list[str]]:
    """Each Service's ready endpoint addresses, by (namespace, name), from one pass over slices.

    One pass for all headless Services: a scan per Service made every rewrite quadratic, and
    with a thousand RayClusters (each with a headless head Service) the node's event loop spent
    its time here while its Lease went stale.
    """
    found: dict[tuple[str, str], set[str]] = {}
    for body in slices:
        meta = body["metadata"]
        service = (meta.get("labels") or {}).get(SERVICE_NAME)
        if service is None:
            continue
        ips = found.setdefault((meta.get("namespace", ""), service), set())
        for endpoint in body.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready", True):
                ips.update(endpoint.get("addresses") or [])
    return {key: sorted(ips) for key, ips in found.items()}


def hosts_file(
    services: list[JsonObject],
    slices: list[JsonObject],
    pods: list[JsonObject],
    namespace: str | None = None,
    node_names: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Return the hosts file content for these Services, slices and pods.

    For the pods of `namespace`, a Service of that namespace also answers to its bare name,
    as the DNS search path `<ns>.svc.cluster.local` makes it answer (`redis:6379`).
    `node_names` are names outside the cluster that the node answers for, by address.
    """
    lines = [HEADER, "127.0.0.1\tlocalhost\n"]
    for address, answered in (node_names or {}).items():
        lines.append(f"{address}\t{' '.join(answered)}\n")
    ready = _ready_addresses(slices)
    for service in services:
        meta, spec = service["metadata"], service.get("spec") or {}
        names = service_names(meta.get("namespace", ""), meta["name"])
        if namespace is not None and meta.get("namespace", "") == namespace:
            names.append(meta["name"])
        cluster_ip = spec.get("clusterIP")
        if spec.get("type") == "ExternalName":
            continue
        ips = [cluster_ip] if cluster_ip and cluster_ip != "None" else []
        for ip in ips or ready.get((meta.get("namespace", ""), meta["name"]), []):
            lines.append(f"{ip}\t{' '.join(names)}\n")
    for pod in pods:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        hostname, subdomain, ip = spec.get("hostname"), spec.get("subdomain"), status.get("podIP")
        if hostname and subdomain and ip and status.get("phase") not in ("Succeeded", "Failed"):
            namespace = pod["metadata"].get("namespace", "")
            lines.append(f"{ip}\t{hostname}.{subdomain}.{namespace}.svc.{DOMAIN}\n")
    return "".join(lines)


def write_in_place(path: Path, content: str) -> None:
    """Replace a file's content without replacing the file (its inode stays bind-mounted)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        # One write: a reader sees the old content, an empty file for an instant, or the new.
        written = os.write(fd, data)
        while written < len(data):
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


class HostsWriter:
    """Rewrites the hosts file whenever a Service, slice or pod hostname changes it.

    A burst of changes (a thousand clusters' pods starting) makes one rewrite per `interval`
    seconds, not one per change: each rewrite reads every Service, slice and pod.
    """

    def __init__(
        self,
        path: Path,
        interval: float = 0.2,
        node_names: Callable[[], Mapping[str, Sequence[str]]] | None = None,
    ) -> None:
        self.path, self.interval = path, interval
        # Read at each rewrite; what it names must be served before the writer starts.
        self.node_names = node_names or dict
        self._written: dict[Path, str] = {}

    def __repr__(self) -> str:
        return f"HostsWriter({self.path})"

    async def run(self, handler: Handler) -> None:
        """Keep the file current until cancelled (devcluster's own API server)."""
        await self.follow(handler.store)

    async def follow(self, view: ObjectView) -> None:
        """Keep the file current from `view` until cancelled."""
        changed = asyncio.Event()

        def listen(event: Event) -> None:
            if event.resource in (SERVICES, SLICES, PODS):
                changed.set()

        view.add_listener(listen)
        try:
            while True:
                self.refresh(view)
                await changed.wait()
                await asyncio.sleep(self.interval)  # later changes join this rewrite
                changed.clear()
        finally:
            view.remove_listener(listen)

    def refresh(self, view: ObjectView) -> None:
        """Write the files whose content changed since the last write."""
        services, slices, pods = view.objects(SERVICES), view.objects(SLICES), view.objects(PODS)
        node = self.node_names()
        files = {self.path: hosts_file(services, slices, pods, node_names=node)}
        for namespace in {o["metadata"].get("namespace", "") for o in [*services, *pods]}:
            files[namespace_hosts_path(self.path, namespace)] = hosts_file(
                services, slices, pods, namespace, node
            )
        for path, content in files.items():
            if content != self._written.get(path):
                write_in_place(path, content)
                self._written[path] = content


def namespace_hosts_path(path: Path, namespace: str) -> Path:
    """The hosts file of one namespace's pods: `path`'s, plus that namespace's bare names."""
    return path.parent / "hosts.d" / namespace
