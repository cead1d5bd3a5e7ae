"""Ray version comparisons, read the way KubeRay reads `rayVersion`.

Some features need a minimum Ray release (token auth ≥ 2.52, Kubernetes token auth ≥ 2.55,
worker-group priority ≥ 2.56). KubeRay parses `rayVersion` with Kubernetes' "generic" version
parser: an optional "v", two or more dot-separated numbers (the first without a leading zero),
then anything at all, which is ignored. So "2.52.0rc1" counts as 2.52.0 and "nightly" is an
error. Missing trailing components count as zero ("2.52" equals "2.52.0").
"""

from __future__ import annotations

import re
from itertools import zip_longest

from crds.messages import quoted

# `.` does not match a newline here, as in Go's regexp; \s is ASCII-only there too.
_GENERIC = re.compile(r"\s*v?([0-9]+(?:\.[0-9]+)*)(.*)", re.ASCII)

Version = tuple[int, ...]


def parse_generic(text: str) -> Version | str:
    """The numeric components of `text`, or a message saying why it is not a version."""
    match = _GENERIC.fullmatch(text)
    if match is None:
        return f"{quoted(text)} is not a version number such as 2.52.0"
    parts = match.group(1).split(".")
    if len(parts) < 2:
        return f"{quoted(text)} needs at least a major and a minor number, such as 2.52"
    if parts[0] != "0" and parts[0].startswith("0"):
        return f"{quoted(text)} has a leading zero in its major number"
    return tuple(int(part) for part in parts)


def less_than(version: Version, minimum: Version) -> bool:
    """Compare component by component, missing ones counting as 0."""
    for mine, theirs in zip_longest(version, minimum, fillvalue=0):
        if mine != theirs:
            return mine < theirs
    return False


def render(version: Version) -> str:
    """Render (2, 52, 0) as "2.52.0"."""
    return ".".join(str(part) for part in version)


def minimum_problem(ray_version: str | None, minimum: Version, feature: str) -> str | None:
    """Why `ray_version` does not allow `feature` (which needs `minimum`), or None."""
    wanted = render(minimum)
    if not ray_version:
        return f"{feature} needs Ray {wanted} or later, so rayVersion must be set"
    parsed = parse_generic(ray_version)
    if isinstance(parsed, str):
        return f"{feature} needs Ray {wanted} or later, but rayVersion {parsed}"
    if less_than(parsed, minimum):
        return f"{feature} needs Ray {wanted} or later, got rayVersion {ray_version}"
    return None
