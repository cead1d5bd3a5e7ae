"""The node's HTTPS client of the real API server: one identity, JSON in and out, watches.

The node authenticates with a client certificate from the control plane's CA (the kubelet as
`system:node:<node>`, its Service networking half as `system:kube-proxy`), so the Node
authorizer, NodeRestriction and RBAC judge it as they would a kubelet and kube-proxy. It is
its own small client rather than the operator's `KubeClient` because devcluster stays
independent of the operator's packages.

Every failure is an `ApiError`: `code` is the HTTP status (0 when the server was not reached),
`retryable` says whether asking again may help (429, 5xx, no connection).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp

JsonObject = dict[str, Any]
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
MERGE_PATCH = "application/merge-patch+json"
_REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
CONNECTIONS = 32
"""Connections one client keeps open to the API server at most; further requests queue."""
_WATCH_SECONDS = 300  # the server ends each watch after this; the informer then resumes


class ApiError(Exception):
    """A request the API server refused, or could not be sent."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code, self.reason, self.message = code, reason, message

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed later (busy, failing or unreachable server)."""
        return self.code in (0, 429) or self.code >= 500


@dataclass(frozen=True)
class Credentials:
    """Where the API server is and who the client is."""

    url: str
    ca: Path
    cert: Path
    key: Path

    def ssl_context(self) -> ssl.SSLContext:
        """TLS that verifies the server against the CA and presents the client certificate."""
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


class Requests(Protocol):
    """One JSON request at a time: what the node's writers need of a client."""

    async def request(
        self,
        method: str,
        path: str,
        body: JsonObject | None = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JsonObject:
        """Send one request; return the decoded answer or raise `ApiError`."""


class NodeClient:
    """JSON requests and watch streams against one API server as one identity."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self._ssl = credentials.ssl_context()
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=CONNECTIONS)
            )
        return self._session

    async def close(self) -> None:
        """Close the connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def request(
        self,
        method: str,
        path: str,
        body: JsonObject | None = None,
        *,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> JsonObject:
        """Send one request; return the decoded answer or raise `ApiError`."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            async with self._http().request(
                method,
                self.credentials.url + path,
                data=data,
                params=params,
                headers=headers,
                timeout=_REQUEST_TIMEOUT,
            ) as response:
                text = await response.text()
                if response.status >= 400:
                    raise _error(response.status, text)
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            raise ApiError(0, "Unavailable", str(err) or type(err).__name__) from err
        answer: JsonObject = json.loads(text) if text else {}
        return answer

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[JsonObject]:
        """Yield the events of one watch (`{"type", "object"}`) until the server ends it."""
        query = {**params, "watch": "true", "timeoutSeconds": str(_WATCH_SECONDS)}
        timeout = aiohttp.ClientTimeout(
            total=None, connect=30, sock_connect=30, sock_read=_WATCH_SECONDS + 30
        )
        try:
            async with self._http().get(
                self.credentials.url + path,
                params=query,
                headers={"Accept": "application/json"},
                timeout=timeout,
            ) as response:
                if response.status >= 400:
                    raise _error(response.status, await response.text())
                # One event per line, of any length (aiohttp's readline caps lines).
                pending = b""
                async for chunk in response.content.iter_any():
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.strip():
                            event: JsonObject = json.loads(line)
                            yield event
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            raise ApiError(0, "Unavailable", str(err) or type(err).__name__) from err


def _error(code: int, text: str) -> ApiError:
    """The `Status` an API server answers with, or the raw text of whatever else did."""
    try:
        status = json.loads(text)
    except ValueError:
        return ApiError(code, "", text[:500])
    if not isinstance(status, dict):
        return ApiError(code, "", text[:500])
    return ApiError(code, str(status.get("reason", "")), str(status.get("message", "")))
