"""Our Kubernetes API error hierarchy, translated once at the client boundary.

    KubeError
    ├── KubeUnavailable      connection refused, timeouts, 5xx, 429: retry later
    │   └── KubeUndecodable  an answer that is not JSON (a proxy's page, a cut stream)
    └── KubeRejected         the API server answered no
        ├── KubeNotFound     404
        ├── KubeConflict     409 (a stale resourceVersion, or AlreadyExists)
        ├── KubeGone         410: a watch resourceVersion too old; re-list
        ├── KubeInvalid      400 / 422: the object itself is wrong
        └── KubeForbidden    401 / 403

Callers catch at the level they care about; the original exception is kept as the cause. The
API server's own message is carried, never the request body (which may hold secrets).
"""

from __future__ import annotations

import json

NAMESPACE_TERMINATING = "NamespaceTerminating"
"""The cause of a 403 for a create in a namespace that is being deleted (NamespaceLifecycle)."""


class KubeError(Exception):
    """Any failure talking to the Kubernetes API."""

    def __init__(
        self, message: str, status: int = 0, reason: str = "", api_message: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.api_message = message if api_message is None else api_message
        """The API server's own message, as Go's client prints a refusal (no status code)."""
        self.retry_after: float | None = None  # seconds the server asked us to wait, if any
        self.causes: tuple[str, ...] = ()
        """The reasons in the Status's `details.causes`, such as `NamespaceTerminating`."""


class KubeUnavailable(KubeError):
    """The API could not be reached or asked us to come back later."""


class KubeUndecodable(KubeUnavailable):
    """The answer was not JSON: nothing of it can be used, a later answer may be whole.

    Objects nested too deep are not this: `activities.kube.decoding` decodes those in part.
    """


class KubeRejected(KubeError):
    """The API answered with an error about the request."""


class KubeNotFound(KubeRejected):
    """404."""


class KubeConflict(KubeRejected):
    """409: AlreadyExists, or a resourceVersion precondition failed."""

    @property
    def already_exists(self) -> bool:
        """Whether the object exists (as opposed to a stale update)."""
        return self.reason == "AlreadyExists"


class KubeGone(KubeRejected):
    """410: the requested resourceVersion is no longer in the watch history."""


class KubeInvalid(KubeRejected):
    """400 or 422: the object or request is malformed."""


class KubeForbidden(KubeRejected):
    """401 or 403."""


_BY_STATUS: dict[int, type[KubeError]] = {
    400: KubeInvalid,
    401: KubeForbidden,
    403: KubeForbidden,
    404: KubeNotFound,
    409: KubeConflict,
    410: KubeGone,
    422: KubeInvalid,
}


def from_status(status: int, body: str | bytes | None) -> KubeError:
    """Build the error for an HTTP status and the API server's Status body."""
    message, reason, causes = _parse_status_body(body)
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = KubeUnavailable if status >= 500 or status == 429 else KubeRejected
    text = f"{status} {reason or 'Error'}: {message}"
    error = kind(text, status=status, reason=reason, api_message=message)
    error.causes = causes
    return error


def _parse_status_body(body: str | bytes | None) -> tuple[str, str, tuple[str, ...]]:
    if not body:
        return "", "", ()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        return text[:200], "", ()
    if not isinstance(data, dict):
        return str(data)[:200], "", ()
    details = data.get("details")
    listed = details.get("causes") if isinstance(details, dict) else None
    causes = tuple(
        str(c["reason"])
        for c in (listed if isinstance(listed, list) else ())
        if isinstance(c, dict) and c.get("reason")
    )
    return str(data.get("message", "")), str(data.get("reason", "")), causes
