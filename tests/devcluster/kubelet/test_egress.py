"""Pods reach beyond the node: forwarded, masqueraded behind the host, with its nameservers.

The live test needs root (network namespaces); skipped otherwise. Its "outside" is a host of
its own: a network namespace joined to this one by a veth pair on a test network, so nothing
leaves the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster.kubelet import network, volumes
from devcluster.server import DevCluster
from tests.devcluster.conftest import Kubectl
from tests.devcluster.kubelet.conftest import pod_json, run_to_end

HOST_SIDE, OUTSIDE = "198.51.100.1", "198.51.100.2"  # TEST-NET-2, routed by nobody
PORT = 18080
# Accepts one connection and answers with the address it came from.
SERVER = f"""
import socket
server = socket.create_server(("{OUTSIDE}", {PORT}))
print("listening", flush=True)
connection, (peer, _) = server.accept()
connection.sendall(peer.encode())
connection.close()
"""


def test_the_ruleset_masquerades_only_what_leaves_the_pod_network() -> None:
    rules = network.egress_ruleset()
    assert "ip saddr 10.244.0.0/16 ip daddr != 10.244.0.0/16 masquerade" in rules
    # Replaced whole: the table is deleted and made again in the same transaction.
    assert rules.index("delete table ip krt-egress") < rules.index("table ip krt-egress {")


def test_pods_get_the_hosts_reachable_nameservers() -> None:
    host = "# by DHCP\nnameserver 127.0.0.53\nnameserver 10.255.255.53\nsearch lan\nnameserver x\n"
    servers = network.host_nameservers(host)
    assert servers == ["10.255.255.53"]
    conf = volumes.resolv_conf("team-a", servers)
    assert conf.splitlines() == [
        "search team-a.svc.cluster.local svc.cluster.local cluster.local",
        "nameserver 10.255.255.53",
        "options ndots:5 timeout:1 attempts:1",
    ]
    # No egress: a nameserver that fails at once rather than one that times out.
    assert "nameserver 127.0.0.1\n" in volumes.resolv_conf("team-a")


@pytest.fixture
def outside() -> Iterator[subprocess.Popen[str]]:
    """A host beyond the node, listening once on OUTSIDE:PORT."""
    netns, link = f"egress-outside-{os.getpid()}", f"egro{os.getpid() % 100000}"
    commands = [
        ["netns", "add", netns],
        ["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", netns],
        ["addr", "add", f"{HOST_SIDE}/24", "dev", link],
        ["link", "set", link, "up"],
        ["-n", netns, "addr", "add", f"{OUTSIDE}/24", "dev", "eth0"],
        ["-n", netns, "link", "set", "eth0", "up"],
    ]
    server: subprocess.Popen[str] | None = None
    try:
        for command in commands:
            subprocess.run(["ip", *command], check=True, capture_output=True)
        run_inside = ["ip", "netns", "exec", netns, sys.executable, "-c", SERVER]
        server = subprocess.Popen(run_inside, stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdout.readline().strip() == "listening"
        yield server
    finally:
        if server is not None:
            server.kill()
            server.wait()
        subprocess.run(["ip", "link", "delete", link], capture_output=True)
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")
async def test_a_pod_reaches_a_host_beyond_the_node_behind_the_nodes_address(
    node: tuple[DevCluster, Kubectl],
    outside: subprocess.Popen[str],
) -> None:
    """Regression: pods had no way out (no forwarding, no NAT, no nameserver), so a runtime
    env's `pip install` failed where a real node's pod downloads from the index."""
    cluster, kubectl = node
    client = (
        "import socket; "
        f"s = socket.create_connection(('{OUTSIDE}', {PORT}), timeout=10); "
        "print('seen-as', s.recv(64).decode())"
    )
    phase, logs = await run_to_end(kubectl, "client", f"python -c {json.dumps(client)}", 60)
    assert (phase, logs.strip()) == ("Succeeded", f"seen-as {HOST_SIDE}")  # masqueraded
    uid = (await pod_json(kubectl, "client"))["metadata"]["uid"]  # type: ignore[index]
    pod_conf, host_conf = _read(cluster.state_dir / "pods" / str(uid) / "resolv.conf")
    assert pod_conf == volumes.resolv_conf("default", network.host_nameservers(host_conf))


def _read(pod_resolv_conf: Path) -> tuple[str, str]:
    return pod_resolv_conf.read_text(), Path("/etc/resolv.conf").read_text()
