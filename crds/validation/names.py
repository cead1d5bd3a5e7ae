"""Rules about names: object names, label syntax and the `managedBy` field.

KubeRay derives Pod, Service, RayCluster and RayJob names from the names users choose, and
those derived names must be DNS labels of at most 63 characters. The per-kind limits
(RayCluster 53, RayJob and RayService 47, RayCronJob 36) leave room for the suffixes KubeRay
appends. Label keys and values follow Kubernetes' own syntax rules, re-implemented here so that
a bad label is reported before any Pod is created with it.
"""

from __future__ import annotations

import re

from crds.common import RayObject
from crds.constants import (
    MANAGED_BY_ALLOWED,
    MAX_DNS_LABEL_LENGTH,
    MAX_RAYCLUSTER_NAME_LENGTH,
    MAX_RAYCRONJOB_NAME_LENGTH,
    MAX_RAYJOB_NAME_LENGTH,
    MAX_RAYSERVICE_NAME_LENGTH,
)
from crds.messages import quoted
from crds.violations import Violation

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_MAX_SUBDOMAIN_LENGTH = 253

_NAME_LIMITS = {
    "RayCluster": (
        MAX_RAYCLUSTER_NAME_LENGTH,
        "KubeRay names Services after the cluster (the longest is <name>-serve-svc) "
        "and those names must fit in 63 characters",
    ),
    "RayJob": (
        MAX_RAYJOB_NAME_LENGTH,
        "KubeRay appends a 6-character suffix for its RayCluster",
    ),
    "RayService": (
        MAX_RAYSERVICE_NAME_LENGTH,
        "KubeRay appends a 6-character suffix for its RayClusters",
    ),
    "RayCronJob": (
        MAX_RAYCRONJOB_NAME_LENGTH,
        "KubeRay names each RayJob it creates <name>-<minutes since the epoch>, "
        "and that name must fit a RayJob's limit",
    ),
}


def object_name_violations(obj: RayObject) -> list[Violation]:
    """Length limit and DNS-1035 syntax of `metadata.name`.

    An object that has only `generateName` gets its name from the API server, so there is
    nothing to check yet.
    """
    name = obj.metadata.name
    if name is None:
        return []
    found: list[Violation] = []
    limit, reason = _NAME_LIMITS[obj.kind]
    if len(name) > limit:
        message = (
            f"a {obj.kind} name must be at most {limit} characters (got {len(name)}): {reason}"
        )
        found.append(Violation("metadata.name", message))
    if not _DNS1035_LABEL.fullmatch(name):
        message = (
            f"a {obj.kind} name must be a DNS-1035 label: lower-case letters, digits and '-', "
            f"starting with a letter and ending with a letter or digit (got {quoted(name)})"
        )
        found.append(Violation("metadata.name", message))
    return found


def managed_by_violations(value: str | None, path: str) -> list[Violation]:
    """`managedBy` may only name KubeRay itself or Kueue's MultiKueue (a CRD rule)."""
    if value is None or value in MANAGED_BY_ALLOWED:
        return []
    allowed = " or ".join(repr(v) for v in MANAGED_BY_ALLOWED)
    return [Violation(path, f"managedBy must be {allowed} (got {quoted(value)})")]


def dns1123_label_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 label (lower-case, digits, '-', ≤ 63), or None."""
    if len(value) > MAX_DNS_LABEL_LENGTH:
        return f"must be at most {MAX_DNS_LABEL_LENGTH} characters (got {len(value)})"
    if not _DNS1123_LABEL.fullmatch(value):
        return (
            "must be lower-case letters, digits and '-', starting and ending with a letter or digit"
        )
    return None


def dns1035_label_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1035 label (a Service name: starts with a letter), or None."""
    if len(value) > MAX_DNS_LABEL_LENGTH:
        return f"must be at most {MAX_DNS_LABEL_LENGTH} characters (got {len(value)})"
    if not _DNS1035_LABEL.fullmatch(value):
        return (
            "must be lower-case letters, digits and '-', "
            "starting with a letter and ending with a letter or digit"
        )
    return None


def dns1123_subdomain_problem(value: str) -> str | None:
    """Why `value` is not a DNS-1123 subdomain (most object names, e.g. a Secret's), or None."""
    if len(value) > _MAX_SUBDOMAIN_LENGTH:
        return f"must be at most {_MAX_SUBDOMAIN_LENGTH} characters (got {len(value)})"
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        return (
            "must be lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def label_key_problems(key: str) -> list[str]:
    """Why `key` is not a valid label key (`[prefix/]name`), as Kubernetes checks it."""
    prefix, slash, name = key.rpartition("/")
    if slash and "/" in prefix:
        return ["a label key may contain at most one '/'"]
    problems: list[str] = []
    if slash:
        if not prefix:
            problems.append("the prefix before '/' must not be empty")
        elif len(prefix) > _MAX_SUBDOMAIN_LENGTH or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            problems.append("the prefix before '/' must be a DNS subdomain such as example.com")
    if not name:
        problems.append("the name part must not be empty")
    elif len(name) > MAX_DNS_LABEL_LENGTH:
        problems.append(f"the name part must be at most {MAX_DNS_LABEL_LENGTH} characters")
    elif not _QUALIFIED_NAME.fullmatch(name):
        problems.append(_ALNUM_RULE)
    return problems


def label_value_problems(value: str) -> list[str]:
    """Why `value` is not a valid label value (empty is allowed), as Kubernetes checks it."""
    if len(value) > MAX_DNS_LABEL_LENGTH:
        return [f"a label value must be at most {MAX_DNS_LABEL_LENGTH} characters"]
    if value and not _QUALIFIED_NAME.fullmatch(value):
        return [_ALNUM_RULE]
    return []


_ALNUM_RULE = (
    "must consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"
)
