"""Services networking inside devcluster: endpoints, cluster DNS, ClusterIPs and `/proxy`.

What kube-controller-manager's endpoint controllers, CoreDNS, kube-proxy and kube-apiserver's
proxy subresources do on a real cluster, reduced to what Ray pods and our operator use. The
endpoint controllers always run; the hosts file and ClusterIP listeners only when pods have a
real network (the process kubelet's bridge), not with the simulated runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from devcluster.controllers.reconciling import Loop
from devcluster.networking.endpoint_slices import EndpointsController
from devcluster.networking.gateway import GatewayDataPlane
from devcluster.networking.hosts import HostsWriter
from devcluster.networking.service_proxy import ServiceProxy


def hosts_path(state_dir: Path) -> Path:
    """Return where the hosts file pods mount as /etc/hosts lives."""
    return Path(state_dir) / "net" / "hosts"


def network_controllers(
    state_dir: Path,
    *,
    pod_network: bool,
    node_names: Callable[[], Mapping[str, Sequence[str]]] | None = None,
) -> list[Any]:
    """Return the Services controllers; with `pod_network`, DNS, ClusterIPs and Gateways too.

    `node_names` are what the hosts files add for names the node itself answers to.
    """
    controllers: list[Any] = [Loop(EndpointsController())]
    if pod_network:
        hosts = HostsWriter(hosts_path(state_dir), node_names=node_names)
        controllers += [hosts, ServiceProxy(), GatewayDataPlane()]
    return controllers
