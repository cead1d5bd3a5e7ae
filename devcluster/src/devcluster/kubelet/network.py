"""Pod networking for the process kubelet: one host bridge, one network namespace per pod.

Every pod gets its own IP and port space, as on a real node, so two Ray heads can both listen
on 6379 and 8265 (Ray's GCS binds all interfaces, so loopback aliases would not keep them
apart). The layout is the one CNI's bridge plugin produces: a bridge `krt0` holding the node
address 10.244.0.1/16, and per pod a veth pair whose inner end is `eth0` in the pod's network
namespace with the pod IP and a default route via the bridge. All names start with `krt` so a
crashed run's leftovers can be found and removed on the next start.

Part B (Services) adds ClusterIPs to the bridge, hence `BRIDGE_NAME` and an idempotent
`ensure_bridge()`.

Pods reach beyond the node as they do on a real one (`ensure_egress`): the host forwards their
packets and masquerades them behind its own address, and their resolv.conf names the host's
nameservers, so a runtime env can pip-install from the index the host reaches.

While the node serves GitHub's archives (`devcluster.networking.archives`), each pod's own
namespace redirects its connections to the node address's port 443 to the port the server
listens on (`https_redirect`): the URLs name port 443, and several nodes may share the machine.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import random
import shutil
import subprocess
from pathlib import Path

BRIDGE_NAME = "krt0"
POD_CIDR = ipaddress.IPv4Network("10.244.0.0/16")
HOST_IP = "10.244.0.1"  # the node's address on the pod network; also status.hostIP
# A bridge without a MAC of its own takes the lowest of its ports', so it changes as pods come
# and go, and every pod's ARP entry for HOST_IP goes stale: packets to the node (ClusterIPs, the
# API server) are dropped until the pod re-resolves it, up to a minute later. A fixed, locally
# administered MAC keeps the node's address where the pods last saw it.
BRIDGE_MAC = "02:6b:72:74:30:01"
NETNS_PREFIX = "krt-"
VETH_PREFIX = "krtv"
_NETNS_DIR = "/run/netns"
_OWNERS = Path("/run/devcluster-netns")  # netns name (or bridge claim) -> PID of its devcluster
_BRIDGE_CLAIM = "bridge-"
EGRESS_TABLE = "krt-egress"  # the nftables table holding the pods' masquerade rule
HTTPS_TABLE = "krt-https"  # in a pod's namespace: its port 443 on the node, redirected
_IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")


class RuntimeUnavailable(RuntimeError):
    """The process runtime cannot run here; the message says what to do instead."""


class IpAllocator:
    """Pod IPs from the pod CIDR, handed out next-fit so a freed IP is not reused at once."""

    def __init__(self, network: ipaddress.IPv4Network = POD_CIDR, spread: bool = False) -> None:
        self._network = network
        self._first = int(network.network_address) + 2  # .0 is the network, .1 the node
        self._last = int(network.broadcast_address) - 1
        self._next = self._first
        if spread:  # another devcluster may share the bridge: start somewhere else than it
            self._next = random.randint(self._first, self._last)
        self._taken: set[int] = set()

    def allocate(self) -> str:
        """Return a free address, or raise RuntimeError when the CIDR is exhausted."""
        size = self._last - self._first + 1
        for step in range(size):
            candidate = self._first + (self._next - self._first + step) % size
            if candidate not in self._taken:
                self._taken.add(candidate)
                self._next = candidate + 1 if candidate < self._last else self._first
                return str(ipaddress.IPv4Address(candidate))
        raise RuntimeError(f"pod CIDR {self._network} is exhausted")

    def reserve(self, ip: str) -> None:
        """Mark an address as used (a pod that kept its IP across a restart)."""
        self._taken.add(int(ipaddress.IPv4Address(ip)))

    def release(self, ip: str) -> None:
        """Return an address to the pool."""
        self._taken.discard(int(ipaddress.IPv4Address(ip)))


def netns_name(pod_uid: str) -> str:
    """Return the network namespace name of a pod."""
    return NETNS_PREFIX + pod_uid.replace("-", "")[:12]


def veth_name(pod_uid: str) -> str:
    """Return the host-side veth name of a pod (interface names are at most 15 bytes)."""
    return VETH_PREFIX + pod_uid.replace("-", "")[:11]


def netns_path(pod_uid: str) -> str:
    """Return the file `nsenter --net=` takes for a pod's network namespace."""
    return f"{_NETNS_DIR}/{netns_name(pod_uid)}"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def check_privileges() -> None:
    """Raise RuntimeUnavailable unless network namespaces can be created here."""
    hint = "run as root, or use --runtime simulated"
    if os.geteuid() != 0:
        raise RuntimeUnavailable(
            f"the process runtime needs root for pod network namespaces; {hint}"
        )
    probe = f"{NETNS_PREFIX}probe{os.getpid()}"
    try:
        result = _ip("netns", "add", probe, check=False)
    except FileNotFoundError as err:
        raise RuntimeUnavailable(
            f"the process runtime needs iproute2 (`ip`): {err}; {hint}"
        ) from err
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "failed"
        raise RuntimeUnavailable(f"cannot create network namespaces ({reason}); {hint}")
    _ip("netns", "delete", probe, check=False)


def ensure_bridge() -> None:
    """Create the bridge with the node address if it is missing; safe to call repeatedly."""
    shown = _ip("link", "show", BRIDGE_NAME, check=False)
    if shown.returncode != 0:
        _ip("link", "add", BRIDGE_NAME, "address", BRIDGE_MAC, "type", "bridge", check=False)
    elif f"link/ether {BRIDGE_MAC} " not in shown.stdout:
        _ip("link", "set", BRIDGE_NAME, "address", BRIDGE_MAC)  # made by an older version
    addresses = _ip("-o", "addr", "show", "dev", BRIDGE_NAME).stdout
    if f" {HOST_IP}/" not in addresses:
        _ip("addr", "add", f"{HOST_IP}/{POD_CIDR.prefixlen}", "dev", BRIDGE_NAME, check=False)
    _ip("link", "set", BRIDGE_NAME, "up")


def egress_ruleset() -> str:
    """Return the nftables script that masquerades pod traffic leaving the pod network.

    Replaced as a whole in one transaction (the add makes the delete safe on a first run), so
    calling it again leaves exactly one rule.
    """
    return (
        f"add table ip {EGRESS_TABLE}\n"
        f"delete table ip {EGRESS_TABLE}\n"
        f"table ip {EGRESS_TABLE} {{\n"
        "  chain postrouting {\n"
        "    type nat hook postrouting priority srcnat; policy accept;\n"
        f"    ip saddr {POD_CIDR} ip daddr != {POD_CIDR} masquerade\n"
        "  }\n"
        "}\n"
    )


def ensure_egress() -> str | None:
    """Let pods reach beyond the node; return None, or why they cannot.

    Forwarding is switched on for the whole host (as a real node's runtime does) and left on:
    other programs may have wanted it before us.
    """
    nft = shutil.which("nft")
    if nft is None:
        return "`nft` (Debian's nftables) is not installed"
    try:
        if _IP_FORWARD.read_text().strip() != "1":
            _IP_FORWARD.write_text("1\n")
    except OSError as err:
        return f"cannot switch on IPv4 forwarding: {err}"
    result = subprocess.run(
        [nft, "-f", "-"], input=egress_ruleset(), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        return f"nft refused the masquerade rule: {result.stderr.strip() or result.returncode}"
    return None


def _remove_egress() -> None:
    nft = shutil.which("nft")
    if nft is not None:
        subprocess.run([nft, "delete", "table", "ip", EGRESS_TABLE], capture_output=True)


def host_nameservers(resolv_conf: str) -> list[str]:
    """Return the nameservers of a host's resolv.conf that a pod can reach.

    A loopback one (systemd-resolved's 127.0.0.53) is the host's own and not the pod's.
    """
    servers = []
    for line in resolv_conf.splitlines():
        fields = line.split()
        if len(fields) < 2 or fields[0] != "nameserver":
            continue
        try:
            address = ipaddress.ip_address(fields[1])
        except ValueError:
            continue
        if not address.is_loopback:
            servers.append(fields[1])
    return servers


def _owner_alive(netns: str) -> bool:
    try:
        pid = int((_OWNERS / netns).read_text())
    except (OSError, ValueError):
        return False
    if pid == os.getpid():
        return False
    return Path(f"/proc/{pid}").exists()


def remove_leftovers(bridge: bool = True) -> None:
    """Delete the pod namespaces (with their veths) of devclusters that are no longer running.

    Several devclusters may share the machine (tests in parallel), so a namespace whose owner
    process is alive is left alone, and the bridge goes only when no such namespace remains.
    """
    names = [n.split(" ")[0] for n in _ip("netns", "list", check=False).stdout.splitlines()]
    kept = 0
    for name in names:
        if not name.startswith(NETNS_PREFIX):
            continue
        if _owner_alive(name):
            kept += 1
            continue
        _ip("netns", "delete", name, check=False)
        (_OWNERS / name).unlink(missing_ok=True)
    if bridge:
        _forget_dead_bridge_claims()
        if not kept and not _bridge_claims():
            _ip("link", "delete", BRIDGE_NAME, check=False)
            _remove_egress()


def claim_bridge(pid: int | None = None) -> None:
    """Record that this devcluster uses the bridge (with its ClusterIPs) until `remove_leftovers`.

    Another devcluster on the machine that stops while this one has no pod must not delete the
    bridge under it. `pid` claims it for another process while that one lives: a
    kube-apiserver bound to the bridge address outlives the nodes that come and go beside it.
    """
    owner = os.getpid() if pid is None else pid
    _OWNERS.mkdir(parents=True, exist_ok=True)
    (_OWNERS / _bridge_claim(owner)).write_text(str(owner))


def _bridge_claim(pid: int) -> str:
    return f"{_BRIDGE_CLAIM}{pid}"


def _bridge_claims() -> list[str]:
    """The bridge claims on record (this process's, live or dead devclusters')."""
    if not _OWNERS.is_dir():
        return []
    return [p.name for p in _OWNERS.iterdir() if p.name.startswith(_BRIDGE_CLAIM)]


def _forget_dead_bridge_claims() -> None:
    """Drop this process's claim and those of devclusters that died without cleaning up."""
    for claim in _bridge_claims():
        if not _owner_alive(claim):
            (_OWNERS / claim).unlink(missing_ok=True)


def _record_owner(netns: str) -> None:
    _OWNERS.mkdir(parents=True, exist_ok=True)
    (_OWNERS / netns).write_text(str(os.getpid()))


def sandbox_commands(pod_uid: str, ip: str) -> list[list[str]]:
    """Return the `ip` invocations that give a pod its namespace, eth0, IP and route."""
    ns, host_end = netns_name(pod_uid), veth_name(pod_uid)
    inner = "krti" + pod_uid.replace("-", "")[:11]
    return [
        ["netns", "add", ns],
        ["link", "add", host_end, "type", "veth", "peer", "name", inner, "netns", ns],
        ["link", "set", host_end, "master", BRIDGE_NAME, "up"],
        ["-n", ns, "link", "set", inner, "name", "eth0"],
        ["-n", ns, "addr", "add", f"{ip}/{POD_CIDR.prefixlen}", "dev", "eth0"],
        ["-n", ns, "link", "set", "eth0", "up"],
        ["-n", ns, "link", "set", "lo", "up"],
        ["-n", ns, "route", "add", "default", "via", HOST_IP],
    ]


async def create_sandbox(pod_uid: str, ip: str) -> None:
    """Create a pod's network namespace with its IP (removing a stale one first)."""
    await delete_sandbox(pod_uid)
    await asyncio.to_thread(_record_owner, netns_name(pod_uid))
    for args in sandbox_commands(pod_uid, ip):
        await _run_ip(args)


def https_redirect_ruleset(address: str, port: int) -> str:
    """Return the nftables script that sends a pod's `address:443` connections to `port`.

    Loaded in the pod's own network namespace, so it goes with the pod and nothing on the host
    changes. The output hook's `dstnat` keyword is too new for some nft; -100 is its value.
    """
    return (
        f"table ip {HTTPS_TABLE} {{\n"
        "  chain output {\n"
        "    type nat hook output priority -100; policy accept;\n"
        f"    ip daddr {address} tcp dport 443 dnat to {address}:{port}\n"
        "  }\n"
        "}\n"
    )


async def https_redirect(pod_uid: str, address: str, port: int) -> str | None:
    """Redirect the pod's `address:443` to `port`; return None, or why it could not."""
    nft = shutil.which("nft")
    if nft is None:
        return "`nft` (Debian's nftables) is not installed"
    process = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", netns_name(pod_uid), nft, "-f", "-",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate(https_redirect_ruleset(address, port).encode())
    if process.returncode != 0:
        return f"nft refused the redirect: {err.decode().strip() or process.returncode}"
    return None


async def delete_sandbox(pod_uid: str) -> None:
    """Remove a pod's network namespace; its veth pair goes with it."""
    await _run_ip(["link", "delete", veth_name(pod_uid)], check=False)
    await _run_ip(["netns", "delete", netns_name(pod_uid)], check=False)
    (_OWNERS / netns_name(pod_uid)).unlink(missing_ok=True)


async def _run_ip(args: list[str], check: bool = True) -> None:
    process = await asyncio.create_subprocess_exec(
        "ip", *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await process.communicate()
    if check and process.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {err.decode().strip()}")
