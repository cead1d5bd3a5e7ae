"""Where a Ray dashboard is: through the API server's proxy, or straight at a pod's IP.

These URLs are built from Service, pod and namespace names that may come from a CR. A name
such as `../../b/services/x` or `evil.example:80/#` must not lead a call to another
namespace or another host, so each name must be a plain DNS label (a pod name: labels joined
by dots) before it becomes part of a URL, and a direct address must be an IP.
"""

from __future__ import annotations

import ipaddress

from activities.dashboard.errors import DashboardError
from crds.constants import PORT_NAME_DASHBOARD
from crds.validation.names import dns1123_label_problem

_MAX_SUBDOMAIN_LENGTH = 253


def pod_base_url(ip: str, port: int) -> str:
    """A port of a pod, reached directly at its IP (no name, so no DNS to answer otherwise)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        raise DashboardError(f"refusing to address {ip[:80]!r}: not an IP address") from None
    host = f"[{address}]" if address.version == 6 else str(address)
    return f"http://{host}:{int(port)}"


def proxied_base_url(
    api_server: str,
    namespace: str,
    service_name: str,
    port_name: str = PORT_NAME_DASHBOARD,
) -> str:
    """A Service port reached through the API server's service proxy (`--use-kubernetes-proxy`).

    Args:
        api_server: The API server's base URL, e.g. `https://127.0.0.1:6443`.
        namespace: The Service's namespace.
        service_name: The head Service.
        port_name: The Service port's name (`dashboard`, or `serve` for the Serve proxy).
    """
    return (
        f"{api_server.rstrip('/')}/api/v1/namespaces/{_label(namespace)}"
        f"/services/{_label(service_name)}:{_label(port_name)}/proxy"
    )


def pod_proxied_base_url(api_server: str, namespace: str, pod_name: str, port: int) -> str:
    """A pod port reached through the API server's pod proxy (the head's Serve health check)."""
    base = f"{api_server.rstrip('/')}/api/v1/namespaces/{_label(namespace)}"
    return f"{base}/pods/{_subdomain(pod_name)}:{port}/proxy"


def _label(value: str) -> str:
    """`value` when it is a DNS-1123 label (a Service, namespace or port name), else an error."""
    problem = dns1123_label_problem(value)
    if problem:
        raise DashboardError(f"refusing to address {value[:80]!r}: {problem}")
    return value


def _subdomain(value: str) -> str:
    """`value` when it is a DNS-1123 subdomain of labels (a pod name), else an error."""
    if len(value) > _MAX_SUBDOMAIN_LENGTH:
        raise DashboardError(f"refusing to address a {len(value)}-character name")
    for part in value.split("."):
        _label(part)
    return value
