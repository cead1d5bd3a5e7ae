"""The `Status` error bodies kube-apiserver answers with, raised as one exception type.

Clients branch on `code`, `reason` and `details` (kubectl prints `message`; client-go's
`errors.IsConflict` reads `reason`), so every failure path builds its body here, from the
same few constructors kube-apiserver's `k8s.io/apimachinery/pkg/api/errors` offers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Cause:
    """One field-level reason inside a 422 Invalid or a 400 BadRequest."""

    reason: str
    message: str
    field: str = ""

    def body(self) -> JsonObject:
        """Return the wire form of the cause."""
        out: JsonObject = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class ApiError(Exception):
    """A request failure that becomes a `Status` body with the given HTTP code."""

    code: int
    reason: str
    message: str
    details: JsonObject | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def body(self) -> JsonObject:
        """Return the `Status` object kube-apiserver would send."""
        out: JsonObject = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.details is not None:
            out["details"] = self.details
        out["code"] = self.code
        return out


def _details(name: str, group: str, kind: str) -> JsonObject:
    details: JsonObject = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = kind
    return details


def qualified(resource: str, group: str) -> str:
    """Return `resource.group`, or just the resource for the core group."""
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    """404 for a missing object, e.g. `pods "x" not found`."""
    return ApiError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    """409 for a create whose name is taken."""
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(group: str, resource: str, name: str) -> ApiError:
    """409 for a write carrying a stale resourceVersion."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": the object has '
        "been modified; please apply your changes to the latest version and try again",
        _details(name, group, resource),
    )


def invalid(group: str, kind: str, name: str, causes: list[Cause]) -> ApiError:
    """422 with one cause per offending field, worded like `field.ErrorList`."""
    texts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details = _details(name, group, kind)
    details["causes"] = [c.body() for c in causes]
    return ApiError(
        422, "Invalid", f'{qualified(kind, group)} "{name}" is invalid: {summary}', details
    )


def bad_request(message: str) -> ApiError:
    """400 for a body or parameter the server cannot make sense of."""
    return ApiError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> ApiError:
    """405 for a verb the resource does not serve."""
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    """415 for a patch type the resource does not accept."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
        None,
    )


def gone(message: str) -> ApiError:
    """410 for a resourceVersion or continue token older than the kept history."""
    return ApiError(410, "Expired", message)


def not_found_path() -> ApiError:
    """404 for a URL that names no resource, as kube-apiserver answers it."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def forbidden_terminating(group: str, resource: str, name: str, namespace: str) -> ApiError:
    """403 for a create inside a namespace that is being deleted."""
    message = (
        f'{qualified(resource, group)} "{name}" is forbidden: unable to create new content in '
        f"namespace {namespace} because it is being terminated"
    )
    details = _details(name, group, resource)
    details["causes"] = [
        {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    return ApiError(403, "Forbidden", message, details)


def success(group: str, resource: str, name: str, uid: str) -> JsonObject:
    """The Success status some deletes return instead of the object."""
    details = _details(name, group, resource)
    details["uid"] = uid
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
