"""How the activities reach a cluster's dashboard: through the API server, or directly.

A worker outside the cluster network (the local stack, a laptop) cannot resolve
`<svc>.<ns>.svc.cluster.local`, so by default it goes the way KubeRay's
`--use-kubernetes-proxy` does: the API server's `services/<svc>:dashboard/proxy` subresource,
with the Kubernetes credentials of the worker's own client. A worker running in the cluster
can skip that hop (`direct`). Which one is a worker setting (`KUBERAY_TEMPORAL_DASHBOARD_ACCESS`).

Where the dashboard is comes from objects only: the RayCluster the caller read in its CR's
namespace and the head Service that cluster owns (`heads.head_of`), never a URL from a CR's
status or spec. So a call reaches the cluster's own head, whatever the CR says, and the
cluster's Ray token goes nowhere else.

Credentials (the Kubernetes bearer token, Ray's auth token) only ever go into request headers
built here; they are never returned, logged or put in an error message.
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import StrEnum

import httpx
from kubernetes_asyncio.client import Configuration

from activities.builders.auth import AUTH_TOKEN_SECRET_KEY, auth_secret_name, is_auth_enabled
from activities.dashboard.client import DIRECT_TIMEOUT, PROXY_TIMEOUT, RayDashboardClient
from activities.dashboard.heads import HeadService, head_of, head_pod_ip, head_service_name
from activities.dashboard.urls import pod_base_url, proxied_base_url
from activities.kube import client as kube
from activities.kube.client import KubeClient
from activities.kube.informer import Informer, cached_or_live
from activities.kube.spans import TracingTransport
from crds.constants import LABEL_CLUSTER, PORT_NAME_DASHBOARD
from crds.raycluster import RayCluster

TOKEN_TTL = 30.0
"""Seconds a Ray token read from its Secret serves again. The watch of running Ray jobs asks
every cluster every 3 s: a Secret read each time would be most of a worker's API requests. A
token rotated in the Secret is taken up within this time."""
TOKENS_KEPT = 1024
"""Tokens kept before the expired ones are let go."""


class DashboardAccess(StrEnum):
    """Which road to a head's dashboard the activities take."""

    PROXY = "proxy"
    """`<api server>/api/v1/namespaces/<ns>/services/<svc>:dashboard/proxy` (10 s timeout)."""
    DIRECT = "direct"
    """`http://<head pod IP>:<port>` from inside the cluster (2 s timeout): where the head
    Service leads, without asking DNS (`activities.dashboard.heads`)."""


class DashboardConnector:
    """Opens a `RayDashboardClient` for a cluster's head the way the settings say.

    Args:
        client: The worker's Kubernetes client: the proxy's address and credentials, and the
            reader of head Services and Ray auth Secrets.
        access: Proxy or direct.
        transport: Replaces the network (tests pass an `httpx.MockTransport`).
        services: The worker's copy of Ray clusters' Services; None reads them live.
        pods: The worker's copy of Ray pods (direct calls find the head pod there); None lists
            them live.
    """

    def __init__(
        self,
        client: KubeClient,
        access: DashboardAccess = DashboardAccess.PROXY,
        transport: httpx.AsyncBaseTransport | None = None,
        services: Informer | None = None,
        pods: Informer | None = None,
    ) -> None:
        self._kube = client
        self._access = access
        self._transport = transport
        self._services = services
        self._pods = pods
        self._tls: ssl.SSLContext | None = None
        self._pool: httpx.AsyncClient | None = None
        self._tokens: dict[tuple[str, str], tuple[float, str | None]] = {}
        """Ray tokens by (namespace, Secret name): when read, and what (in memory only)."""

    @property
    def access(self) -> DashboardAccess:
        """The configured road."""
        return self._access

    async def head(self, cluster: RayCluster) -> HeadService:
        """The cluster's own head Service, read and checked (`heads.head_of`).

        Raises:
            DashboardError: There is none yet, or it is not one to call.
        """
        name = head_service_name(cluster)
        service = await cached_or_live(
            self._kube, self._services, kube.SERVICES, cluster.namespace, name
        )
        return head_of(service, cluster)

    async def base_url(self, cluster: RayCluster) -> str:
        """The URL the cluster's dashboard API is under, by the configured road.

        Raises:
            DashboardError: There is no head Service or head pod to call (yet), or the Service
                is not one to call.
        """
        head = await self.head(cluster)
        if self._access == DashboardAccess.DIRECT:
            ip = head_pod_ip(await self._head_pods(cluster), cluster)
            return pod_base_url(ip, head.target_port)
        host = str(self._kube.configuration.host)
        return proxied_base_url(host, head.namespace, head.name, PORT_NAME_DASHBOARD)

    async def _head_pods(self, cluster: RayCluster) -> list[kube.JSON]:
        """The pods labelled with the cluster: from the worker's copy while it is whole."""
        if self._pods is not None and self._pods.whole:
            return self._pods.labelled(cluster.namespace, cluster.name)
        selector = f"{LABEL_CLUSTER}={cluster.name}"
        return await self._kube.list_all(kube.PODS, cluster.namespace, selector)

    @asynccontextmanager
    async def open(self, cluster: RayCluster) -> AsyncIterator[RayDashboardClient]:
        """A client of the cluster's dashboard for the duration of the block.

        Args:
            cluster: The RayCluster, as read in its CR's namespace. Its head Service gives the
                address; with token auth on, its Secret supplies the token.

        Raises:
            DashboardError: The head Service is missing or not one to call (no request made).
        """
        base = await self.base_url(cluster)
        token = await self._ray_token(cluster)
        direct = self._access == DashboardAccess.DIRECT
        timeout = DIRECT_TIMEOUT if direct else PROXY_TIMEOUT
        headers = {} if direct else await self._proxy_headers()
        if not direct:
            # A request to the API server, so it takes a token of the worker's --qps. KubeRay's
            # proxied calls do not (they go through its manager's HTTP transport, which client-go
            # does not throttle), but its one reconcile loop asks one dashboard at a time; the
            # watch of running Ray jobs asks 16 at once, every 3 s, and must leave room for
            # the passes' own requests.
            await self._kube.pace()
        if self._pool is not None:
            yield RayDashboardClient(
                self._pool, base, auth_token=token, timeout=timeout, headers=headers
            )
            return
        async with self._http_client() as http:
            yield RayDashboardClient(http, base, auth_token=token, timeout=timeout, headers=headers)

    @asynccontextmanager
    async def pooled(self) -> AsyncIterator[None]:
        """Keep one HTTP client, and its connections, for every `open` inside the block.

        A client per call costs a new connection each time (a TLS handshake, through the API
        server's proxy), which a loop asking about every running job every few seconds cannot
        afford; the worker keeps one for as long as it runs.
        """
        async with self._http_client() as http:
            self._pool = http
            try:
                yield
            finally:
                self._pool = None

    def _http_client(self) -> httpx.AsyncClient:
        """An HTTP client for dashboard calls: this connector's TLS settings, traced as it is."""
        verify = self._tls_context()
        return httpx.AsyncClient(transport=self._traced(verify), verify=verify)

    async def _proxy_headers(self) -> dict[str, str]:
        """The worker's own credentials for the API server, asked for each call (they rotate)."""
        headers: dict[str, str] = {}
        for setting in (await self._kube.configuration.auth_settings()).values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers

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
        """Ray's auth token from the cluster's Secret, when token authentication is on.

        Read again once `TOKEN_TTL` has passed since the last read of that Secret.
        """
        if not is_auth_enabled(cluster.spec):
            return None
        name = auth_secret_name(cluster.name, cluster.spec.auth_options)
        key, now = (cluster.namespace, name), time.monotonic()
        kept = self._tokens.get(key)
        if kept is not None and now - kept[0] < TOKEN_TTL:
            return kept[1]
        secret = await self._kube.get_or_none(kube.SECRETS, cluster.namespace, name)
        encoded = ((secret or {}).get("data") or {}).get(AUTH_TOKEN_SECRET_KEY)
        token = base64.b64decode(encoded).decode() if encoded else None
        if len(self._tokens) >= TOKENS_KEPT:
            self._tokens = {k: v for k, v in self._tokens.items() if now - v[0] < TOKEN_TTL}
        self._tokens[key] = (now, token)
        return token


def _ssl_context(configuration: Configuration) -> ssl.SSLContext:
    """The same TLS settings kubernetes_asyncio's own connection uses."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
