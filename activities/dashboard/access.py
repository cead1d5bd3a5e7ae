"""How the RayJob activities reach a cluster's dashboard: through the API server, or directly.

A worker outside the cluster network (the local stack, a laptop) cannot resolve
`<svc>.<ns>.svc.cluster.local`, so by default it goes the way KubeRay's
`--use-kubernetes-proxy` does: the API server's `services/<svc>:dashboard/proxy` subresource,
with the Kubernetes credentials of the worker's own client. A worker running in the cluster
can skip that hop (`direct`). Which one is a worker setting (`KUBERAY_TEMPORAL_DASHBOARD_ACCESS`).

Credentials (the Kubernetes bearer token, Ray's auth token) only ever go into request headers
built here; they are never returned, logged or put in an error message.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import StrEnum

import httpx
from kubernetes_asyncio.client import Configuration

from activities.builders.auth import AUTH_TOKEN_SECRET_KEY, auth_secret_name, is_auth_enabled
from activities.dashboard.client import DIRECT_TIMEOUT, PROXY_TIMEOUT, RayDashboardClient
from activities.dashboard.errors import DashboardError
from activities.dashboard.urls import proxied_base_url
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.spans import TracingTransport
from crds.constants import PORT_NAME_DASHBOARD
from crds.raycluster import RayCluster
from crds.validation.names import dns1123_label_problem


class DashboardAccess(StrEnum):
    """Which road to a head's dashboard the activities take."""

    PROXY = "proxy"
    """`<api server>/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy` (10 s timeout)."""
    DIRECT = "direct"
    """`http://<svc>.<ns>.svc.<domain>:<port>` from inside the cluster (2 s timeout)."""


def split_dashboard_url(dashboard_url: str) -> tuple[str, str]:
    """`(service, namespace)` of a RayJob's `status.dashboardURL` (`<svc>.<ns>.svc.…:<port>`).

    Raises:
        ValueError: If the URL does not name a Service and a namespace.
    """
    host = dashboard_url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)[0]
    parts = host.split(".")
    if len(parts) < 2 or any(dns1123_label_problem(part) for part in parts[:2]):
        raise ValueError(f"dashboard URL {dashboard_url!r} does not name <service>.<namespace>")
    return parts[0], parts[1]


class DashboardConnector:
    """Opens a `RayDashboardClient` for a dashboard URL the way the settings say.

    Args:
        client: The worker's Kubernetes client: the proxy's address and credentials, and the
            reader of Ray auth Secrets.
        access: Proxy or direct.
        transport: Replaces the network (tests pass an `httpx.MockTransport`).
    """

    def __init__(
        self,
        client: KubeClient,
        access: DashboardAccess = DashboardAccess.PROXY,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._kube = client
        self._access = access
        self._transport = transport
        self._tls: ssl.SSLContext | None = None

    @property
    def access(self) -> DashboardAccess:
        """The configured road."""
        return self._access

    def base_url(self, dashboard_url: str) -> str:
        """The URL the dashboard API is under, for `status.dashboardURL`."""
        service, namespace = split_dashboard_url(dashboard_url)
        if self._access == DashboardAccess.DIRECT:
            return dashboard_url if "://" in dashboard_url else f"http://{dashboard_url}"
        host = str(self._kube.configuration.host)
        return proxied_base_url(host, namespace, service, PORT_NAME_DASHBOARD)

    @asynccontextmanager
    async def open(
        self, dashboard_url: str, cluster: RayCluster | None = None
    ) -> AsyncIterator[RayDashboardClient]:
        """A dashboard client for the duration of the block.

        Args:
            dashboard_url: `status.dashboardURL` of the RayJob.
            cluster: The job's RayCluster; with token auth on, its Secret supplies the token.
        """
        _, namespace = split_dashboard_url(dashboard_url)
        if cluster is not None and namespace != cluster.namespace:
            # The token of `cluster` must only ever go to a dashboard in its own namespace.
            raise DashboardError(
                f"dashboard URL {dashboard_url!r} is outside namespace {cluster.namespace!r}"
            )
        base = self.base_url(dashboard_url)
        token = await self._ray_token(cluster) if cluster is not None else None
        verify = self._tls_context()
        if self._access == DashboardAccess.DIRECT:
            async with httpx.AsyncClient(transport=self._traced(verify), verify=verify) as http:
                yield RayDashboardClient(http, base, auth_token=token, timeout=DIRECT_TIMEOUT)
            return
        headers: dict[str, str] = {}
        for setting in (await self._kube.configuration.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        async with httpx.AsyncClient(
            transport=self._traced(verify), headers=headers, verify=verify
        ) as http:
            yield RayDashboardClient(http, base, auth_token=token, timeout=PROXY_TIMEOUT)

    def _tls_context(self) -> ssl.SSLContext:
        """The TLS settings of every dashboard call, built once.

        Building one costs 15-20 ms of CPU with OpenSSL 3 (it loads a CA bundle), more than
        the call itself; a client given none builds its own each time. Through the proxy they
        are the Kubernetes client's; direct calls are plain HTTP, so the defaults never matter.
        """
        if self._tls is None:
            configuration = self._kube.configuration
            proxied = self._access == DashboardAccess.PROXY
            if proxied and str(configuration.host).startswith("https"):
                self._tls = _ssl_context(configuration)
            else:
                self._tls = ssl.create_default_context()
        return self._tls

    def _traced(self, verify: ssl.SSLContext) -> httpx.AsyncBaseTransport | None:
        """The transport to use: traced the way the Kubernetes client is, if it is."""
        tracer = self._kube.tracer
        if tracer is None:
            return self._transport
        # The client ignores `verify` once given a transport, so the inner one takes it.
        inner = self._transport or httpx.AsyncHTTPTransport(verify=verify)
        return TracingTransport(inner, tracer)

    async def _ray_token(self, cluster: RayCluster) -> str | None:
        """Ray's auth token from the cluster's Secret, when token authentication is on."""
        if not is_auth_enabled(cluster.spec):
            return None
        name = auth_secret_name(cluster.name, cluster.spec.auth_options)
        secret = await self._kube.get_or_none(kube.SECRETS, cluster.namespace, name)
        encoded = ((secret or {}).get("data") or {}).get(AUTH_TOKEN_SECRET_KEY)
        return base64.b64decode(encoded).decode() if encoded else None


def _ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """The same TLS settings kubernetes_asyncio's own connection uses."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
