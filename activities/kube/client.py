"""A small JSON client for the Kubernetes REST API, on kubernetes_asyncio's connection.

kubernetes_asyncio brings authentication, TLS and kubeconfig/in-cluster loading; its generated
typed models do not help here (we keep objects as JSON so nothing a user wrote is lost, and CRDs
have no generated models), so this client speaks paths and dicts and turns every failure into
`activities.kube.errors`. Resource paths come from one table, like the API server's own.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException
from opentelemetry.trace import Tracer

from activities.kube import decoding, errors, session
from activities.kube.rate_limit import PROXY, RateLimits, api_type_of
from activities.kube.spans import client_span, default_tracer, kube_path_template
from activities.kube.vocabulary import WatchEventType

JSON = dict[str, Any]

MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"
RETRIES: Final = 10
"""How often a request the server asks to repeat (429, or 5xx with Retry-After) is repeated."""
MAX_RETRY_AFTER: Final = 10.0

# A name as one URL path segment: the characters of every Kubernetes object name (DNS-1123
# subdomains, plus ':' and '_' that RBAC and Event names use) and nothing an HTTP client would
# read as path structure: no '/', '%', '?', '#', and no '.' or '..' segment.
_PATH_SEGMENT = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.:]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the REST API."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """`apiVersion` as written in objects."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        """The collection or object path, with an optional subresource.

        Raises:
            errors.KubeInvalid: If a namespace, name or subresource is not a single valid
                segment. Names often come from a CR (a custom head Service, a Secret); both
                HTTP clients normalise `..`, so `../../b/services/x` would address namespace
                `b`. KubeRay reads by (namespace, name) and cannot be led elsewhere; neither
                can this.
        """
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{path_segment(namespace, 'namespace')}"
        root += f"/{self.plural}"
        if name:
            root += f"/{path_segment(name, f'{self.plural} name')}"
        if sub:
            root += f"/{path_segment(sub, 'subresource')}"
        return root


def path_segment(value: str, what: str) -> str:
    """`value` when it can stand as one segment of a URL path, else `KubeInvalid`."""
    if not _PATH_SEGMENT.fullmatch(value):
        shown = value if len(value) <= 80 else value[:79] + "…"
        raise errors.KubeInvalid(
            f"refusing to address {what} {shown!r}: not a valid Kubernetes object name",
            reason="InvalidName",
        )
    return value


NAMESPACES = Resource("", "v1", "namespaces", namespaced=False)
PODS = Resource("", "v1", "pods")
SERVICES = Resource("", "v1", "services")
EVENTS = Resource("", "v1", "events")
SECRETS = Resource("", "v1", "secrets")
CONFIGMAPS = Resource("", "v1", "configmaps")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts")
PVCS = Resource("", "v1", "persistentvolumeclaims")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "endpointslices")
JOBS = Resource("batch", "v1", "jobs")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies")
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses")
LEASES = Resource("coordination.k8s.io", "v1", "leases")
RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters")
RAYJOBS = Resource("ray.io", "v1", "rayjobs")
RAYSERVICES = Resource("ray.io", "v1", "rayservices")
RAYCRONJOBS = Resource("ray.io", "v1", "raycronjobs")
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "gateways")
HTTPROUTES = Resource("gateway.networking.k8s.io", "v1", "httproutes")
ISSUERS = Resource("cert-manager.io", "v1", "issuers")
CERTIFICATES = Resource("cert-manager.io", "v1", "certificates")
VOLCANO_POD_GROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups")
PLUGINS_POD_GROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups")


async def connect(
    kubeconfig: str | None = None,
    tracer: Tracer | None = None,
    limit: RateLimits | None = None,
) -> KubeClient:
    """A client from a kubeconfig file, else in-cluster configuration, else ~/.kube/config.

    Args:
        kubeconfig: The kubeconfig file; None: in-cluster, else the default file.
        tracer: Makes a span per request made inside a trace (`activities.kube.spans`);
            None: no spans.
        limit: The requests per second it may send of each API type (`rate_limit`); None: no
            limit.
    """
    configuration = Configuration()
    if kubeconfig:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    else:
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            await config.load_kube_config(client_configuration=configuration)
    session.settle_proxy(configuration)
    api = ApiClient(configuration=configuration)
    session.trust_no_environment(api)
    return KubeClient(api, tracer, limit)


class KubeClient:
    """JSON requests against the API server behind an `ApiClient`."""

    def __init__(
        self, api: ApiClient, tracer: Tracer | None = None, limit: RateLimits | None = None
    ) -> None:
        self._api = api
        self._traced_by = tracer
        self._tracer = tracer or default_tracer()
        self._limit = limit

    async def close(self) -> None:
        """Release the connection pool."""
        await self._api.close()

    @property
    def tracer(self) -> Tracer | None:
        """The tracer this client's requests are traced with, for clients built beside it."""
        return self._traced_by

    @property
    def configuration(self) -> Configuration:
        """Where the API server is and how to authenticate (for its service proxy)."""
        configuration: Configuration = self._api.configuration
        return configuration

    async def pace(self, api_type: str = PROXY) -> None:
        """Wait for a turn under the client's limit of `api_type` (`rate_limit`).

        Every request of this client waits so; another client's request to the same API server
        may too: a dashboard call through its service proxy (`PROXY`).
        """
        if self._limit is not None:
            await self._limit.take(api_type)

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        request_timeout: float = 30.0,
    ) -> JSON:
        """Send one request and return the decoded JSON answer.

        An object nested too deep to decode whole comes back in part (`activities.kube.decoding`).

        Raises:
            errors.KubeUndecodable: If the answer is not JSON.
        """
        response = await self._send(method, path, query, body, content_type, request_timeout)
        try:
            raw = await response.read()
        finally:
            response.release()
        data = decoding.decode(raw)
        return data if isinstance(data, dict) else {"value": data}

    async def get(self, resource: Resource, namespace: str | None, name: str) -> JSON:
        """Read one object, making sure it is the one asked for.

        Raises:
            errors.KubeInvalid: If the API server answered with an object of another name or
                namespace (a proxy or server that rewrote the path); nothing of it is returned.
        """
        obj = await self.request("GET", resource.path(namespace, name))
        meta = obj.get("metadata") or {}
        wanted_namespace = namespace if resource.namespaced and namespace else None
        got = (meta.get("namespace") or None, meta.get("name"))
        if got != (wanted_namespace, name):
            raise errors.KubeInvalid(
                f"asked for {resource.plural} {wanted_namespace}/{name}, "
                f"the API server answered with {got[0]}/{got[1]}",
                reason="UnexpectedObject",
            )
        return obj

    async def get_or_none(
        self, resource: Resource, namespace: str | None, name: str
    ) -> JSON | None:
        """Read one object, or None when it does not exist."""
        try:
            return await self.get(resource, namespace, name)
        except errors.KubeNotFound:
            return None

    async def get_same(
        self, resource: Resource, namespace: str, name: str, uid: str
    ) -> JSON | None:
        """Read the object a workflow is for: None when it is gone or re-created under its name.

        A CR deleted and applied again under the same name is another object (another uid),
        with a workflow of its own; the old workflow must not act on it.
        """
        obj = await self.get_or_none(resource, namespace, name)
        if obj is None or obj["metadata"].get("uid") != uid:
            return None
        return obj

    async def list_all(
        self, resource: Resource, namespace: str | None, label_selector: str = ""
    ) -> list[JSON]:
        """List objects (all pages), optionally by label selector."""
        items, _ = await self.list_versioned(resource, namespace, label_selector)
        return items

    async def list_versioned(
        self, resource: Resource, namespace: str | None, label_selector: str = ""
    ) -> tuple[list[JSON], str]:
        """List objects (all pages) and the list's resourceVersion, to watch from."""
        items: list[JSON] = []
        query: dict[str, str | int | bool] = {"limit": 500}
        if label_selector:
            query["labelSelector"] = label_selector
        while True:
            page = await self.request("GET", resource.path(namespace), query=query)
            items += page.get("items") or []
            list_meta = page.get("metadata") or {}
            token = list_meta.get("continue")
            if not token:
                return items, str(list_meta.get("resourceVersion") or "")
            query["continue"] = token

    async def create(self, resource: Resource, namespace: str | None, obj: JSON) -> JSON:
        """Create an object."""
        return await self.request("POST", resource.path(namespace), body=obj)

    async def create_or_get(
        self, resource: Resource, namespace: str | None, obj: JSON
    ) -> tuple[JSON, bool]:
        """Create an object, or return the existing one of that name (idempotent create)."""
        try:
            return await self.create(resource, namespace, obj), True
        except errors.KubeConflict as err:
            if not err.already_exists:
                raise
        return await self.get(resource, namespace, obj["metadata"]["name"]), False

    async def patch(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        sub: str = "",
    ) -> JSON:
        """Patch an object (merge patch unless told otherwise)."""
        path = resource.path(namespace, name, sub)
        return await self.request("PATCH", path, body=patch, content_type=content_type)

    async def delete(
        self,
        resource: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
    ) -> bool:
        """Delete an object; returns False when it was already gone."""
        body: JSON = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        try:
            await self.request("DELETE", resource.path(namespace, name), body=body)
        except errors.KubeNotFound:
            return False
        return True

    async def delete_collection(
        self, resource: Resource, namespace: str, label_selector: str
    ) -> None:
        """Delete every object matching a label selector."""
        path = resource.path(namespace)
        await self.request("DELETE", path, query={"labelSelector": label_selector})

    async def watch(
        self,
        resource: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str = "",
        timeout_seconds: int = 300,
    ) -> AsyncIterator[JSON]:
        """Yield watch events (`{"type", "object"}`) from a resourceVersion, with bookmarks.

        Raises `KubeGone` when the server says the version is too old (the caller re-lists).
        The stream ends normally after `timeout_seconds`; the caller resumes from the last
        version it saw.
        """
        query: dict[str, str | int | bool] = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        if label_selector:
            query["labelSelector"] = label_selector
        response = await self._send(
            "GET", resource.path(namespace), query, None, "application/json", timeout_seconds + 30
        )
        try:
            async for line in response.content:
                if not line.strip():
                    continue
                event = decoding.decode(line)
                if not isinstance(event, dict):  # the stream is off; the caller re-lists
                    raise errors.KubeUndecodable(f"watch of {resource.plural} sent a non-event")
                if event.get("type") == WatchEventType.ERROR:
                    status = event.get("object") or {}
                    raise errors.from_status(int(status.get("code") or 500), json.dumps(status))
                yield event
        except (aiohttp.ClientError, TimeoutError) as err:
            raise errors.KubeUnavailable(f"watch of {resource.plural} broke: {err}") from err
        finally:
            response.release()

    async def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | int | bool] | None,
        body: Any,
        content_type: str,
        request_timeout: float,
    ) -> aiohttp.ClientResponse:
        """Send once, and again as client-go does when the server says when to come back.

        A 429, or a 5xx with Retry-After, was not carried out, so any verb may be repeated;
        up to `RETRIES` times, waiting what Retry-After says (at most `MAX_RETRY_AFTER`).
        """
        for _ in range(RETRIES):
            try:
                return await self._send_once(
                    method, path, query, body, content_type, request_timeout
                )
            except errors.KubeUnavailable as err:
                if err.retry_after is None:
                    raise
                await asyncio.sleep(err.retry_after)
        return await self._send_once(method, path, query, body, content_type, request_timeout)

    async def _send_once(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | int | bool] | None,
        body: Any,
        content_type: str,
        request_timeout: float,
    ) -> aiohttp.ClientResponse:
        await self.pace(api_type_of(path))
        headers = {"Accept": "application/json", "Content-Type": content_type}
        params = [
            (k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items()
        ]
        url = f"{self.configuration.host}{path}"
        with client_span(self._tracer, method, url, headers, kube_path_template(path)) as call:
            try:
                response: aiohttp.ClientResponse = await self._api.call_api(
                    path,
                    method,
                    query_params=params,
                    header_params=headers,
                    body=body,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _request_timeout=request_timeout,
                )
            except ApiException as err:
                if err.status:
                    call.answered(err.status)
                raise _answer_error(err.status or 0, err.body, err.headers or {}) from err
            except (aiohttp.ClientError, TimeoutError, OSError) as err:
                raise errors.KubeUnavailable(f"{method} {path}: {err}") from err
            call.answered(response.status)
            if response.status >= 400:
                # Without preloading, the client leaves the status check to us.
                try:
                    body = await response.read()
                finally:
                    response.release()
                raise _answer_error(response.status, body, response.headers)
        return response


def _answer_error(status: int, body: Any, headers: Mapping[str, str]) -> errors.KubeError:
    """The error for an answer of `status`, saying when to repeat it if the server said so."""
    error = errors.from_status(status, body)
    error.retry_after = retry_after(status, headers)
    return error


def retry_after(status: int, headers: Mapping[str, str]) -> float | None:
    """Seconds to wait before repeating a request, when the answer asks for a repeat.

    As client-go: a 429 or a 5xx with a Retry-After of whole seconds (capped here), else None.
    """
    if status != 429 and status // 100 != 5:
        return None
    value = headers.get("Retry-After", "").strip()
    return min(float(value), MAX_RETRY_AFTER) if value.isdigit() else None
