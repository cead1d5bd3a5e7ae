"""An async client for the Ray dashboard's HTTP API: the jobs and Serve calls KubeRay makes.

KubeRay talks to each cluster's head through this API (J7, J26, S4–S6): it submits and tracks
RayJobs, stops them from the finalizer, applies `serveConfigV2` and judges Serve health. This
module speaks the same calls on an injected `httpx.AsyncClient`, so tests drive it through
`httpx.MockTransport`, and follows the Go client's quirks exactly where controllers depend on
them (404 on a job, the duplicate-submission 500, the stop-then-check dance).

Every failure leaves as one of the errors in `activities.dashboard.errors`, translated once
here with the httpx or HTTP cause chained.

The auth token never appears in a message, a repr or a log line: it only ever goes into the
request header, and error messages are scrubbed of it in case a server echoes it back.

Whoever runs a cluster chooses what answers on its dashboard port (the head's image and
command are theirs), and the worker that asks serves every namespace. So an answer is read
within bounds: at most `MAX_ANSWER_BYTES`, uncompressed, within `WHOLE_ANSWER_TIMES` the
per-request timeout for the whole of it (httpx's timeout is per read, so a server sending a
byte a second would hold a call for ever), and JSON nested too deep to decode is a bad answer.
The texts Ray sends (a job's message, a Serve application's) are clipped in
`activities.dashboard.contract`, since they travel into histories and statuses.
"""

from __future__ import annotations

import asyncio
import re
import string
from collections.abc import Mapping
from typing import Any, Final, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from activities.dashboard.contract import (
    JobInfo,
    JobSubmission,
    ServeStatus,
    SubmitResult,
)
from activities.dashboard.errors import (
    DashboardBadResponse,
    DashboardError,
    DashboardRejected,
    DashboardUnauthorized,
    DashboardUnavailable,
    DuplicateSubmission,
    JobNotFound,
    JobNotStopped,
    ProxyDenied,
)

DIRECT_TIMEOUT: Final = 2.0
"""Seconds per request straight to the head Service (KubeRay's client timeout)."""
PROXY_TIMEOUT: Final = 10.0
"""Seconds per request through the API server's service proxy, one hop longer."""

MAX_ANSWER_BYTES: Final = 1024 * 1024
"""The most of one answer read. Ray's answers are KiBs (a Serve status of a hundred
applications some hundred KiB); an activity's result, which holds one, goes into a history,
where Temporal refuses payloads of 2 MB."""
WHOLE_ANSWER_TIMES: Final = 3
"""The whole exchange must end within this many per-request timeouts."""

AUTH_HEADER: Final = "x-ray-authorization"
"""Not `Authorization`: through the API server proxy that header carries Kubernetes' own token."""

_DUPLICATE_MARKER: Final = "Please use a different submission_id"
_TOKEN_CHARS: Final = frozenset(string.ascii_letters + string.digits + string.punctuation)
_SNIPPET: Final = 300
_PYDANTIC_URL: Final = "For further information visit"
_INPUT_VALUE: Final = re.compile(r",\s*input_value=.*?(?=,\s*input_type=|\]$|$)")
_PROXY_PATH: Final = re.compile(r"/api/v1/namespaces/[^/]+/(services|pods)/[^/]+/proxy(/|$)")

PROXY_VERBS: Final[Mapping[str, str]] = {
    "GET": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
"""The RBAC verb the API server checks on `services/proxy` or `pods/proxy` per HTTP method."""

_Model = TypeVar("_Model", bound=BaseModel)


class RayDashboardClient:
    """The dashboard of one Ray cluster, over an injected `httpx.AsyncClient`.

    Args:
        http: The connection pool; shared, never closed here. Bring Kubernetes credentials on
            it when `base_url` goes through the API server proxy.
        base_url: From `activities.dashboard.urls`.
        auth_token: Ray's token when the cluster runs with token authentication.
        timeout: Seconds per request: `DIRECT_TIMEOUT`, or `PROXY_TIMEOUT` through the proxy.

    Raises:
        ValueError: If the token holds characters an HTTP header cannot carry (the message
            does not repeat it).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        base_url: str,
        *,
        auth_token: str | None = None,
        timeout: float = DIRECT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if auth_token is not None and not (auth_token and set(auth_token) <= _TOKEN_CHARS):
            # Checked here because httpx and h11 quote a rejected header value in their errors.
            raise ValueError("the Ray auth token must be non-empty printable ASCII, no spaces")
        self._http = http
        self._base_url = base_url.rstrip("/")
        self._token = auth_token
        self._timeout = timeout
        self._headers = dict(headers or {})
        """Sent with every request: the API server's credentials on the proxy's road."""

    def __repr__(self) -> str:
        auth = "token" if self._token else "none"
        return f"RayDashboardClient({self._base_url!r}, auth={auth}, timeout={self._timeout})"

    # --- Jobs -----------------------------------------------------------------------------

    async def submit_job(self, submission: JobSubmission) -> SubmitResult:
        """Submit a job under the caller's submission id, exactly once.

        A duplicate id means an earlier attempt already submitted it, so it is reported as
        `duplicate=True` rather than raised: retrying a submission is always safe.
        """
        try:
            await self._request("POST", "/api/jobs/", body=submission.to_wire())
        except DuplicateSubmission:
            return SubmitResult(submission_id=submission.submission_id, duplicate=True)
        return SubmitResult(submission_id=submission.submission_id)

    async def job_info(self, submission_id: str) -> JobInfo:
        """The job's current status and times.

        Raises:
            JobNotFound: Ray has no such job (never submitted, or lost with a head without FT).
        """
        data = await self._request("GET", _job_path(submission_id), not_found=JobNotFound)
        return _parse(JobInfo, data, "job info")

    async def list_jobs(self) -> list[JobInfo]:
        """Every job the cluster knows, submitted ones and plain drivers (404: none)."""
        data = await self._request("GET", "/api/jobs/", not_found=None)
        if data is None:
            return []
        if not isinstance(data, list):
            raise DashboardBadResponse(f"job list: expected a JSON array, got {_kind(data)}")
        return [_parse(JobInfo, item, "job list entry") for item in data]

    async def job_logs(self, submission_id: str) -> str:
        """The job driver's whole log so far ("" if Ray has no such job)."""
        data = await self._request("GET", _job_path(submission_id, "/logs"), not_found=None)
        if data is None:
            return ""
        logs = data.get("logs") if isinstance(data, dict) else None
        if not isinstance(logs, str):
            raise DashboardBadResponse(f"job logs: expected {{'logs': str}}, got {_kind(data)}")
        return logs

    async def stop_job(self, submission_id: str) -> bool:
        """Ask Ray to stop a job, with KubeRay's semantics.

        Returns:
            True if Ray accepted the stop (the job becomes STOPPED shortly), False if it
            declined because the job had already finished.

        Raises:
            JobNotFound: Ray has no such job.
            JobNotStopped: Ray declined, yet the job is still not terminal.
        """
        path = _job_path(submission_id, "/stop")
        data = await self._request("POST", path, not_found=JobNotFound)
        stopped = data.get("stopped") if isinstance(data, dict) else None
        if not isinstance(stopped, bool):
            raise DashboardBadResponse(f"stop job: expected {{'stopped': bool}}, got {_kind(data)}")
        if stopped:
            return True
        info = await self.job_info(submission_id)
        if not info.is_terminal:
            raise JobNotStopped(
                f"Ray did not stop job {submission_id!r}, still {info.status}", info.status
            )
        return False

    # --- Serve ----------------------------------------------------------------------------

    async def put_serve_applications(
        self, config: Mapping[str, Any], target_capacity: int | None = None
    ) -> None:
        """Apply a Serve config (serveConfigV2 as a dict); idempotent, any 2xx is success.

        Args:
            config: The ServeDeploySchema document.
            target_capacity: Percent of capacity during an incremental upgrade (S14); replaces
                any `target_capacity` in `config` when given.
        """
        body = dict(config)
        if target_capacity is not None:
            body["target_capacity"] = target_capacity
        await self._request("PUT", "/api/serve/applications/", body=body, expect_json=False)

    async def serve_applications(self) -> ServeStatus:
        """Status of every Serve application and deployment (the declarative API's view)."""
        return _parse(ServeStatus, await self._serve_details(), "serve status")

    async def deployed_serve_config(self) -> dict[str, Any] | None:
        """The Serve config the cluster runs, as Ray recorded it; None when it runs none.

        Each application's `deployed_app_config` with the instance's `proxy_location` and
        `http_options`: a document `put_serve_applications` takes back as it is.
        """
        data = await self._serve_details()
        apps = data.get("applications") if isinstance(data, dict) else None
        if not isinstance(apps, dict):
            raise DashboardBadResponse("serve status: no applications map")
        deployed = [a.get("deployed_app_config") for a in apps.values() if isinstance(a, dict)]
        configs = [c for c in deployed if isinstance(c, dict)]
        if not configs:
            return None
        config: dict[str, Any] = {"applications": configs}
        for key in ("proxy_location", "http_options"):
            if data.get(key):
                config[key] = data[key]
        return config

    async def _serve_details(self) -> Any:
        """Serve's instance details as the declarative API answers them (decoded JSON)."""
        return await self._request(
            "GET", "/api/serve/applications/", params={"api_type": "declarative"}
        )

    async def serve_proxy_healthy(self, serve_base_url: str) -> bool:
        """Whether the Serve proxy at `serve_base_url` (the serve port, not the dashboard) is up.

        Any failure, including no answer at all, counts as unhealthy, as in KubeRay (S6).
        """
        url = f"{serve_base_url.rstrip('/')}/-/healthz"
        return await self._probe(url, needs_auth=False) is not None

    async def gcs_healthy(self) -> bool:
        """Whether the head answers `/api/gcs_healthz` with "success" (any failure: False)."""
        body = await self._probe(f"{self._base_url}/api/gcs_healthz", needs_auth=True)
        return body is not None and "success" in body

    # --- Transport ------------------------------------------------------------------------

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        not_found: type[DashboardError] | None = DashboardRejected,
        expect_json: bool = True,
    ) -> Any:
        """Send one request; decoded JSON back, None for a tolerated 404, else our errors.

        Args:
            method: HTTP method.
            path: Path under the base URL.
            body: JSON request body, if any.
            params: Query parameters.
            not_found: The error a 404 raises; None makes a 404 return None.
            expect_json: Whether a 2xx must carry JSON (the PUT answers with an empty body).
        """
        what = f"{method} {path}"
        response = await self._send(method, f"{self._base_url}{path}", what, body, params, True)
        if response.is_success:
            return self._decode(response, what) if expect_json else None
        if response.status_code == 404 and not _is_kubernetes_status(response):
            if not_found is None:
                return None
            raise not_found(self._describe(what, response), status=404)
        raise self._error_for(what, response)

    async def _probe(self, url: str, *, needs_auth: bool) -> str | None:
        """GET a health endpoint; its body on a 2xx, None on any failure."""
        try:
            response = await self._send("GET", url, "GET health", None, None, needs_auth)
        except DashboardError:
            return None
        return response.text if response.is_success else None

    async def _send(
        self,
        method: str,
        url: str,
        what: str,
        body: Any,
        params: Mapping[str, str] | None,
        needs_auth: bool,
    ) -> httpx.Response:
        # Uncompressed: the bound is on what is held, and a small gzip can hold a great deal.
        headers = {**self._headers, "Accept": "application/json", "Accept-Encoding": "identity"}
        if needs_auth and self._token:
            headers[AUTH_HEADER] = f"Bearer {self._token}"
        request = self._http.build_request(
            method, url, json=body, params=params, headers=headers, timeout=self._timeout
        )
        whole = self._timeout * WHOLE_ANSWER_TIMES
        try:
            async with asyncio.timeout(whole):
                return await self._read(request, what)
        except TimeoutError as err:
            raise DashboardUnavailable(f"{what}: no whole answer within {whole:g}s") from err
        except httpx.TimeoutException as err:
            raise DashboardUnavailable(f"{what}: no answer within {self._timeout}s") from err
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as err:
            # A wrong base URL will not fix itself: not "unavailable", so no retry loop.
            raise DashboardError(f"{what}: bad dashboard URL {self._base_url!r}: {err}") from err
        except httpx.TransportError as err:
            raise DashboardUnavailable(self._scrub(f"{what}: {type(err).__name__}: {err}")) from err
        except httpx.HTTPError as err:
            raise DashboardBadResponse(self._scrub(f"{what}: {err}")) from err

    async def _read(self, request: httpx.Request, what: str) -> httpx.Response:
        """Send `request` and read its answer, refusing one beyond `MAX_ANSWER_BYTES`."""
        response = await self._http.send(request, stream=True)
        too_large = DashboardBadResponse(
            f"{what}: an answer larger than {MAX_ANSWER_BYTES} bytes is not read",
            status=response.status_code,
        )
        try:
            # A transport that holds the answer already (a test's) has no stream left to read.
            held = response.is_stream_consumed
            content = bytearray(response.content if held else b"")
            if not held:
                async for chunk in response.aiter_raw():
                    content += chunk
                    if len(content) > MAX_ANSWER_BYTES:
                        raise too_large
        finally:
            await response.aclose()
        if len(content) > MAX_ANSWER_BYTES:
            raise too_large
        # The bytes as they came: a server that compressed them anyway gets no JSON read.
        kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _FRAMING]
        return httpx.Response(
            response.status_code, headers=kept, content=bytes(content), request=request
        )

    def _decode(self, response: httpx.Response, what: str) -> Any:
        try:
            return _json(response)
        except ValueError as err:
            raise DashboardBadResponse(
                self._describe(f"{what}: not JSON", response), status=response.status_code
            ) from err

    def _error_for(self, what: str, response: httpx.Response) -> DashboardError:
        status = response.status_code
        message = self._describe(what, response)
        if status == 500 and _DUPLICATE_MARKER in response.text:
            return DuplicateSubmission(message, status=status)
        if status in (401, 403):
            if _is_kubernetes_status(response):
                return ProxyDenied(self._scrub(_proxy_denial(what, response)), status=status)
            return DashboardUnauthorized(message, status=status)
        if status >= 500 or status in (408, 429) or status == 404:
            # 404 here is the API server saying the Service or its proxy target is missing.
            return DashboardUnavailable(message, status=status)
        return DashboardRejected(message, status=status)

    def _describe(self, what: str, response: httpx.Response) -> str:
        return self._scrub(f"{what}: {response.status_code} {_snippet(response.text)}")

    def _scrub(self, message: str) -> str:
        return message.replace(self._token, "<token>") if self._token else message


_FRAMING: Final = frozenset({"content-encoding", "content-length", "transfer-encoding"})
"""Headers about how the body was sent, which no longer apply to the bytes kept."""


def _json(response: httpx.Response) -> Any:
    """The decoded body; ValueError for one that is not JSON or too deeply nested to decode."""
    try:
        return response.json()
    except RecursionError:
        raise ValueError("nested too deeply to decode") from None


def _job_path(submission_id: str, suffix: str = "") -> str:
    # Quoted whole so an id can never step into another path (say, "x/stop").
    return f"/api/jobs/{quote(submission_id, safe='')}{suffix}"


def _is_kubernetes_status(response: httpx.Response) -> bool:
    """Whether an error came from the API server's proxy rather than from Ray.

    The proxy passes Ray's answers through untouched, and Ray never sends a Kubernetes
    `Status` object: one means the API server answered for itself (the Service is missing, or
    the worker may not use the proxy), which says nothing about the job or Ray's token.
    """
    try:
        data = _json(response)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == "Status"


def _proxy_denial(what: str, response: httpx.Response) -> str:
    """Which rule the worker's account lacks, for an operator to add (or to switch to direct)."""
    method, path = response.request.method, response.request.url.path
    found = _PROXY_PATH.search(path)
    subresource = f"{found.group(1) if found else 'services'}/proxy"
    detail = str(_json(response).get("message") or "")  # a `Status`: see the caller
    if response.status_code == 401:
        cause = "the Kubernetes API server refused the worker's credentials"
    else:
        cause = (
            f"the worker's Kubernetes account may not {PROXY_VERBS.get(method, method.lower())} "
            f"{subresource} (a missing RBAC rule, not a Ray token problem)"
        )
    return f"{what}: {response.status_code}: {cause}: {_snippet(detail)}"


def _snippet(text: str) -> str:
    """The useful part of an error body, without values we sent.

    Ray sends whole tracebacks and pydantic reports, whose last meaningful line says what went
    wrong; pydantic's `input_value=` would echo our request back (env vars included), so it goes.
    """
    lines = [line.strip() for line in text.splitlines()]
    meaningful = [line for line in lines if len(line) > 1 and not line.startswith(_PYDANTIC_URL)]
    tail = _INPUT_VALUE.sub("", meaningful[-1]) if meaningful else ""
    return tail if len(tail) <= _SNIPPET else tail[: _SNIPPET - 1] + "…"


def _kind(data: Any) -> str:
    return "nothing" if data is None else type(data).__name__


def _parse(model: type[_Model], data: Any, what: str) -> _Model:
    """Validate a decoded answer; errors name the fields, never echo the values."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
            for e in err.errors(include_input=False, include_url=False)
        )
        raise DashboardBadResponse(f"{what}: unexpected shape: {problems}") from err
